"""Learners that scale: default grids relative to the labels' spread and the number of features,
progress lines during grid searches, the fast SVR and the ``auto`` choice by training size."""

from __future__ import annotations

import io
import json
import re
import zipfile

import numpy as np
import pytest
from joblib import parallel_config
from sklearn.svm import SVR

from qe.cli import main
from qe.infra.errors import QEInputError
from qe.learners.factory import DEFAULT_SVR_GRID, FAST_ABOVE, auto_choice, make_learner
from qe.learners.fast import NystroemSVR
from qe.learners.progress import reporting
from qe.learners.search import REFERENCE_FEATURES, REFERENCE_LABEL_SD, label_spread
from qe.model.file import load_model
from tests.helpers.toy import toy_config


def _data(n: int = 90, p: int = 4, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, p))
    y = 3 + np.sin(x[:, 0]) + 0.5 * x[:, 1] + rng.normal(0, 0.3, n)
    return x, y


def _params(search) -> dict[str, float]:
    return {key.removeprefix("model__"): value for key, value in search.best_params_.items()}


def test_wmt12_labels_are_the_reference_spread(data_dir):
    """The reference the default grid is written in is WMT12's training labels' spread."""
    from qe.data import load_registered

    labels = load_registered("wmt12-en-es", "train", data_dir).labels
    assert label_spread(labels) == REFERENCE_LABEL_SD
    assert REFERENCE_FEATURES == 17


def test_at_the_reference_scale_the_default_grid_is_searched_as_written():
    x, y = _data(p=REFERENCE_FEATURES)
    y = (y - y.mean()) / y.std() * REFERENCE_LABEL_SD + 3  # population sd exactly the reference
    search = make_learner("svr", grid="default", cv_folds=3).fit(x, y)
    resolved = {key.removeprefix("model__"): values for key, values in search.resolved_grid_.items()}
    assert {k: np.round(v, 12).tolist() for k, v in resolved.items()} == DEFAULT_SVR_GRID


def test_labels_times_100_give_c_and_epsilon_times_100_and_the_same_fit_times_100():
    """SVR's problem with y, C, epsilon multiplied by s is the original one multiplied by s, so the
    search must pick the same candidate and predict s times the original."""
    x, y = _data()
    exact = {"tol": 1e-8}  # libsvm's stopping rule is absolute: converge fully on both scales
    small = make_learner("svr", exact, grid="default", cv_folds=3).fit(x, y)
    large = make_learner("svr", exact, grid="default", cv_folds=3).fit(x, 100 * y)
    a, b = _params(small), _params(large)
    assert b["C"] == pytest.approx(100 * a["C"]) and b["epsilon"] == pytest.approx(100 * a["epsilon"])
    assert b["gamma"] == a["gamma"]
    assert np.allclose(large.predict(x), 100 * small.predict(x), rtol=1e-6)
    # The absolute grid searched as written (as before) does not follow the scale.
    fixed = {"C": DEFAULT_SVR_GRID["C"], "epsilon": DEFAULT_SVR_GRID["epsilon"]}
    absolute = make_learner("svr", grid=fixed, cv_folds=3).fit(x, 100 * y)
    assert _params(absolute)["epsilon"] <= 0.3


def test_gamma_follows_the_number_of_features():
    """Every column twice: squared distances double, so gamma halves and the kernel (and fit) is the same."""
    x, y = _data(p=3)
    once = make_learner("svr", grid="default", cv_folds=3).fit(x, y)
    twice = make_learner("svr", grid="default", cv_folds=3).fit(np.hstack([x, x]), y)
    assert _params(twice)["gamma"] == pytest.approx(_params(once)["gamma"] / 2)
    assert np.allclose(twice.predict(np.hstack([x, x])), once.predict(x), atol=1e-6)
    assert _params(once)["gamma"] in [g * 17 / 3 for g in DEFAULT_SVR_GRID["gamma"]]


def test_constant_labels_keep_the_grid_as_written():
    assert label_spread(np.full(10, 2.5)) == 1.0
    assert label_spread(np.column_stack([np.arange(4.0), np.zeros(4)])) == pytest.approx(
        np.std(np.arange(4.0))
    )


