"""Defaults that scale (issue 21): `qe init` chooses the learner and grid from the training row count
and uses every core, with the same numbers as one; a grid search says how long it expects to take."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest

from qe.cli import main
from qe.infra.expected import shown_duration
from qe.learners import factory
from qe.learners.factory import FAST_ABOVE, make_learner
from qe.learners.progress import reporting
from qe.learners.search import PilotFit, expected_seconds
from qe.run.config import load_config
from tests.helpers import write_lines
from tests.helpers.toy import EN, ES, sentences


def init_files(folder: Path, rows: int) -> list[str]:
    """Training and test files of ``rows`` (and 20) pairs with HTER-like labels; qe init's arguments."""
    args = []
    for split, n, seed in (("train", rows, 0), ("test", 20, 1)):
        src, mt = sentences(n, EN, seed), sentences(n, ES, seed + 10)
        labels = [f"{(len(s) % 9) / 10 + (len(m) % 5) / 50:.3f}" for s, m in zip(src, mt, strict=True)]
        prefix = "--" if split == "train" else "--test-"
        for role, lines in (("src", src), ("mt", mt), ("labels", labels)):
            args += [f"{prefix}{role}", str(write_lines(folder / f"{split}.{role}", lines))]
    return [*args, "--src-lang", "en", "--tgt-lang", "es", "--label-range", "0", "1"]


@pytest.mark.parametrize(("rows", "learner"), [(FAST_ABOVE, "svr"), (FAST_ABOVE + 1, "svr_fast")])
def test_init_writes_the_large_data_learner_above_the_documented_size(tmp_path, capsys, rows, learner):
    assert main(["init", *init_files(tmp_path, rows), "--light", "--out", str(tmp_path / "c.toml")]) == 0
    capsys.readouterr()
    config = load_config(tmp_path / "c.toml")
    assert config.learner.name == learner
    assert config.cv.n_jobs == -1  # one worker per core
    if learner == "svr":  # the exact grid as before: 4 C x 4 gamma x 3 epsilon scaled to the labels
        assert [len(values) for values in config.learner.grid.values()] == [4, 4, 3]
    else:  # the fast learner's default grid, scaled to the labels and the features when fitted
        assert config.learner.grid == "default"
    text = (tmp_path / "c.toml").read_text()
    assert (
        f"# {rows:,} training pairs, {'more than' if rows > FAST_ABOVE else 'at most'} {FAST_ABOVE:,}" in text
    )


@pytest.mark.parametrize("fast_above", [FAST_ABOVE, 30])
def test_every_core_gives_the_numbers_of_one(tmp_path, capsys, monkeypatch, fast_above):
    """The config qe init writes (n_jobs = -1) and the same run on one worker: identical predictions and
    metrics, for the exact SVR and (with the threshold lowered to 30 rows) the fast one."""
    monkeypatch.setattr(factory, "FAST_ABOVE", fast_above)
    monkeypatch.chdir(tmp_path)
    assert main(["init", *init_files(tmp_path, 60), "--light", "--out", "c.toml"]) == 0
    assert load_config(tmp_path / "c.toml").learner.name == ("svr" if fast_above > 60 else "svr_fast")
    runs = {}
    for name, jobs in (("cores", []), ("one", ["--jobs", "1"])):
        assert main(["run", "c.toml", "--output-dir", name, "--quiet", *jobs]) == 0
        metrics = json.loads((tmp_path / name / "metrics.json").read_text())
        for volatile in ("seconds", "extraction_seconds"):
            metrics.pop(volatile)
        runs[name] = (metrics, (tmp_path / name / "predictions.tsv").read_text())
    capsys.readouterr()
    assert runs["cores"] == runs["one"]


# ------------------------------------------------------------------------------ expected time


def test_the_expected_time_extrapolates_cpu_time_by_the_fitted_power_and_the_load():
    # CPU time exactly 1e-6 * rows^2, wall time twice it (a busy machine): each of the 10 fits on
    # 4,000 rows takes 16 s CPU = 32 s wall, 2 workers share them (5 rounds), the refit on 5,000 rows
    # 25 s CPU = 50 s wall
    timings = [PilotFit(rows, 1e-6 * rows**2, 2e-6 * rows**2) for rows in (500, 1000, 2000)]
    assert expected_seconds(timings, 4000, 5000, fits=10, workers=2) == pytest.approx(5 * 32 + 50)
    # the power is kept from 1 to 3: falling timings (noise) count as linear, one timing as 2
    falling = [PilotFit(500, 0.4, 0.4), PilotFit(1000, 0.2, 0.2)]
    assert expected_seconds(falling, 4000, 4000, fits=1, workers=1) == pytest.approx(2 * 0.2 * 4)
    assert expected_seconds([PilotFit(1000, 1.0, 1.0)], 2000, 2000, 1, 1) == pytest.approx(2 * 4.0)


def test_durations_are_shown_as_a_person_reads_them():
    assert [shown_duration(s) for s in (0.2, 40, 720, 7500)] == [
        "about 1 s",
        "about 40 s",
        "about 12 min",
        "about 2 h 5 min",
    ]


def test_a_grid_search_says_its_expected_time_first_and_the_estimate_moves_no_number():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(300, 5))
    y = x[:, 0] + 0.5 * x[:, 1] ** 2 + rng.normal(scale=0.3, size=300)
    grid = {"C": [1.0, 10.0], "gamma": [0.01, 0.1]}
    quiet = make_learner("svr", grid=grid, n_jobs=1).fit(x, y)
    stream = io.StringIO()
    with reporting(True, stream=stream):
        loud = make_learner("svr", grid=grid, n_jobs=1).fit(x, y)
    lines = stream.getvalue().splitlines()
    assert lines[0].startswith(
        "grid search (5 folds, 300 rows, 1 worker): 4 candidates, expected to take about "
    )
    assert lines[0].endswith("(extrapolated from fits on up to 240 of a fold's 240 rows)")
    assert "candidates in" in lines[1]  # the batches come after
    assert loud.best_params_ == quiet.best_params_
    assert np.array_equal(loud.cv_results_["mean_test_score"], quiet.cv_results_["mean_test_score"])
    assert np.array_equal(loud.predict(x), quiet.predict(x))
