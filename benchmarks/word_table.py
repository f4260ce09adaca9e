"""Word-level QE on MLQE-PE (issue 32): train the word tagger (``qe.wordmodel``) on each pair's
train split, choose each kind's BAD threshold on dev (maximum MCC) and print DEV figures only: MCC
and F1-MULT (with F1-OK, F1-BAD and 95% bootstrap intervals over sentences) for MT words
(``target``), gaps and source words; beside them MCC and F1-MULT at the untuned threshold 0.5 and at
the threshold that maximises F1-MULT on dev; and the timings (features: fitting on train and
extracting train and dev; training: the three classifiers, their iteration counts chosen on held-out
training sentences; prediction: dev tags per second). test20 is not read. One JSON dict on stdout.
The NMT model's log-probabilities (``qe.wordmodel.nmtprobs``, MLQE-PE's ``word-probas`` files) are
features unless ``--no-nmt``; each pair's entry says whether they were used and how well their pieces
matched the word-level MT (``nmt_mapping``, train and dev).

    OMP_NUM_THREADS=1 python benchmarks/word_table.py [--pairs en-de,en-zh] [--data-dir DIR] [--seed 0]
        [--no-nmt]

The dev figures at the dev-chosen threshold are optimistic by what that one choice fits dev.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from qe.evaluation.wordmetrics import bootstrap_intervals, word_scores
from qe.wordmodel.features import KINDS, WordFeaturizer, tag_labels
from qe.wordmodel.nmtprobs import load_word_logprobs
from qe.wordmodel.tagger import WordTagger, best_threshold
from qe.words.files import load_word_level
from qe.words.tags import BAD, OK


def _figures(gold: list, pred: list, seed: int) -> dict:
    """The four figures and their 95% bootstrap intervals (1000 resamples of sentences)."""
    scores = word_scores(gold, pred)
    intervals = bootstrap_intervals(gold, pred, samples=1000, seed=seed)
    out = {name: round(value, 4) for name, value in scores.as_dict().items() if name != "tags"}
    out["ci95"] = {name: [round(lo, 4), round(hi, 4)] for name, (lo, hi) in intervals.items()}
    return out


def _lines(tables, kind: str, bad) -> list[list[str]]:
    """Flat BAD flags of one kind cut back into sentences of OK / BAD tags."""
    return [[BAD if b else OK for b in line] for line in tables.sentences(kind, bad)]


def _at(tables, kind: str, gold: list, probability, threshold: float) -> dict:
    """MCC and F1-MULT when rows with probability >= ``threshold`` are tagged BAD."""
    scores = word_scores(gold, _lines(tables, kind, probability >= threshold))
    return {
        "threshold": round(threshold, 4),
        "mcc": round(scores.mcc, 4),
        "f1_mult": round(scores.f1_mult, 4),
    }


def run_pair(pair: str, data_dir: str | None, seed: int, nmt: bool = True) -> dict:
    """Train on train, threshold on dev, score dev: one pair's entry of the table (with the NMT
    log-probability features unless ``nmt`` is False)."""
    train, dev = load_word_level(pair, "train", data_dir), load_word_level(pair, "dev", data_dir)
    started = time.perf_counter()
    train_nmt = load_word_logprobs(pair, "train", train.mt, data_dir) if nmt else None
    dev_nmt = load_word_logprobs(pair, "dev", dev.mt, data_dir) if nmt else None
    featurizer = WordFeaturizer(seed=seed)
    train_tables = featurizer.fit_transform(train, train_nmt)
    dev_tables = featurizer.transform(dev, dev_nmt)
    features_s = time.perf_counter() - started
    started = time.perf_counter()
    tagger = WordTagger(seed=seed).fit(train_tables, tag_labels(train))
    training_s = time.perf_counter() - started
    dev_bad = tag_labels(dev)
    started = time.perf_counter()
    probability = tagger.bad_probability(dev_tables)
    predict_s = time.perf_counter() - started
    tagger.choose_thresholds(dev_tables, dev_bad, "mcc")
    predicted = tagger.predict(dev_tables)
    out: dict = {"split": "dev", "threshold_chosen_on": "dev (max MCC)", "nmt_features": nmt}
    if train_nmt is not None and dev_nmt is not None:
        out["nmt_mapping"] = {"train": train_nmt.stats.as_dict(), "dev": dev_nmt.stats.as_dict()}
    for kind in KINDS:
        gold = _lines(dev_tables, kind, dev_bad[kind])
        by_f1_mult, _ = best_threshold(dev_bad[kind], probability[kind], "f1_mult")
        out[kind] = {
            **_figures(gold, _lines(dev_tables, kind, predicted[kind]), seed),
            "threshold": round(tagger.thresholds_[kind], 4),
            "iterations": tagger.iterations_[kind],
            "at_0.5": _at(dev_tables, kind, gold, probability[kind], 0.5),
            "at_max_f1_mult_on_dev": _at(dev_tables, kind, gold, probability[kind], by_f1_mult),
        }
    tags = sum(len(dev_bad[kind]) for kind in KINDS)
    out["timings"] = {
        "features_s": round(features_s, 2),
        "training_s": round(training_s, 2),
        "predict_tags_per_s": round(tags / predict_s),
        "train_sentences": len(train),
        "dev_tags": tags,
    }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", default="en-de,en-zh", help="comma-separated MLQE-PE pairs")
    parser.add_argument("--data-dir")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-nmt", action="store_true", help="without the NMT log-probability features")
    args = parser.parse_args()
    result = {
        pair: run_pair(pair, args.data_dir, args.seed, not args.no_nmt) for pair in args.pairs.split(",")
    }
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
