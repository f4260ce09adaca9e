"""Benchmark: what each feature family is worth on WMT12 en-es, alone and added to the official 17.

For every registered family that runs on WMT12 without extra inputs (decoder and nmt are skipped;
pseudoref gets its pseudo-reference from the bundle's Apertium ``mt2`` member; a family that fails
to extract is skipped with the reason on stderr), two SVR models are trained on the 1,832 training
pairs: (a) the family's features alone, (b) the official 17 baseline features
(``wmt12-official-bf17``) plus the family's; a reference row has the official 17 alone.

Each row is a ``qe run`` config written here (:func:`row_config`) and fitted by qe's own experiment
code (:func:`qe.run.pipeline.fit_system`): standardization + RBF SVR with C, gamma, epsilon chosen by
5-fold CV grid search on the training set only, the grid given as written (``DEFAULT_SVR_GRID``,
WMT12 units, the same for every family, rather than ``"default"``, which would rescale gamma by the
number of features), predictions not clipped. ``cv`` metrics come from ``cross_val_predict`` over
5 shuffled folds with the chosen parameters (the same folds chose them, so CV figures are
optimistic); ``test`` metrics are the official ones on the 422 test pairs
(``qe.evaluation.metrics.evaluate``). Features go through the feature cache under ``$QE_CACHE_DIR``;
``--settings`` defaults to the results page's (docs/results-wmt12.md; ``embeddings``: pseudo-reference cosine
and 128 projections, as in ``wmt12-best``).

Prints the record ``docs/family-gain-table.json`` keeps: ``{"commit", "reference": ROW, "families":
{"<family>": {"alone": ROW, "with_bf17": ROW}}}``, a ROW being ``{"n_features", "config", "cv":
{MAE, DeltaAvg}, "test": {MAE, RMSE, DeltaAvg, Spearman}, "signature"}`` with the signature
``qe run`` writes for that config; ``scripts/update_readme.py`` writes the docs/results-wmt12.md table from it
(``markdown``) and ``benchmarks/reproduce_row.py --table family-gain --row lm:alone`` runs one row's
config from a clean cache.

  python benchmarks/family_gain.py [--bundle DIR] [--data-dir DIR] [--families a,b]
      [--settings JSON] [--n-jobs N] [--markdown] [--save FILE] [--from-json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

DATASET = "wmt12-en-es"
OFFICIAL = "wmt12-official-bf17"
SKIPPED = ("decoder", "nmt")  # need Moses logs / an NMT system's log-probabilities (not in WMT12)
SETTINGS = {"embeddings": {"pseudo_ref": True, "projections": 128}}
CV_KEYS = ("MAE", "DeltaAvg")
TEST_KEYS = ("MAE", "RMSE", "DeltaAvg", "Spearman")


def row_config(
    family: str | None, with_official: bool, settings: dict, bundle: str, args: argparse.Namespace
) -> dict[str, Any]:
    """The ``qe run`` config of one row: the family (None: none) and / or the official 17, SVR grid."""
    from qe.learners.factory import DEFAULT_SVR_GRID

    families = [family] if family else []
    features: dict[str, Any] = {"sets": [OFFICIAL] if with_official else [], "families": families}
    if families:
        features["resources"] = bundle
        features["settings"] = {family: settings[family]} if family in settings else {}
    part = "reference" if not family else f"{family}-{'with-bf17' if with_official else 'alone'}"
    return {
        "name": f"family-gain-{part}",
        "seed": args.seed,
        "data": {"dataset": DATASET},
        "features": features,
        "learner": {"name": "svr", "scoring": "MAE", "clip": False, "grid": DEFAULT_SVR_GRID},
        "cv": {"folds": 5, "n_jobs": args.n_jobs},
    }


def load_row_config(config: dict[str, Any], folder: Path, data_dir: Path | None = None) -> dict[str, Any]:
    """``config`` written as TOML to ``folder`` and loaded as ``qe run`` loads it (checked, completed)."""
    import tomli_w

    from qe.run.config import apply_overrides, load_config

    path = folder / f"{config['name']}.toml"
    path.write_text(tomli_w.dumps(config), encoding="utf-8")
    return apply_overrides(load_config(path), data_dir)


def measure(config: dict[str, Any], folder: Path, data_dir: Path | None) -> dict[str, Any]:
    """One row: ``config`` fitted as ``qe run`` fits it; its metrics and run signature."""
    from qe.learners.factory import describe
    from qe.run.context import RunContext
    from qe.run.persist import signature
    from qe.run.pipeline import fit_system

    ctx = RunContext(load_row_config(config, folder, data_dir), False)
    train, _, fitted, _ = fit_system(ctx)
    metrics = fitted.metrics
    return {
        "n_features": int(train.features.shape[1]),
        "config": config,
        "cv": {key: round(float(metrics["cv"][key]), 6) for key in CV_KEYS},
        "test": {key: round(float(metrics["test"][key]), 6) for key in TEST_KEYS},
        "signature": signature(ctx, describe(fitted.estimator)),
    }


def markdown(record: dict) -> str:
    """The results page's table: the reference row, then one row per family alone and with the official 17."""
    head = (
        "| features | n | CV MAE | CV DeltaAvg | test MAE | test RMSE | test DeltaAvg | test Spearman |\n"
        "|---|---|---|---|---|---|---|---|"
    )

    def row(label: str, block: dict) -> str:
        cv, test = block["cv"], block["test"]
        cells = [f"{cv[k]:.3f}" for k in CV_KEYS] + [f"{test[k]:.3f}" for k in TEST_KEYS]
        return f"| {label} | {block['n_features']} | " + " | ".join(cells) + " |"

    lines = [head]
    if "reference" in record:
        lines.append(row("official 17 only (reference)", record["reference"]))
    for name, entry in record["families"].items():
        lines.append(row(f"`{name}` alone", entry["alone"]))
        lines.append(row(f"official 17 + `{name}`", entry["with_bf17"]))
    return "\n".join(lines)


