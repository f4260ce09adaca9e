"""Benchmark: the frozen best WMT12 system against the baseline and the best single-family system.

Runs three configs with ``qe.experiment.run_experiment`` into temporary run directories:

- ``best``: ``configs/wmt12-best.toml`` (or ``--config``);
- ``baseline``: ``configs/wmt12-official-svr.toml``, the official 17 features + RBF SVR tuned by
  5-fold CV (the WMT12 baseline reproduced);
- ``single-family``: the best config's learner on its best single feature family, the official 17
  features (chosen by cross-validation on the training set: docs/best-system-log.md, idea 2).

The test predictions (``predictions.tsv``) of ``best`` are compared with each of the others by
Koehn's paired bootstrap (``qe.metrics.paired_bootstrap``, 1000 resamples) on MAE, RMSE, DeltaAvg
and Spearman; ``p_value`` is the share of resamples in which ``best`` is not better.

Usage: python benchmarks/best_vs_baselines.py [--config FILE] [--data-dir DIR] [--markdown]
Prints ``{"systems": {name: {"cv": {MAE, DeltaAvg}, "test": {MAE, RMSE, DeltaAvg, Spearman}}},
"bootstrap": {other: {metric: {a, b, a_wins, p_value}}}}``; ``--markdown`` prints tables instead.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from qe.config import load_config  # noqa: E402
from qe.data import load_registered  # noqa: E402
from qe.experiment import run_experiment  # noqa: E402
from qe.metrics import paired_bootstrap  # noqa: E402
from qe.published import comparison_table  # noqa: E402

METRICS = ("MAE", "RMSE", "DeltaAvg", "Spearman")


def single_family_config(best: dict[str, Any]) -> dict[str, Any]:
    """The best config's learner on the official 17 features only."""
    config = copy.deepcopy(best)
    config["name"] = "best-learner-on-official-17"
    config["features"] = {"sets": ["wmt12-official-bf17"], "families": [], "settings": {}}
    return config


def read_predictions(run_dir: Path) -> np.ndarray:
    lines = (run_dir / "predictions.tsv").read_text(encoding="utf-8").splitlines()[1:]
    return np.array([float(line.split("\t")[1]) for line in lines])


def markdown(result: dict[str, Any]) -> str:
    ours = {f"{name} (ours, test)": system["test"] for name, system in result["systems"].items()}
    lines = [
        comparison_table(ours),
        "",
        "| best vs | metric | best | other | best wins | p |",
        "|---" * 6 + "|",
    ]
    for other, tests in result["bootstrap"].items():
        for metric, test in tests.items():
            lines.append(
                f"| {other} | {metric} | {test['a']:.3f} | {test['b']:.3f} | "
                f"{test['a_wins']:.3f} | {test['p_value']:.3f} |"
            )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", type=Path, default=REPO / "configs" / "wmt12-best.toml")
    parser.add_argument("--baseline", type=Path, default=REPO / "configs" / "wmt12-official-svr.toml")
    parser.add_argument("--data-dir", type=Path, help="data directory (default $QE_DATA_DIR)")
    parser.add_argument("--samples", type=int, default=1000, help="bootstrap resamples (default 1000)")
    parser.add_argument("--markdown", action="store_true", help="print markdown tables instead of JSON")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    best = load_config(args.config)
    configs = {
        "best": best,
        "baseline": load_config(args.baseline),
        "single-family": single_family_config(best),
    }
    for config in configs.values():
        if args.data_dir:
            config["data"]["data_dir"] = str(args.data_dir)
    gold = load_registered("wmt12-en-es", "test", best["data"].get("data_dir")).labels
    systems: dict[str, Any] = {}
    predictions: dict[str, np.ndarray] = {}
    with tempfile.TemporaryDirectory(prefix="qe-best-vs-") as tmp:
        for name, config in configs.items():
            run_dir = Path(tmp) / name
            metrics = run_experiment(config, run_dir, progress=False)
            predictions[name] = read_predictions(run_dir)
            systems[name] = {
                "config": config["name"],
                "cv": {m: metrics["cv"][m] for m in ("MAE", "DeltaAvg")},
                "test": {m: metrics["test"][m] for m in METRICS},
            }
    bootstrap = {
        other: {
            metric: paired_bootstrap(
                gold, predictions["best"], predictions[other], metric, n_samples=args.samples
            ).as_dict()
            for metric in METRICS
        }
        for other in ("baseline", "single-family")
    }
    result = {"systems": systems, "bootstrap": bootstrap}
    print(markdown(result) if args.markdown else json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
