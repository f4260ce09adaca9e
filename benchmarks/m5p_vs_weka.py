"""Benchmark: our M5P against Weka 3.6's M5P on the official 17 WMT12 baseline features.

Both learners train on the 1832 training sentences with Weka's defaults (``-M 4``: pruned,
smoothed) and predict the 422 test sentences. Prints one JSON object:
``{"weka": {...}, "qe": {...}}`` with MAE, RMSE, DeltaAvg, Spearman (``qe.evaluation.metrics``), n_models
(number of linear models) and fit_seconds.

Weka's fit time is its own "Time taken to build model" (inside a cold JVM); Weka's predictions
come from ``-p 0``, which prints 3 decimals. Our fit time is the median wall time of 3 fits.

Usage: ``python benchmarks/m5p_vs_weka.py [--data-dir DIR]`` (default: $QE_DATA_DIR or
/work/shared/data).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _weka import (
    M5P_CLASS,
    parse_build_seconds,
    parse_num_rules,
    parse_predictions,
    run_weka,
    weka_available,
    write_arff,
)

from qe.evaluation.metrics import delta_avg, mae, rmse, spearman
from qe.learners.m5p import M5P

FEATURES_DIR = Path("wmt12-qe", "baseline_features")
N_FEATURES = 17


def load_split(data_dir: Path, split: str) -> tuple[np.ndarray, np.ndarray]:
    """Official baseline features (17 tab-separated columns, trailing tab) and effort labels."""
    folder = data_dir / FEATURES_DIR
    X = np.loadtxt(folder / f"{split}.qe.baseline.tsv", delimiter="\t", usecols=range(N_FEATURES), ndmin=2)
    y = np.loadtxt(folder / f"{split}.effort", ndmin=1)
    if X.shape[0] != y.shape[0]:
        raise SystemExit(f"{split}: {X.shape[0]} feature rows but {y.shape[0]} labels")
    return X, y


def scores(y: np.ndarray, pred: np.ndarray, n_models: int, fit_seconds: float) -> dict[str, float | int]:
    return {
        "MAE": round(mae(y, pred), 6),
        "RMSE": round(rmse(y, pred), 6),
        "DeltaAvg": round(delta_avg(y, pred), 6),
        "Spearman": round(spearman(y, pred), 6),
        "n_models": int(n_models),
        "fit_seconds": round(fit_seconds, 4),
    }


def run_weka_m5p(X_train, y_train, X_test, y_test, workdir: Path) -> dict[str, float | int]:
    names = [f"f{i + 1}" for i in range(X_train.shape[1])]
    train = write_arff(workdir / "train.arff", X_train, y_train, names, target_name="effort")
    test = write_arff(workdir / "test.arff", X_test, y_test, names, target_name="effort")
    summary = run_weka(M5P_CLASS, ["-M", "4"], train, test)
    pred = parse_predictions(run_weka(M5P_CLASS, ["-M", "4"], train, test, predictions=True))
    if pred.shape[0] != y_test.shape[0]:
        raise SystemExit(f"Weka returned {pred.shape[0]} predictions for {y_test.shape[0]} test rows")
    return scores(y_test, pred, parse_num_rules(summary), parse_build_seconds(summary))


def run_ours(X_train, y_train, X_test, y_test, repeats: int = 3) -> dict[str, float | int]:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        model = M5P(min_instances=4).fit(X_train, y_train)
        times.append(time.perf_counter() - start)
    return scores(y_test, model.predict(X_test), model.n_models_, statistics.median(times))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data-dir", type=Path, default=Path(os.environ.get("QE_DATA_DIR", "/work/shared/data"))
    )
    args = parser.parse_args(argv)
    if not weka_available():
        print("error: needs java and Weka's jar (/usr/share/java/weka.jar or $WEKA_JAR)", file=sys.stderr)
        return 2
    X_train, y_train = load_split(args.data_dir, "training")
    X_test, y_test = load_split(args.data_dir, "test")
    with tempfile.TemporaryDirectory(prefix="m5p_vs_weka_") as tmp:
        weka = run_weka_m5p(X_train, y_train, X_test, y_test, Path(tmp))
    ours = run_ours(X_train, y_train, X_test, y_test)
    print(json.dumps({"weka": weka, "qe": ours}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