def main() -> None:
    """Parse arguments, fit every row, print the JSON record (or the markdown table)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bundle", default="models/resources/" + DATASET, help="relative to the repository")
    parser.add_argument("--data-dir", type=Path, default=None, help="default: $QE_DATA_DIR")
    parser.add_argument("--families", default=None, help="comma-separated (default: every runnable family)")
    parser.add_argument(
        "--settings",
        default=json.dumps(SETTINGS),
        help='per-family settings as JSON, e.g. {"lm": {"pos": false}}',
    )
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument(
        "--markdown", action="store_true", help="print the results page's table instead of JSON"
    )
    parser.add_argument("--from-json", type=Path, default=None, help="render a record saved before")
    parser.add_argument("--save", type=Path, default=None, help="also write the JSON record to this file")
    args = parser.parse_args()

    if args.from_json is not None:
        record = json.loads(args.from_json.read_text(encoding="utf-8"))
        print(markdown(record) if args.markdown else json.dumps(record, indent=2))
        return

    from mlqe_table import git_commit

    from qe.features.registry import registered_families
    from qe.infra.errors import QEInputError
    from qe.infra.io import write_text_atomic

    warnings.filterwarnings("ignore", category=UserWarning)
    os.chdir(REPO)  # the configs name the bundle relative to the repository, as configs/ do
    settings = json.loads(args.settings)
    names = (
        [n.strip() for n in args.families.split(",") if n.strip()]
        if args.families
        else [n for n in registered_families() if n not in SKIPPED]
    )
    record: dict[str, Any] = {"commit": git_commit()}
    with tempfile.TemporaryDirectory(prefix="qe-family-gain-") as folder:
        try:
            record["reference"] = measure(
                row_config(None, True, settings, args.bundle, args), Path(folder), args.data_dir
            )
        except QEInputError as exc:
            raise SystemExit(f"error: {exc}") from None
        record["families"] = {}
        for name in names:
            start = time.perf_counter()
            try:
                rows = {
                    part: measure(
                        row_config(name, part == "with_bf17", settings, args.bundle, args),
                        Path(folder),
                        args.data_dir,
                    )
                    for part in ("alone", "with_bf17")
                }
            except (QEInputError, ImportError, OSError) as exc:
                print(f"skipping {name}: {exc.__class__.__name__}: {exc}", file=sys.stderr)
                continue
            record["families"][name] = rows
            print(f"{name}: measured in {time.perf_counter() - start:.0f} s", file=sys.stderr)

    text = json.dumps(record, indent=2)
    if args.save is not None:
        write_text_atomic(args.save, text + "\n")
    print(markdown(record) if args.markdown else text)


if __name__ == "__main__":
    main()
