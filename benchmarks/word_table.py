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
        [--no-nmt] [--learner hgb|crf|auto]

``--learner`` is the tagger's (``qe.wordmodel.tagger``): gradient boosting (default), the linear-chain
CRF, or both with each kind's learner chosen on dev (max MCC at each learner's own dev threshold); each
kind's entry then says which learner it uses, and ``learners`` gives every fitted learner's dev MCC and
F1-MULT at its own MCC-chosen threshold and its training seconds.

The dev figures at the dev-chosen threshold are optimistic by what that one choice fits dev.

The test20 table (issue 32's must-show) comes from the command line itself: ``--test20 --save FILE``
runs ``qe run configs/mlqe/<pair>-words.toml`` for each pair (train on train, thresholds on dev, test20
scored once at the end; resumable: a pair already in FILE is kept) and records each run's metrics.json
(dev and test20 figures, thresholds, signature, training time); ``--from FILE`` prints the record's
test20 figures as one JSON dict ``{pair: {"target": {"mcc", "f1_mult"}, "gaps": {...}, "source":
{...}}}``.

    OMP_NUM_THREADS=1 python benchmarks/word_table.py --test20 --pairs all --save docs/word-table.json
    python benchmarks/word_table.py --from docs/word-table.json

``--variant tokenhead`` runs ``configs/mlqe/<pair>-words-tokenhead.toml`` instead (the same choices
plus issue 34's e5 token head, the ``tokenhead`` family: about an hour a pair on 2 cores), for the
word-level rows with the token head added (``--save docs/word-table-tokenhead.json``).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from qe.evaluation.wordmetrics import (  # noqa: E402
    best_threshold,
    bootstrap_intervals,
    word_scores,
)
from qe.wordmodel.features import KINDS, WordFeaturizer, tag_labels  # noqa: E402
from qe.wordmodel.nmtprobs import load_word_logprobs  # noqa: E402
from qe.wordmodel.tagger import WordTagger  # noqa: E402
from qe.words.files import load_word_level  # noqa: E402
from qe.words.tags import BAD, OK  # noqa: E402

PAIRS = ("en-de", "en-zh", "et-en", "ne-en", "ro-en", "ru-en", "si-en")


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


def run_pair(pair: str, data_dir: str | None, seed: int, nmt: bool = True, learner: str = "hgb") -> dict:
    """Train on train, threshold on dev, score dev: one pair's entry of the table (with the NMT
    log-probability features unless ``nmt`` is False; ``learner`` the tagger's)."""
    train, dev = load_word_level(pair, "train", data_dir), load_word_level(pair, "dev", data_dir)
    started = time.perf_counter()
    train_nmt = load_word_logprobs(pair, "train", train.mt, data_dir) if nmt else None
    dev_nmt = load_word_logprobs(pair, "dev", dev.mt, data_dir) if nmt else None
    featurizer = WordFeaturizer(seed=seed)
    train_tables = featurizer.fit_transform(train, train_nmt)
    dev_tables = featurizer.transform(dev, dev_nmt)
    features_s = time.perf_counter() - started
    started = time.perf_counter()
    tagger = WordTagger(seed=seed, learner=learner).fit(train_tables, tag_labels(train))
    training_s = time.perf_counter() - started
    dev_bad = tag_labels(dev)
    tagger.choose_thresholds(dev_tables, dev_bad, "mcc")
    started = time.perf_counter()
    probability = tagger.bad_probability(dev_tables)
    predict_s = time.perf_counter() - started
    predicted = tagger.predict(dev_tables)
    out: dict = {
        "split": "dev",
        "threshold_chosen_on": "dev (max MCC)",
        "nmt_features": nmt,
        "learner": learner,
    }
    if train_nmt is not None and dev_nmt is not None:
        out["nmt_mapping"] = {"train": train_nmt.stats.as_dict(), "dev": dev_nmt.stats.as_dict()}
    for kind in KINDS:
        gold = _lines(dev_tables, kind, dev_bad[kind])
        by_f1_mult, _ = best_threshold(dev_bad[kind], probability[kind], "f1_mult")
        out[kind] = {
            **_figures(gold, _lines(dev_tables, kind, predicted[kind]), seed),
            "threshold": round(tagger.thresholds_[kind], 4),
            "learner": tagger.learners_[kind],
            "iterations": tagger.iterations_.get(kind),
            "crf_l2": tagger.l2_.get(kind),
            "learners": _learners(tagger, kind, dev_tables, gold),
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


def _learners(tagger: WordTagger, kind: str, dev_tables, gold: list) -> dict:
    """Each fitted learner's dev MCC and F1-MULT at its own MCC-chosen dev threshold, and its training s."""
    out = {}
    for learner, figures in tagger.candidates_[kind].items():
        probability = tagger.learner_probability(kind, learner, dev_tables)
        entry = _at(dev_tables, kind, gold, probability, figures["threshold"])
        out[learner] = {**entry, "training_s": round(tagger.fit_seconds_[kind][learner], 2)}
    return out


def test20_record(pairs: list[str], save: Path, data_dir: str | None, variant: str = "") -> dict:
    """Each pair's ``qe run configs/mlqe/<pair>-words[-<variant>].toml`` metrics, saved to ``save`` after
    each pair."""
    from qe.run.words import run_words

    record = json.loads(save.read_text()) if save.is_file() else {}
    for pair in pairs:
        if pair in record:
            continue
        with tempfile.TemporaryDirectory() as folder:
            started = time.perf_counter()
            metrics = run_words(
                REPO / "configs" / "mlqe" / f"{pair}-words{'-' * bool(variant)}{variant}.toml",
                Path(folder) / "run",
                data_dir=data_dir,
            )
            metrics["wall_s"] = round(time.perf_counter() - started, 1)
        record[pair] = metrics
        save.write_text(json.dumps(record, indent=1) + "\n")
    return record


def test20_table(record: dict) -> dict:
    """The test20 MCC and F1-MULT of each pair and kind."""
    return {
        pair: {
            kind: {key: round(entry["test"][kind][key], 4) for key in ("mcc", "f1_mult")} for kind in KINDS
        }
        for pair, entry in record.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", default="en-de,en-zh", help="comma-separated MLQE-PE pairs, or all")
    parser.add_argument("--data-dir")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-nmt", action="store_true", help="without the NMT log-probability features")
    parser.add_argument(
        "--learner", default="hgb", choices=("hgb", "crf", "auto"), help="the tagger's learner"
    )
    parser.add_argument("--test20", action="store_true", help="the test20 record through qe run (--save)")
    parser.add_argument("--save", type=Path, help="with --test20: the record to write (and resume)")
    parser.add_argument(
        "--variant",
        choices=("", "tokenhead"),
        default="",
        help="with --test20: the configs <pair>-words-<variant>.toml (tokenhead: the e5 token head added)",
    )
    parser.add_argument("--from", dest="source", type=Path, help="print a saved record's test20 table")
    args = parser.parse_args()
    pairs = list(PAIRS) if args.pairs == "all" else args.pairs.split(",")
    if args.source is not None:
        print(json.dumps(test20_table(json.loads(args.source.read_text())), indent=1))
        return
    if args.test20:
        if args.save is None:
            parser.error("--test20 needs --save FILE")
        record = test20_record(pairs, args.save, args.data_dir, args.variant)
        print(json.dumps(test20_table(record), indent=1))
        return
    result = {pair: run_pair(pair, args.data_dir, args.seed, not args.no_nmt, args.learner) for pair in pairs}
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
