"""Benchmark: how much the frozen best WMT12 system moves with the random seed.

Runs ``configs/wmt12-best.toml`` (or ``--config``) with three seeds: the features are built once
(``qe.run.extraction.build_split``; they do not depend on the seed), then for each seed the config's
learner is fitted exactly as ``qe run`` fits it (``qe.run.evaluate.fit_and_evaluate``: seeded CV
folds, seeded learners and inner folds) and scored on the WMT12 test set.

Usage: python benchmarks/best_system_seeds.py [--config FILE] [--seeds 1,2,3] [--data-dir DIR]
Prints ``{"seeds": [...], "test_MAE": [...], "max_diff": float}`` (MAE as the official scorer
rounds it, max_diff = largest minus smallest).
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from qe.run.config import apply_overrides, load_config  # noqa: E402
from qe.run.context import RunContext  # noqa: E402
from qe.run.evaluate import fit_and_evaluate  # noqa: E402
from qe.run.extraction import build_split  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", type=Path, default=REPO / "configs" / "wmt12-best.toml")
    parser.add_argument("--seeds", default="1,2,3", help="comma-separated seeds (default 1,2,3)")
    parser.add_argument("--data-dir", type=Path, help="data directory (default $QE_DATA_DIR)")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    config = apply_overrides(load_config(args.config), args.data_dir)
    ctx = RunContext(config)
    train, test = build_split(ctx, "train"), build_split(ctx, "test")
    seeds = [int(s) for s in args.seeds.split(",")]
    maes = []
    for seed in seeds:
        fitted = fit_and_evaluate(ctx.system(config.replace(seed=seed)), train, test)
        maes.append(round(fitted.metrics["test"]["MAE"], 6))
    print(json.dumps({"seeds": seeds, "test_MAE": maes, "max_diff": round(max(maes) - min(maes), 6)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