def test_progress_lines_per_candidate_and_the_best_score():
    x, y = _data()
    grid = {"C": [0.1, 1.0, 10.0], "epsilon": [0.1, 0.3]}
    quiet = make_learner("svr", grid=grid, cv_folds=3, n_jobs=1).fit(x, y)
    stream = io.StringIO()
    with reporting(True, interval=0, stream=stream):
        loud = make_learner("svr", grid=grid, cv_folds=3, n_jobs=1).fit(x, y)
    lines = stream.getvalue().splitlines()
    head = "grid search (3 folds, 90 rows, 1 worker)"
    assert lines[0] == f"{head}: 6 candidates"
    assert [int(re.search(r": (\d)/6 candidates", line).group(1)) for line in lines[1:7]] == [
        1,
        2,
        3,
        4,
        5,
        6,
    ]
    assert lines[7] == f"{head}: refitting the best candidate on all 90 rows" and len(lines) == 8
    # The last line names the chosen candidate and its CV MAE (the search's own best, negated).
    assert f"best MAE {-loud.best_score_:.4g} at C={loud.best_params_['model__C']:.4g}" in lines[6]
    assert loud.best_params_ == quiet.best_params_
    assert np.allclose(loud.cv_results_["mean_test_score"], quiet.cv_results_["mean_test_score"])


def test_progress_batches_keep_two_workers_busy():
    """With 2 workers and 3 folds a batch is 2 candidates (6 fits)."""
    x, y = _data()
    stream = io.StringIO()
    with reporting(True, interval=0, stream=stream), parallel_config(backend="threading"):
        make_learner("svr", grid={"C": [0.1, 1.0, 10.0, 30.0]}, cv_folds=3, n_jobs=2).fit(x, y)
    counts = re.findall(r": (\d)/4 candidates", stream.getvalue())
    assert counts == ["2", "4"]


def test_no_progress_without_reporting(capsys):
    x, y = _data()
    make_learner("svr", grid={"C": [0.1, 1.0]}, cv_folds=3).fit(x, y)
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == ""


def test_qe_run_reports_progress_on_stderr_unless_quiet(tmp_path, capsys):
    config = toy_config(tmp_path)
    assert main(["run", str(config), "--output-dir", str(tmp_path / "loud")]) == 0
    err = capsys.readouterr().err
    assert "grid search (3 folds, 80 rows, 1 worker): 2 candidates" in err
    assert "grid search (3 folds, 80 rows, 1 worker): 2/2 candidates in" in err
    assert "CV predictions: 3 folds of 80 rows" in err
    assert main(["run", str(config), "--output-dir", str(tmp_path / "quiet"), "--quiet"]) == 0
    assert "grid search" not in capsys.readouterr().err


def test_stacking_folds_report_progress():
    x, y = _data()
    stack = make_learner("stack", {"members": [{"name": "svr"}, {"name": "mean"}], "cv": 3})
    stream = io.StringIO()
    with reporting(True, interval=0, stream=stream):
        stack.fit(x, y)
    assert re.findall(r"stack \(2 members\): (\d)/3 folds", stream.getvalue()) == ["1", "2", "3"]


def test_fast_svr_approaches_the_exact_svr():
    """With as many landmarks as rows the Nystroem map is exact, so the linear SVR in that space is
    the kernel SVR: its predictions match libsvm's closely."""
    x, y = _data(n=150)
    exact = SVR(C=1.0, gamma=0.2, epsilon=0.1).fit(x, y)
    fast = NystroemSVR(C=1.0, gamma=0.2, epsilon=0.1, n_components=150, max_iter=100000, tol=1e-6)
    fast.fit(x, y)
    assert fast.n_iter_ < 100000
    assert np.abs(fast.predict(x) - exact.predict(x)).max() < 0.02
    assert np.corrcoef(fast.predict(x), exact.predict(x))[0, 1] > 0.999


def test_fast_svr_scale_gamma_and_feature_check():
    x, y = _data()
    fast = NystroemSVR(random_state=0).fit(x, y)
    assert fast.gamma_ == pytest.approx(1 / (x.shape[1] * x.var()))
    with pytest.raises(ValueError, match="X has 3 features, but NystroemSVR is expecting 4"):
        fast.predict(x[:, :3])


