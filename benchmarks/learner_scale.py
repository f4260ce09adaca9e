"""Benchmark: exact SVR against the fast SVR (``svr_fast``: Nyström map + linear SVR) on 26,000 rows.

Training data: the first ``--rows / len(pairs)`` training pairs of each MLQE-PE post-editing pair
(HTER labels; default en-de, en-zh, et-en, ne-en: 4 x 6,500 = 26,000 rows), features ``nmt`` (the
NMT model's own log-probabilities, shipped with MLQE-PE) + ``surface`` (99 columns), extracted
through the feature cache. Test data: the same pairs' test20 splits (4 x 1,000 rows).

Both learners are trained as ``qe run`` trains them: standardization + the learner, its default
grid (relative to the labels' spread and the number of features) searched by 5-fold CV on the
training rows (MAE), the best candidate refitted on all of them; the seconds cover search and
refit. The exact SVR's 240-fit grid takes hours at 26,000 rows, so by default (``--svr-grid
chosen``) it is fitted once with the parameters the fast learner chose, and ``svr_grid_seconds``
estimates its grid from one timed fit on a CV fold's rows (fits x fold fit / workers + refit);
``--svr-grid full`` runs the real search (use it with fewer ``--rows``).

Usage:
  python benchmarks/learner_scale.py [--rows 26000] [--pairs en-de,en-zh,et-en,ne-en]
      [--svr-grid chosen|full|none] [--gradient-boosting] [--n-jobs 2] [--data-dir DIR]
      [--cache-dir DIR] [--quiet]
Prints ``{"rows", "svr_seconds", "fast_seconds", "svr_pearson", "fast_pearson", ...}`` (one JSON
line; ``load`` is the 1/5/15-minute load average at the start and the end: the machine is shared).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
from scipy.stats import pearsonr
from sklearn.base import clone

from qe.features.base import Pairs

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from qe.data import load_registered  # noqa: E402
from qe.features.cache import default_cache_dir, extract_cached  # noqa: E402
from qe.features.registry import make_families  # noqa: E402
from qe.infra.errors import QEInputError  # noqa: E402
from qe.learners.factory import DEFAULT_SVR_GRID, make_learner  # noqa: E402
from qe.learners.progress import reporting  # noqa: E402

FAMILIES = ["nmt", "surface"]


def load(pairs: list[str], split: str, per_pair: int | None, args: argparse.Namespace) -> tuple:
    """Features and HTER labels of the first ``per_pair`` rows of each pair's ``split``, stacked."""
    xs, ys = [], []
    for pair in pairs:
        data = load_registered(f"mlqe-pe/{pair}", split, args.data_dir)
        table, _ = extract_cached(
            make_families(FAMILIES, {}),
            Pairs.of(data.src, data.mt, extra=dict(data.inputs), ids=data.ids),
            cache_dir=args.cache_dir,
            dataset=f"mlqe-pe-{pair}-{split}",
            progress=False,
        )
        if per_pair is not None and per_pair > len(table):
            raise SystemExit(f"{pair} {split} has {len(table)} rows, fewer than the {per_pair} asked for")
        xs.append(table.to_numpy(dtype=np.float64)[:per_pair])
        ys.append(np.asarray(data.labels, dtype=np.float64)[:per_pair])
    return np.vstack(xs), np.concatenate(ys)


def timed_search(name: str, x: np.ndarray, y: np.ndarray, n_jobs: int, seed: int) -> tuple:
    """Fit ``name`` with its default grid; (search, seconds)."""
    search = make_learner(name, grid="default", n_jobs=n_jobs, seed=seed)
    started = time.perf_counter()
    search.fit(x, y)
    return search, time.perf_counter() - started


def main() -> None:
    """Load, train both learners, print one JSON line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=26000, help="training rows (split evenly over pairs)")
    parser.add_argument("--pairs", default="en-de,en-zh,et-en,ne-en")
    parser.add_argument("--svr-grid", choices=("chosen", "full", "none"), default="chosen")
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--data-dir", type=Path, default=None, help="default: $QE_DATA_DIR")
    parser.add_argument("--cache-dir", type=Path, default=default_cache_dir())
    parser.add_argument(
        "--gradient-boosting", action="store_true", help="also time one gradient_boosting fit (no grid)"
    )
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    args = parser.parse_args()
    pairs = [pair for pair in args.pairs.split(",") if pair]
    if not pairs or args.rows < 10 * len(pairs) or args.n_jobs < 1:
        parser.error("--pairs needs at least one pair, --rows at least 10 per pair, --n-jobs at least 1")
    load_start = os.getloadavg()
    try:
        x_train, y_train = load(pairs, "train", args.rows // len(pairs), args)
        x_test, y_test = load(pairs, "test20", None, args)
    except QEInputError as exc:
        raise SystemExit(f"learner_scale: {exc}") from None
    result: dict = {"rows": len(y_train), "test_rows": len(y_test), "features": x_train.shape[1]}

    with reporting(not args.quiet):
        fast, fast_seconds = timed_search("svr_fast", x_train, y_train, args.n_jobs, args.seed)
        result["fast_seconds"] = round(fast_seconds, 1)
        result["fast_pearson"] = round(float(pearsonr(fast.predict(x_test), y_test)[0]), 4)
        chosen = {k.removeprefix("model__"): float(v) for k, v in fast.best_params_.items()}
        result["fast_params"] = {k: float(f"{v:.4g}") for k, v in chosen.items()}
        if args.svr_grid == "full":
            svr, svr_seconds = timed_search("svr", x_train, y_train, args.n_jobs, args.seed)
            result["svr_params"] = {
                k.removeprefix("model__"): float(f"{v:.4g}") for k, v in svr.best_params_.items()
            }
            result["svr_grid"] = "full"
        elif args.svr_grid == "chosen":
            svr = make_learner("svr", params=chosen)
            fold = np.random.default_rng(args.seed).permutation(len(y_train))[: len(y_train) * 4 // 5]
            started = time.perf_counter()
            clone(svr).fit(x_train[fold], y_train[fold])
            fold_seconds = time.perf_counter() - started
            started = time.perf_counter()
            svr.fit(x_train, y_train)
            fit_seconds = time.perf_counter() - started
            fits = 5 * int(np.prod([len(values) for values in DEFAULT_SVR_GRID.values()]))
            svr_seconds = fits * fold_seconds / args.n_jobs + fit_seconds
            result["svr_params"] = result["fast_params"]
            result["svr_grid"] = (
                f"estimated: {fits} fits x {fold_seconds:.1f} s (one fit on a fold's rows) / "
                f"{args.n_jobs} workers + {fit_seconds:.1f} s (the fit on all rows, with fast_params)"
            )
        if args.svr_grid != "none":
            result["svr_seconds"] = round(svr_seconds, 1)
            result["svr_pearson"] = round(float(pearsonr(svr.predict(x_test), y_test)[0]), 4)
    if args.gradient_boosting:
        boosting = make_learner("gradient_boosting", seed=args.seed)
        started = time.perf_counter()
        boosting.fit(x_train, y_train)
        result["gradient_boosting_seconds"] = round(time.perf_counter() - started, 1)
        pearson = pearsonr(boosting.predict(x_test), y_test)[0]
        result["gradient_boosting_pearson"] = round(float(pearson), 4)
    result["load"] = {
        "start": [round(v, 2) for v in load_start],
        "end": [round(v, 2) for v in os.getloadavg()],
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
