"""Benchmark: fine-tuning the USE-M encoder on one MLQE-PE DA pair, and scoring with the saved model.

Trains ``--pairs`` training pairs (default 7,000: all of a pair's train split) for ``--epochs``
epochs with one setting (default: every dense layer unfrozen, end to end) and prints each epoch's
seconds, mean loss, dev Pearson and peak memory (the first epoch includes XLA's compilation,
timed apart from the following ones). Then the saved model (arrays + manifest) is read back and
scores the dev pairs with the numpy forward pass, without JAX: in this process, and on
``--jobs`` loky processes that each load the model once (as ``qe predict --jobs`` does). The
machine may be shared: the load average is printed beside every timing. Prints one JSON object.

``--select`` instead runs the dev grid (unfrozen layers x encoder learning rate x head) with early
stopping and prints dev Pearson per epoch of every setting and the one chosen; test20 is not read.
``--model FILE`` only measures the scoring of a saved model.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from qe.data import load_registered
from qe.embeddings.finetune import Settings, finetune, select
from qe.embeddings.finetuned import FinetunedEncoder, score_in_process
from qe.evaluation.metrics import pearson

DEFAULT_DATA_DIR = os.environ.get("QE_DATA_DIR", "/work/shared/data")


def load() -> float:
    return os.getloadavg()[0]


def score_parallel(path: Path, src: list[str], mt: list[str], jobs: int) -> np.ndarray:
    """Scores from ``jobs`` loky processes (each reads the model once), on ``4 * jobs`` contiguous chunks."""
    from joblib import Parallel, delayed

    bounds = np.linspace(0, len(src), 4 * jobs + 1).astype(int)
    parts = Parallel(n_jobs=jobs, backend="loky")(
        delayed(score_in_process)(str(path), src[a:b], mt[a:b]) for a, b in itertools.pairwise(bounds)
    )
    return np.concatenate(parts)


def measure_scoring(path: Path, dev: tuple, jobs: int) -> dict:
    """Dev pairs per second with the saved model's numpy pass: in this process (wall clock and CPU
    time), then on ``jobs`` processes once started and holding the model; dev Pearson of the scores."""
    report: dict = {}
    started, before = time.perf_counter(), load()
    scorer = FinetunedEncoder.load(path)
    report["model_load_seconds"] = time.perf_counter() - started
    started, cpu = time.perf_counter(), time.process_time()
    scores = scorer.score(dev[0], dev[1])
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    report["1_process"] = {"pairs_per_s": len(scores) / seconds, "pairs_per_cpu_s": len(scores) / cpu}
    report["1_process"]["load"] = [before, load()]
    report["dev_pearson"] = pearson(dev[2], scores)
    started = time.perf_counter()
    score_parallel(path, list(dev[0][:64]), list(dev[1][:64]), jobs)  # start the workers, read the model
    report["workers_start_seconds"] = time.perf_counter() - started
    started, before = time.perf_counter(), load()
    parallel = score_parallel(path, list(dev[0]), list(dev[1]), jobs)
    seconds = time.perf_counter() - started
    report[f"{jobs}_processes"] = {"pairs_per_s": len(parallel) / seconds, "load": [before, load()]}
    report["max_diff_1_vs_parallel"] = float(np.abs(parallel - scores).max())
    return report


def grid(epochs: int) -> list[Settings]:
    """The settings compared on dev: frozen per-token layers first (cheap), then end to end with
    smaller encoder learning rates (at most 4 epochs: each costs minutes)."""
    cheap = [Settings(unfreeze="head", hidden=hidden, max_epochs=epochs) for hidden in (0, 256)]
    cheap += [
        Settings(unfreeze="top", lr=lr, hidden=hidden, max_epochs=epochs)
        for lr in (1e-4, 3e-4)
        for hidden in (0, 256)
    ]
    end_to_end = [(1e-5, 256), (3e-5, 256), (3e-5, 0)]
    return cheap + [
        Settings(unfreeze="all", lr=lr, hidden=h, max_epochs=min(epochs, 4)) for lr, h in end_to_end
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pair", default="en-de", help="MLQE-PE DA pair (default en-de)")
    parser.add_argument("--pairs", type=int, default=7000, help="training pairs used (default 7,000)")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--unfreeze", default="all", choices=("head", "dan", "top", "all"))
    parser.add_argument("--lr", type=float, default=1e-4)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--jobs", type=int, default=2, help="scoring processes (default 2)")
    parser.add_argument("--select", action="store_true", help="run the dev grid instead")
    parser.add_argument("--save", type=Path, help="keep the model file here")
    parser.add_argument("--model", type=Path, help="only score the dev pairs with this saved model")
    parser.add_argument("--data-dir", default=DEFAULT_DATA_DIR)
    args = parser.parse_args()

    train_set = load_registered(f"mlqe-da/{args.pair}", "train", args.data_dir)
    dev_set = load_registered(f"mlqe-da/{args.pair}", "dev", args.data_dir)
    n = min(args.pairs, len(train_set))
    train = (train_set.src[:n], train_set.mt[:n], train_set.labels[:n])
    dev = (dev_set.src, dev_set.mt, dev_set.labels)

    def log(line: str) -> None:
        print(f"{line}  [load {load():.1f}]", file=sys.stderr, flush=True)

    report: dict = {"pair": args.pair, "train_pairs": n, "dev_pairs": len(dev_set), "cpus": os.cpu_count()}
    if args.model:
        report["scoring"] = measure_scoring(args.model, dev, args.jobs)
        print(json.dumps(report, indent=1, default=float))
        return 0
    if args.select:
        model, table = select(train, dev, grid(args.epochs), log=log)
        report["grid"] = [{**vars(s), "dev_pearson": round(r, 4), "best_epoch": e} for s, r, e in table]
        report["chosen"] = vars(model.settings)
    else:
        settings = Settings(unfreeze=args.unfreeze, lr=args.lr, hidden=args.hidden, max_epochs=args.epochs)
        report["load_before"] = load()
        model = finetune(train, dev, settings, log=log)
        report["load_after"] = load()
        report["settings"] = vars(settings)
    report["history"] = model.history
    report["best_epoch"], report["dev_pearson"] = model.best_epoch, model.best_dev_pearson

    with tempfile.TemporaryDirectory() as tmp:
        path = args.save or Path(tmp) / "model.qenc"
        model.save(path, args.pair.split("-"))
        report["model_bytes"] = path.stat().st_size
        report["scoring"] = measure_scoring(path, dev, args.jobs)
    print(json.dumps(report, indent=1, default=float))
    return 0


if __name__ == "__main__":
    sys.exit(main())