def test_auto_picks_by_training_size():
    assert auto_choice(FAST_ABOVE) == "svr" and auto_choice(FAST_ABOVE + 1) == "svr_fast"
    assert auto_choice(None) == "svr" and auto_choice(11, fast_above=10) == "svr_fast"
    small = make_learner("auto", grid="default", n_rows=100)
    large = make_learner("auto", grid="default", n_rows=100, fast_above=50)
    assert isinstance(small.estimator.named_steps["model"], SVR)
    assert isinstance(large.estimator.named_steps["model"], NystroemSVR)
    assert large.estimator.named_steps["model"].random_state == 42  # seeded like the run


def test_auto_run_above_the_threshold_saves_a_fast_model(tmp_path):
    config = toy_config(tmp_path, 'name = "auto"\ngrid = "default"\nfast_above = 50')
    out = tmp_path / "run"
    assert main(["run", str(config), "--output-dir", str(out), "--quiet"]) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["learner"] == {"name": "auto", "chosen": "svr_fast", "training_rows": 80}
    assert "learner:NystroemSVR(C=" in (out / "signature.txt").read_text()
    with zipfile.ZipFile(out / "model.skops") as archive:
        schema = archive.read("schema.json").decode()
    assert '"NystroemSVR"' in schema and '"GridSearchCV"' not in schema and "ScaledGridSearchCV" not in schema
    model, _, _ = load_model(out / "model.skops")
    assert isinstance(model.named_steps["model"], NystroemSVR)


def test_auto_run_below_the_threshold_is_the_exact_svr(tmp_path):
    config = toy_config(tmp_path, 'name = "auto"\ngrid = "default"')
    out = tmp_path / "run"
    assert main(["run", str(config), "--output-dir", str(out), "--quiet"]) == 0
    assert json.loads((out / "metrics.json").read_text())["learner"]["chosen"] == "svr"
    assert "learner:SVR(C=" in (out / "signature.txt").read_text()


@pytest.mark.parametrize(
    ("learner", "expected"),
    [
        ('name = "auto"\nfast_above = 0', "learner.fast_above = 0: expected an integer >= 1"),
        ('name = "auto"\nfast_above = "big"', "learner.fast_above = 'big': expected an integer >= 1"),
        ('name = "svr"\nfast_above = 100', "learner.fast_above only applies to learner 'auto', not 'svr'"),
        ('name = "svr_fast"\nparams = { C = -1 }', "learner.params.C = -1: expected a float in the range"),
        ('name = "svr_fast"\nparams = { gamma = "auto" }', "learner.params.gamma = 'auto': expected"),
        ('name = "svr_fast"\nparams = { n_components = 0 }', "learner.params.n_components = 0: expected"),
        ('name = "svr_fast"\ngrid = { epsilon = [0.1, -1] }', "learner.grid.epsilon = -1: expected"),
        ('name = "svr_fast"\ngrid = { kernel = ["poly"] }', "learner.grid names unknown parameter(s) of"),
        ('name = "auto"\nparams = { kernel = "poly" }', "bad parameter for learner 'svr_fast'"),
        ('name = "auto"\nparams = { n_components = 10 }', "bad parameter for learner 'svr'"),
        ('name = "auto"\nfast_above = 10\nparams = { n_components = 10 }', "bad parameter for learner 'svr'"),
        ('name = "svr_fst"', "learner.name: unknown learner 'svr_fst' (allowed: svr, svr_fast, "),
        (
            'name = "average"\nparams = { members = [{ name = "auto" }] }',
            "learner.params.members[0]: learner 'auto' chooses by the training size",
        ),
    ],
)
def test_bad_fast_and_auto_settings_are_one_line(tmp_path, capsys, learner, expected):
    config = toy_config(tmp_path, learner)
    assert main(["run", str(config), "--output-dir", str(tmp_path / "out"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert err.startswith(f"qe: error: {config}: ") and expected in err, err
    assert not (tmp_path / "out").exists()


def test_unknown_learner_names_auto_among_the_allowed():
    with pytest.raises(QEInputError, match=r"allowed: .*aux_stack, auto\)"):
        make_learner("fast")
