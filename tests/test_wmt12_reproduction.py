"""The WMT12 baseline reproduced from the official 17 features (no tuning on test)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from qe.config.document import thaw
from qe.run.config import apply_overrides, load_config
from qe.run.pipeline import run_experiment

CONFIGS = Path(__file__).resolve().parents[1] / "configs"


def _run(name: str, data_dir: Path, tmp_path: Path) -> dict:
    config = apply_overrides(load_config(CONFIGS / name), data_dir)
    run_experiment(config, tmp_path / "run", progress=False)
    return json.loads((tmp_path / "run" / "metrics.json").read_text())


@pytest.mark.slow
def test_official_svr_matches_the_published_baseline(data_dir, tmp_path):
    metrics = _run("wmt12-official-svr.toml", data_dir, tmp_path)
    test = metrics["test"]
    # Published baseline (Callison-Burch et al. 2012): MAE 0.69, RMSE 0.82, DeltaAvg 0.55, Spearman 0.58.
    assert test["MAE"] <= 0.69
    assert test["RMSE"] <= 0.82
    assert test["DeltaAvg"] >= 0.55
    assert test["Spearman"] >= 0.58
    assert metrics["cv"]["grid_best_params"]["C"] > 0


@pytest.mark.slow
def test_official_m5p_matches_weka(data_dir, tmp_path):
    metrics = _run("wmt12-official-m5p.toml", data_dir, tmp_path)
    test = metrics["test"]
    # Weka 3.6.14 M5P -M 4 on the same features (reference-behaviour.md §3): MAE 0.675, DeltaAvg 0.561.
    assert abs(test["MAE_exact"] - 0.675) <= 0.01
    assert abs(test["DeltaAvg"] - 0.561) <= 0.02
    assert "LM2" in (tmp_path / "run" / "model.txt").read_text()


@pytest.mark.parametrize(
    "path", sorted(p.name for p in CONFIGS.glob("*.toml") if not p.name.startswith("resources-"))
)
def test_every_shipped_experiment_config_loads_and_builds_its_learner(path):
    from qe.learners.factory import make_learner

    config = load_config(CONFIGS / path)
    learner = config.learner
    make_learner(learner.name, thaw(learner.params), thaw(learner.grid), scale=learner.scale)
    for entry in config.report.against:  # e.g. wmt12-best's baseline: a config that exists and loads
        if entry.config is not None:
            load_config(entry.config)
