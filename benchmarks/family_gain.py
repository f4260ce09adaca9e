"""Benchmark: what each feature family is worth on WMT12 en-es, alone and added to the official 17.

For every registered family that runs on WMT12 without extra inputs (decoder and nmt are skipped;
pseudoref gets its pseudo-reference from the bundle's Apertium ``mt2`` member; a family that fails
to extract is skipped with the reason on stderr), two SVR models are
trained on the 1,832 training pairs: (a) the family's features alone, (b) the official 17 baseline
features (``wmt12-official-bf17``) plus the family's. Each model is
``make_learner("svr", grid=DEFAULT_SVR_GRID, scoring="MAE")``: standardization + RBF SVR with C,
gamma, epsilon chosen by 5-fold CV grid search on the training set only. The grid is given as
written (WMT12 units, the same for every family) rather than ``"default"``, which would rescale
gamma by the number of features. ``cv`` metrics come from
``cross_val_predict`` over 5 shuffled folds with the chosen parameters (the same folds chose
them, so CV figures are optimistic); ``test`` metrics are the official ones on the 422 test
pairs (``qe.metrics.evaluate``: MAE/RMSE with the scorer's rounding, DeltaAvg, Spearman).

Features are extracted with the resource bundle ``--bundle`` through the per-family parquet
cache (``qe.features.cache``); extraction seconds per family go to stderr.

Usage:
  python benchmarks/family_gain.py [--bundle DIR] [--data-dir DIR] [--families a,b]
      [--settings JSON] [--cache-dir DIR] [--n-jobs N] [--markdown] [--save FILE] [--from-json FILE]
Prints ``{"families": {"<family>": {"n_features", "alone": {"cv": {"MAE", "DeltaAvg"}, "test":
{"MAE", "RMSE", "DeltaAvg", "Spearman"}}, "with_bf17": {same}}}}``; with ``--markdown`` prints
the README table instead (computing also an "official 17 only" reference row, unless the
results come from ``--from-json``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.base import clone
from sklearn.model_selection import KFold, cross_val_predict

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from qe.data import load_registered, load_registered_features  # noqa: E402
from qe.errors import QEInputError  # noqa: E402
from qe.features.cache import default_cache_dir, extract_cached  # noqa: E402
from qe.features.registry import make_families, registered_families  # noqa: E402
from qe.io import write_text_atomic  # noqa: E402
from qe.learners.factory import DEFAULT_SVR_GRID, make_learner  # noqa: E402
from qe.metrics import evaluate  # noqa: E402
from qe.resources.bundle import open_bundle  # noqa: E402

DATASET = "wmt12-en-es"
OFFICIAL = "wmt12-official-bf17"
SKIPPED = ("decoder", "nmt")  # need Moses logs / an NMT system's log-probabilities (not in WMT12)
CV_KEYS = ("MAE", "DeltaAvg")
TEST_KEYS = ("MAE", "RMSE", "DeltaAvg", "Spearman")


def fit_and_score(
    x_train: np.ndarray, y_train: np.ndarray, x_test: np.ndarray, y_test: np.ndarray, seed: int, n_jobs: int
) -> dict:
    """Grid-searched SVR on the training set: CV metrics with the chosen parameters, test metrics."""
    search = make_learner("svr", grid=DEFAULT_SVR_GRID, scoring="MAE", seed=seed, n_jobs=n_jobs)
    search.fit(x_train, y_train)
    folds = KFold(5, shuffle=True, random_state=seed)
    cv_pred = cross_val_predict(clone(search.best_estimator_), x_train, y_train, cv=folds, n_jobs=n_jobs)
    cv = evaluate(y_train, cv_pred)
    test = evaluate(y_test, search.predict(x_test))
    return {
        "cv": {key: round(float(cv[key]), 4) for key in CV_KEYS},
        "test": {key: round(float(test[key]), 4) for key in TEST_KEYS},
    }


def family_features(
    name: str, settings: dict, bundle, train, test, args
) -> tuple[np.ndarray, np.ndarray] | None:
    """Train and test feature matrices of one family (None, with the reason on stderr, if it cannot run)."""
    try:
        family = make_families([name], settings)[0]
        tables = []
        for split, data in (("train", train), ("test", test)):
            table, seconds = extract_cached(
                [family],
                data.ids,
                data.src,
                data.mt,
                resources=bundle,
                cache_dir=args.cache_dir,
                dataset=f"{DATASET}-{split}",
                n_jobs=args.n_jobs,
                progress=False,
            )
            cached = " (cached)" if name in table.attrs.get("cache_hits", []) else ""
            print(
                f"{name} {split}: {table.shape[1]} features, {seconds[name]:.1f} s{cached}", file=sys.stderr
            )
            tables.append(table.to_numpy(dtype=np.float64))
    except (QEInputError, ImportError, OSError) as exc:
        print(f"skipping {name}: {exc.__class__.__name__}: {exc}", file=sys.stderr)
        return None
    for matrix in tables:
        if not np.isfinite(matrix).all():
            raise SystemExit(f"family {name} produced NaN or infinite values")
    if tables[0].shape[1] == 0:
        print(f"skipping {name}: no features with these settings", file=sys.stderr)
        return None
    return tables[0], tables[1]


def markdown(results: dict, reference: dict | None) -> str:
    """The README table: one row per family, alone and with the official 17, CV and test metrics."""
    head = (
        "| features | n | CV MAE | CV DeltaAvg | test MAE | test RMSE | test DeltaAvg | test Spearman |\n"
        "|---|---|---|---|---|---|---|---|\n"
    )

    def row(label: str, n: int | str, block: dict) -> str:
        cv, test = block["cv"], block["test"]
        cells = [f"{cv[k]:.3f}" for k in CV_KEYS] + [f"{test[k]:.3f}" for k in TEST_KEYS]
        return f"| {label} | {n} | " + " | ".join(cells) + " |\n"

    lines = [head]
    if reference is not None:
        lines.append(row("official 17 only (reference)", 17, reference))
    for name, entry in results["families"].items():
        lines.append(row(f"`{name}` alone", entry["n_features"], entry["alone"]))
        lines.append(row(f"official 17 + `{name}`", 17 + entry["n_features"], entry["with_bf17"]))
    return "".join(lines)


def main() -> None:
    """Parse arguments, extract, train, print JSON (or the markdown table)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bundle", type=Path, default=REPO / "models" / "resources" / DATASET)
    parser.add_argument("--data-dir", type=Path, default=None, help="default: $QE_DATA_DIR")
    parser.add_argument("--families", default=None, help="comma-separated (default: every runnable family)")
    parser.add_argument(
        "--settings", default="{}", help='per-family settings as JSON, e.g. {"lm": {"pos": false}}'
    )
    parser.add_argument("--cache-dir", type=Path, default=default_cache_dir())
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--markdown", action="store_true", help="print the README table instead of JSON")
    parser.add_argument(
        "--from-json", type=Path, default=None, help="render results saved from a previous run"
    )
    parser.add_argument("--save", type=Path, default=None, help="also write the JSON results to this file")
    args = parser.parse_args()
    warnings.filterwarnings("ignore", category=UserWarning)

    if args.from_json is not None:
        results = json.loads(args.from_json.read_text(encoding="utf-8"))
        print(markdown(results, None) if args.markdown else json.dumps(results, indent=2))
        return

    settings = json.loads(args.settings)
    registry = registered_families()
    names = (
        [n.strip() for n in args.families.split(",") if n.strip()]
        if args.families
        else [n for n in registry if n not in SKIPPED]
    )
    try:
        bundle = open_bundle(args.bundle)
        train, test = (load_registered(DATASET, split, args.data_dir) for split in ("train", "test"))
        official = {
            split: load_registered_features(DATASET, OFFICIAL, split, args.data_dir).to_numpy(
                dtype=np.float64
            )
            for split in ("train", "test")
        }
    except QEInputError as exc:
        raise SystemExit(f"error: {exc}") from None
    y_train, y_test = np.asarray(train.labels, dtype=np.float64), np.asarray(test.labels, dtype=np.float64)

    results: dict = {"families": {}}
    for name in names:
        matrices = family_features(name, settings, bundle, train, test, args)
        if matrices is None:
            continue
        x_train, x_test = matrices
        start = time.perf_counter()
        alone = fit_and_score(x_train, y_train, x_test, y_test, args.seed, args.n_jobs)
        combined = fit_and_score(
            np.hstack([official["train"], x_train]),
            y_train,
            np.hstack([official["test"], x_test]),
            y_test,
            args.seed,
            args.n_jobs,
        )
        print(f"{name}: models trained in {time.perf_counter() - start:.0f} s", file=sys.stderr)
        results["families"][name] = {
            "n_features": int(x_train.shape[1]),
            "alone": alone,
            "with_bf17": combined,
        }

    if args.save is not None:
        write_text_atomic(args.save, json.dumps(results, indent=2) + "\n")
    if args.markdown:
        reference = fit_and_score(
            official["train"], y_train, official["test"], y_test, args.seed, args.n_jobs
        )
        print(markdown(results, reference))
    else:
        print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
