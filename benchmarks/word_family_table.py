"""Word feature families on MLQE-PE dev (issue 32, build item 2): the core + NMT features alone, each
further family added alone, and all of them together; per configuration the dev MCC and F1-MULT of MT
words, gaps and source words (threshold chosen on dev for maximum MCC, as ``word_table.py``), the
seconds each family's features took (fitting on train with its cross-fitting, extracting train and
dev) and the seconds the three classifiers took to train. test20 is not read. One JSON dict on stdout
(and in ``--save``).

    OMP_NUM_THREADS=1 python benchmarks/word_family_table.py [--pairs en-de,en-zh] [--no-nmt]
        [--families lm,lmclass,spelling,mismatch,pseudoref,edits,sentence] [--only +lmclass,+all]
        [--save FILE]

The featurizer is fitted once per pair with every family; a configuration's tables are the core (and
NMT) columns with its families' columns beside them, which is what a featurizer fitted with only those
families makes (each family reads the data and the shared IBM1 links and folds, never another family's
columns; ``tests/test_word_families.py`` checks it). A family that refuses a pair (no dictionary, no
Apertium pair) is left out of that pair's configurations, with its one-line reason.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402

from benchmarks.word_table import _lines  # noqa: E402
from qe.evaluation.wordmetrics import word_scores  # noqa: E402
from qe.wordmodel.families import FAMILIES, refusal, resolve  # noqa: E402
from qe.wordmodel.features import KINDS, FeatureTables, WordFeaturizer, column_names, tag_labels  # noqa: E402
from qe.wordmodel.nmtprobs import load_word_logprobs  # noqa: E402
from qe.wordmodel.tagger import WordTagger  # noqa: E402
from qe.words.files import load_word_level  # noqa: E402


def timed(family, seconds: dict):
    """``family`` whose fit and transform add their seconds to ``seconds[family.name]``."""

    def fit(inp):
        started = time.perf_counter()
        try:
            return family.fit(inp)
        finally:
            seconds[family.name] = seconds.get(family.name, 0.0) + time.perf_counter() - started

    def transform(state, inp):
        started = time.perf_counter()
        try:
            return family.transform(state, inp)
        finally:
            seconds[family.name] = seconds.get(family.name, 0.0) + time.perf_counter() - started

    return dataclasses.replace(family, fit=fit, transform=transform)


def columns_of(tables: FeatureTables, keep: dict[str, np.ndarray]) -> FeatureTables:
    return FeatureTables({kind: tables.tables[kind][:, keep[kind]] for kind in KINDS}, tables.lengths)


def score(train: FeatureTables, dev: FeatureTables, train_bad, dev_bad, seed: int) -> dict:
    started = time.perf_counter()
    tagger = WordTagger(seed=seed).fit(train, train_bad)
    out: dict = {"training_s": round(time.perf_counter() - started, 1)}
    tagger.choose_thresholds(dev, dev_bad, "mcc")
    predicted = tagger.predict(dev)
    for kind in KINDS:
        s = word_scores(_lines(dev, kind, dev_bad[kind]), _lines(dev, kind, predicted[kind]))
        out[kind] = {
            "mcc": round(s.mcc, 4),
            "f1_mult": round(s.f1_mult, 4),
            "iterations": tagger.iterations_[kind],
        }
    return out


def run_pair(
    pair: str, names: list[str], data_dir: str | None, seed: int, nmt: bool, only: list[str] | None = None
) -> dict:
    src_lang, tgt_lang = pair.split("-")
    train, dev = load_word_level(pair, "train", data_dir), load_word_level(pair, "dev", data_dir)
    started = time.perf_counter()
    train_nmt = load_word_logprobs(pair, "train", train.mt, data_dir) if nmt else None
    dev_nmt = load_word_logprobs(pair, "dev", dev.mt, data_dir) if nmt else None
    refused = {}
    usable = []
    for family in resolve(["core", *(["nmt"] if nmt else []), *names], nmt):
        problem = refusal((family,), src_lang, tgt_lang)
        if problem is None:
            usable.append(family)
        else:
            refused[family.name] = problem
    seconds: dict[str, float] = {}
    featurizer = WordFeaturizer(
        seed=seed, families=tuple(timed(f, seconds) for f in usable), languages=(src_lang, tgt_lang)
    )
    train_tables = featurizer.fit_transform(train, train_nmt)
    dev_tables = featurizer.transform(dev, dev_nmt)
    total_s = time.perf_counter() - started
    seconds = {name: round(value, 1) for name, value in seconds.items()}
    base_s = round(total_s - sum(seconds.values()), 1)
    train_bad, dev_bad = tag_labels(train), tag_labels(dev)
    base = {kind: len(column_names(kind, nmt)) for kind in KINDS}
    spans, start = {}, dict(base)
    for family in usable:
        spans[family.name] = {}
        for kind in KINDS:
            width = len(family.names(kind))
            spans[family.name][kind] = np.arange(start[kind], start[kind] + width)
            start[kind] += width

    def keep(chosen: list[str]) -> dict[str, np.ndarray]:
        return {
            kind: np.concatenate([np.arange(base[kind]), *(spans[name][kind] for name in chosen)]).astype(int)
            for kind in KINDS
        }

    configs = {"core+nmt" if nmt else "core": []}
    configs |= {f"+{family.name}": [family.name] for family in usable}
    if len(usable) > 1:
        configs["+all"] = [family.name for family in usable]
    out: dict = {
        "nmt_features": nmt,
        "refused": refused,
        "features_s": {"core+nmt" if nmt else "core": base_s, **seconds},
        "columns": {name: {kind: len(spans[name][kind]) for kind in KINDS} for name in spans},
        "configs": {},
    }
    for label, chosen in configs.items():
        if only and label not in only:
            continue
        k = keep(chosen)
        out["configs"][label] = score(
            columns_of(train_tables, k), columns_of(dev_tables, k), train_bad, dev_bad, seed
        )
        print(pair, label, json.dumps(out["configs"][label]), file=sys.stderr, flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", default="en-de,en-zh")
    parser.add_argument("--families", default=",".join(FAMILIES))
    parser.add_argument("--data-dir")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-nmt", action="store_true")
    parser.add_argument("--save", type=Path)
    parser.add_argument("--only", help="comma-separated configurations to train (core+nmt, +lm, +all, ...)")
    args = parser.parse_args()
    names = [name for name in args.families.split(",") if name]
    result = {}
    for pair in args.pairs.split(","):
        only = args.only.split(",") if args.only else None
        result[pair] = run_pair(pair, names, args.data_dir, args.seed, not args.no_nmt, only)
        if args.save is not None:
            args.save.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
