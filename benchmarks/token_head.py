"""Benchmark: the cost of the e5 token head for word-level QE (issue 34, build 3) on MLQE-PE en-de.

``--cost``: the frozen layers over the training pairs (tokenising and laying out included), then one
epoch of the token head with ``--top-layers`` (default 4) trained over the training split (a seeded
tenth held out and scored after the epoch, as training does), wall and CPU seconds and the process's
peak memory; then the numpy scorer's speed on ``--score-pairs`` dev pairs (default 400) with 1 and 2
threads (pairs/s, each pair run alone as the saved model scores).

``--dev``: a dev-only figure: one model (no folds) trained on the training split with ``--max-epochs``
(default 2) and early stopping on its held-out tenth, scored on dev in numpy; per kind MCC and F1-MULT
at the MCC-best threshold on dev (chosen on dev, as the tagger's), for the head alone, the existing
tagger (``configs/mlqe/en-de-words.toml``'s: NMT features, trained on train), and both stacked (a
logistic regression on the two logits fitted out of fold over 10 seeded folds of dev sentences). test20
is never read. One JSON dict on stdout; ``--save FILE`` keeps each part's results as it goes.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path

import numpy as np

KINDS = ("target", "gaps", "source")


def _peak_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def _labels(data) -> dict[str, list[np.ndarray]]:
    """Per kind, per sentence, True for each BAD tag (the token head's labels)."""
    from qe.words.tags import BAD

    lines = {"target": data.mt_tags, "gaps": data.gap_tags, "source": data.src_tags}
    return {
        kind: [np.array([tag == BAD for tag in line], dtype=bool) for line in lines[kind]] for kind in KINDS
    }


def cost(train, dev, top_layers: int, score_pairs: int, log) -> dict:
    """One epoch's cost and the numpy scorer's speed."""
    from qe.embeddings.e5encoder import E5Encoder
    from qe.embeddings.e5tokenfile import TokenSettings
    from qe.embeddings.e5tokhead import TokenTrainer

    encoder = E5Encoder(threads=2)
    settings = TokenSettings(top_layers=top_layers, max_epochs=1)
    started, cpu = time.perf_counter(), time.process_time()
    trainer = TokenTrainer(train.src, train.mt, _labels(train), settings, encoder=encoder, log=log)
    lengths = [len(lay.ids) for lay in trainer.layouts]
    trainer.frozen.states(len(encoder.network.layers) - top_layers)
    frozen = {
        "seconds": round(time.perf_counter() - started, 1),
        "cpu_seconds": round(time.process_time() - cpu, 1),
    }
    result = trainer.run()
    epoch = result.history[0]
    out = {
        "pairs": len(train),
        "stepped_pairs": result.pairs,
        "heldout_pairs": result.heldout_pairs,
        "mean_input_tokens": round(float(np.mean(lengths)), 1),
        "cut_inputs": int(
            sum(1 for lay in trainer.layouts if any((lay.spans[k][:, 0] < 0).any() for k in KINDS))
        ),
        "top_layers": top_layers,
        "frozen_layers": frozen,
        "epoch_seconds": round(epoch["seconds"], 1),
        "epoch_cpu_seconds": round(epoch["cpu_seconds"], 1),
        "heldout_mcc_after_one_epoch": round(epoch["heldout_mcc"], 4),
        "peak_mb": _peak_mb(),
    }
    model = result.model
    src, mt = dev.src[:score_pairs], dev.mt[:score_pairs]
    speed = {}
    for threads in (1, 2):
        model.encoder.threads = threads
        model.probabilities(src[:8], mt[:8])  # warm
        t0, c0 = time.perf_counter(), time.process_time()
        model.probabilities(src, mt)
        wall, used = time.perf_counter() - t0, time.process_time() - c0
        speed[f"{threads}_thread"] = {
            "pairs_per_second": round(len(src) / wall, 1),
            "pairs_per_cpu_second": round(len(src) / used, 1),
        }
    out["numpy_scoring"] = {"pairs": len(src), **speed}
    out["load_average"] = [round(v, 2) for v in os.getloadavg()]
    return out


def _scores(gold: np.ndarray, probability: np.ndarray) -> dict:
    from qe.evaluation.wordmetrics import best_threshold, word_scores

    threshold, _ = best_threshold(gold, probability, "mcc")
    pred = probability >= threshold
    scores = word_scores([["BAD" if g else "OK" for g in gold]], [["BAD" if p else "OK" for p in pred]])
    return {
        "mcc": round(scores.mcc, 4),
        "f1_mult": round(scores.f1_mult, 4),
        "threshold": round(threshold, 4),
    }


def _logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(p, 1e-6, 1 - 1e-6)
    return np.log(p / (1 - p))


def dev_figure(train, dev, train_nmt, dev_nmt, top_layers: int, max_epochs: int, log) -> dict:
    """The head alone, the tagger alone and both stacked on dev (see the module docstring)."""
    from sklearn.linear_model import LogisticRegression

    from qe.embeddings.e5encoder import E5Encoder
    from qe.embeddings.e5tokenfile import TokenSettings
    from qe.embeddings.e5tokhead import TokenTrainer
    from qe.wordmodel.features import WordFeaturizer, tag_labels
    from qe.wordmodel.tagger import WordTagger

    encoder = E5Encoder(threads=2)
    settings = TokenSettings(top_layers=top_layers, max_epochs=max_epochs)
    started = time.perf_counter()
    result = TokenTrainer(train.src, train.mt, _labels(train), settings, encoder=encoder, log=log).run()
    trained = time.perf_counter() - started
    t0 = time.perf_counter()
    head = result.model.probabilities(dev.src, dev.mt)
    scored = time.perf_counter() - t0
    log("fitting the existing tagger (NMT features) on train")
    featurizer = WordFeaturizer(folds=5, seed=0)
    tagger = WordTagger(seed=0).fit(featurizer.fit_transform(train, train_nmt), tag_labels(train))
    tagged = tagger.bad_probability(featurizer.transform(dev, dev_nmt))
    gold = tag_labels(dev)
    sentence = {kind: np.repeat(np.arange(len(dev)), [len(v) for v in head[kind]]) for kind in KINDS}
    folds = np.random.default_rng(0).permutation(len(dev)) % 10
    out = {
        "train_pairs": len(train),
        "dev_pairs": len(dev),
        "top_layers": top_layers,
        "max_epochs": max_epochs,
        "best_epoch": result.best_epoch,
        "heldout_mcc": round(result.best_mcc, 4),
        "history": [{k: round(v, 4) for k, v in row.items()} for row in result.history],
        "training_seconds": round(trained, 1),
        "dev_scoring_seconds": round(scored, 1),
    }
    for kind in KINDS:
        p_head = np.concatenate(head[kind])
        p_head = np.where(np.isnan(p_head), np.nanmean(p_head), p_head)
        stacked = np.empty_like(p_head)
        x = np.column_stack([_logit(tagged[kind]), _logit(p_head)])
        row_fold = folds[sentence[kind]]
        for fold in range(10):
            inside = row_fold == fold
            model = LogisticRegression().fit(x[~inside], gold[kind][~inside])
            stacked[inside] = model.predict_proba(x[inside])[:, 1]
        out[kind] = {
            "head": _scores(gold[kind], p_head),
            "tagger": _scores(gold[kind], tagged[kind]),
            "stacked": _scores(gold[kind], stacked),
        }
    out["peak_mb"] = _peak_mb()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cost", action="store_true")
    parser.add_argument("--dev", action="store_true")
    parser.add_argument("--top-layers", type=int, default=4)
    parser.add_argument("--max-epochs", type=int, default=2)
    parser.add_argument("--score-pairs", type=int, default=400)
    parser.add_argument("--save", type=Path)
    args = parser.parse_args(argv)
    from qe.wordmodel.nmtprobs import load_word_logprobs
    from qe.words.files import load_word_level

    def log(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    train, dev = load_word_level("en-de", "train"), load_word_level("en-de", "dev")
    saved = json.loads(args.save.read_text()) if args.save and args.save.exists() else {}
    if args.cost and "cost" not in saved:
        saved["cost"] = cost(train, dev, args.top_layers, args.score_pairs, log)
        if args.save:
            args.save.write_text(json.dumps(saved, indent=1))
    if args.dev and "dev" not in saved:
        train_nmt = load_word_logprobs("en-de", "train", train.mt)
        dev_nmt = load_word_logprobs("en-de", "dev", dev.mt)
        saved["dev"] = dev_figure(train, dev, train_nmt, dev_nmt, args.top_layers, args.max_epochs, log)
        if args.save:
            args.save.write_text(json.dumps(saved, indent=1))
    print(json.dumps(saved))
    return 0


if __name__ == "__main__":
    sys.exit(main())
