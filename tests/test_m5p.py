"""M5P: hand-computed trees, agreement with Weka 3.6's M5P, scikit-learn conventions, persistence."""

from __future__ import annotations

import pickle
import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
import skops.io as sio
from sklearn.utils.estimator_checks import parametrize_with_checks

from qe.learners.m5p import M5P, find_best_split

WEKA_JAR = Path("/usr/share/java/weka.jar")
needs_weka = pytest.mark.skipif(
    shutil.which("java") is None or not WEKA_JAR.is_file(),
    reason="needs java and Weka 3.6 at /usr/share/java/weka.jar",
)


@parametrize_with_checks([M5P()])
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


# --- hand-computed cases ---------------------------------------------------------------------


def step_data() -> tuple[np.ndarray, np.ndarray]:
    """x = 1..10, y = 1 for x <= 5 and 5 above: one split at 5.5, two constant leaves."""
    return np.arange(1.0, 11.0)[:, None], np.array([1.0] * 5 + [5.0] * 5)


def test_step_function_tree_and_smoothing_by_hand():
    X, y = step_data()
    model = M5P().fit(X, y)
    assert model.n_models_ == 2
    assert model.tree_["feature"][0] == 0 and model.tree_["threshold"][0] == 5.5
    # Root model: least squares of y on x (x is tested below the root).
    slope = 50.0 / 82.5  # Sxy / Sxx
    intercept = 3.0 - slope * 5.5
    # Leaves hold 5 rows and a constant model (1 or 5); smoothing: (5 c + 15 c_root) / (5 + 15).
    left = ((5 * 1.0 + 15 * intercept) / 20, 15 * slope / 20)
    right = ((5 * 5.0 + 15 * intercept) / 20, 15 * slope / 20)
    expected = [left[0] + left[1] * 3, right[0] + right[1] * 8]
    np.testing.assert_allclose(model.predict([[3.0], [8.0]]), expected, rtol=1e-9)
    np.testing.assert_allclose(M5P(unsmoothed=True).fit(X, y).predict([[3.0], [8.0]]), [1.0, 5.0])


def test_step_function_export_text():
    X, y = step_data()
    text = M5P().fit(X, y).export_text(["len"], target_name="effort")
    assert text.startswith("M5 pruned model tree:\n(using smoothed linear models)\n")
    assert "\nlen <= 5.5 : LM1 (5/0%)\nlen >  5.5 : LM2 (5/0%)\n" in text
    # left leaf: 0.4545 * len + 0 ; right leaf: 0.4545 * len + 1 (see the hand computation above)
    assert "LM num: 1\neffort = \n\t0.4545 * len \n\t+ 0\n" in text
    assert "LM num: 2\neffort = \n\t0.4545 * len \n\t+ 1\n" in text
    assert text.endswith("Number of Rules : 2")


def test_cuts_keep_a_fifth_plus_one_rows_on_each_side():
    x = np.arange(1.0, 11.0)[:, None]
    # The best unrestricted cut would isolate the two 9s, but each side needs n // 5 + 1 = 3 rows.
    assert find_best_split(x, np.array([9.0, 9.0] + [0.0] * 8)) == (0, 3.5)
    # With 4 rows only the middle cut is allowed.
    assert find_best_split(np.arange(1.0, 5.0)[:, None], np.array([0.0, 5.0, 5.0, 5.0])) == (0, 2.5)
    assert find_best_split(np.arange(1.0, 4.0)[:, None], np.array([0.0, 5.0, 5.0])) is None
    # Equal values cannot be separated.
    assert find_best_split(np.ones((8, 1)), np.arange(8.0)) is None


def test_later_attribute_must_be_strictly_better():
    X, y = step_data()
    twice = np.hstack([X, X])
    assert find_best_split(twice, y) == (0, 5.5)


def test_piecewise_linear_target_recovered_exactly():
    rng = np.random.default_rng(0)
    X = rng.uniform(0.0, 1.0, size=(200, 3))
    X[:, 0] *= 10
    y = np.where(X[:, 0] <= 5, X[:, 1], 10 + 2 * X[:, 2])
    model = M5P(unsmoothed=True).fit(X, y)
    assert model.n_models_ == 2
    below = X[X[:, 0] <= 5, 0].max()
    above = X[X[:, 0] > 5, 0].min()
    assert model.tree_["feature"][0] == 0
    assert model.tree_["threshold"][0] == pytest.approx((below + above) / 2)
    leaves = np.flatnonzero(model.tree_["feature"] < 0)
    np.testing.assert_allclose(model.tree_["leaf_coef"][leaves], [[0, 1, 0], [0, 0, 2]], atol=1e-6)
    np.testing.assert_allclose(model.tree_["leaf_intercept"][leaves], [0, 10], atol=1e-6)
    np.testing.assert_allclose(model.predict(X), y, atol=1e-6)


def test_constant_target_gives_one_leaf():
    X = np.random.default_rng(1).normal(size=(50, 3))
    model = M5P().fit(X, np.full(50, 3.7))
    assert model.n_models_ == 1
    np.testing.assert_allclose(model.predict(X[:5]), 3.7)
    assert "LM1 (50" in model.export_text()


def test_missing_values_take_training_means():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(120, 3))
    y = X[:, 0] + (X[:, 1] > 0) * 2 + rng.normal(scale=0.1, size=120)
    X[::7, 1] = np.nan
    model = M5P().fit(X, y)
    means = np.nanmean(X, axis=0)
    np.testing.assert_allclose(model.fill_values_, means)
    row = np.array([[0.3, np.nan, -0.2]])
    filled = np.array([[0.3, means[1], -0.2]])
    assert model.predict(row)[0] == model.predict(filled)[0]


# --- options -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def noisy():
    rng = np.random.default_rng(3)
    X = rng.uniform(size=(300, 4))
    y = 2 * X[:, 0] + (X[:, 1] > 0.5) * (1 + X[:, 2]) + rng.normal(scale=0.3, size=300)
    return X, y


def test_unpruned_unsmoothed_leaves_predict_their_training_mean(noisy):
    X, y = noisy
    pruned = M5P().fit(X, y)
    model = M5P(unpruned=True, unsmoothed=True).fit(X, y)
    assert model.n_models_ > 3 * pruned.n_models_
    leaf_of = model.apply(X)
    leaves = np.flatnonzero(model.tree_["feature"] < 0)
    assert set(leaf_of) == set(leaves)
    assert not model.tree_["leaf_coef"].any()
    for leaf in leaves:
        assert model.tree_["leaf_intercept"][leaf] == pytest.approx(y[leaf_of == leaf].mean())
        assert model.tree_["n_samples"][leaf] == np.count_nonzero(leaf_of == leaf)


def test_unsmoothed_uses_the_pruned_leaf_models(noisy):
    X, y = noisy
    smooth = M5P().fit(X, y)
    raw = M5P(unsmoothed=True).fit(X, y)
    assert raw.n_models_ == smooth.n_models_ > 1
    leaves = raw.tree_["feature"] < 0
    np.testing.assert_array_equal(raw.tree_["leaf_coef"][leaves], raw.tree_["coef"][leaves])
    np.testing.assert_array_equal(raw.tree_["coef"], smooth.tree_["coef"])
    assert not np.allclose(raw.predict(X), smooth.predict(X))


def test_regression_tree_has_constant_models(noisy):
    X, y = noisy
    model = M5P(build_regression_tree=True, unsmoothed=True).fit(X, y)
    assert not model.tree_["coef"].any() and not model.tree_["leaf_coef"].any()
    assert "regression tree" in model.export_text()


def test_min_instances_limits_splitting(noisy):
    X, y = noisy
    model = M5P(min_instances=40, unpruned=True).fit(X, y)
    inner = model.tree_["feature"] >= 0
    assert (model.tree_["n_samples"][inner] >= 40).all()
    with pytest.raises(ValueError, match="min_instances"):
        M5P(min_instances=0).fit(X, y)


# --- persistence ----------------------------------------------------------------------------


def test_pickle_and_skops_round_trip(noisy, tmp_path):
    X, y = noisy
    model = M5P().fit(X, y)
    expected = model.predict(X)
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(model)).predict(X), expected)
    path = tmp_path / "m5p.skops"
    sio.dump(model, path)
    untrusted = sio.get_untrusted_types(file=path)
    assert untrusted == ["qe.learners.m5p.M5P"]
    loaded = sio.load(path, trusted=untrusted)
    np.testing.assert_array_equal(loaded.predict(X), expected)
    assert loaded.export_text() == model.export_text()


# --- agreement with Weka 3.6 ------------------------------------------------------------------


def write_arff(path: Path, X: np.ndarray, y: np.ndarray) -> Path:
    names = [f"x{i}" for i in range(X.shape[1])] + ["y"]
    head = ["@relation t", *[f"@attribute {n} numeric" for n in names], "@data"]
    rows = [",".join(repr(float(v)) for v in (*row, t)) for row, t in zip(X, y, strict=True)]
    path.write_text("\n".join(head + rows) + "\n")
    return path


def run_weka(options: list[str], train: Path, test: Path) -> str:
    cmd = ["java", "-cp", str(WEKA_JAR), "weka.classifiers.trees.M5P", *options, "-t", str(train)]
    return subprocess.run([*cmd, "-T", str(test)], capture_output=True, text=True, check=True).stdout


def synthetic(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Continuous and integer-valued features; a piecewise-linear target with noise."""
    X = np.column_stack(
        [rng.uniform(0, 10, n), rng.normal(size=n), rng.integers(0, 6, n), rng.uniform(size=n)]
    )
    y = 1 + 0.3 * X[:, 0] + np.where(X[:, 1] > 0.2, 2 + X[:, 3], -0.5 * X[:, 2])
    y += np.where(X[:, 0] > 6, 3 * X[:, 3] - X[:, 1], 0) + rng.normal(0, 0.4, n)
    return X, y


WEKA_OPTIONS = {
    "default": ([], {}),
    "unpruned_unsmoothed": (["-N", "-U"], {"unpruned": True, "unsmoothed": True}),
    "regression_tree": (["-R"], {"build_regression_tree": True}),
    "unpruned_min_instances_10": (["-N", "-M", "10"], {"unpruned": True, "min_instances": 10}),
}


@pytest.fixture(scope="module")
def weka_runs(tmp_path_factory):
    rng = np.random.default_rng(7)
    X, y = synthetic(rng, 400)
    X_test, y_test = synthetic(rng, 100)
    folder = tmp_path_factory.mktemp("weka")
    train, test = write_arff(folder / "train.arff", X, y), write_arff(folder / "test.arff", X_test, y_test)
    jobs = {name: opts for name, (opts, _) in WEKA_OPTIONS.items()}
    jobs["predictions"] = ["-p", "0"]
    with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
        futures = {name: pool.submit(run_weka, opts, train, test) for name, opts in jobs.items()}
        outputs = {name: future.result() for name, future in futures.items()}
    return X, y, X_test, y_test, outputs


@pytest.mark.slow
@needs_weka
@pytest.mark.parametrize("name", list(WEKA_OPTIONS))
def test_same_model_text_and_test_error_as_weka(weka_runs, name):
    X, y, X_test, y_test, outputs = weka_runs
    output = outputs[name]
    model = M5P(**WEKA_OPTIONS[name][1]).fit(X, y)
    start = output.index("M5 ")
    weka_text = output[start : output.index("\n", output.index("Number of Rules"))]
    assert model.export_text() == weka_text
    test_block = output[output.index("=== Error on test data ===") :]
    weka_mae = float(re.search(r"Mean absolute error\s+([\d.]+)", test_block).group(1))
    assert abs(np.mean(np.abs(model.predict(X_test) - y_test)) - weka_mae) <= 1e-4


@pytest.mark.slow
@needs_weka
def test_same_predictions_as_weka(weka_runs):
    X, y, X_test, _, outputs = weka_runs
    rows = re.findall(r"^\s*\d+\s+\S+\s+(-?[\d.]+)\s", outputs["predictions"], flags=re.MULTILINE)
    weka_pred = np.array([float(v) for v in rows])
    assert weka_pred.shape == (X_test.shape[0],)
    np.testing.assert_allclose(M5P().fit(X, y).predict(X_test), weka_pred, atol=5.1e-4)  # 3 decimals


# --- the WMT12 baseline (needs the shared data) -------------------------------------------------

# Weka 3.6.14 "M5P -M 4" trained on the official 17 WMT12 features (its printed model).
WEKA_WMT12_TREE = """\
M5 pruned model tree:
(using smoothed linear models)

f4 <= -66.724 : LM1 (1056/76.977%)
f4 >  -66.724 : LM2 (776/88.405%)
"""
WEKA_WMT12_LM1_TERMS = [
    "0.033 * f1", "+ 0.0125 * f2", "+ 0.1774 * f3", "+ 0.003 * f4", "+ 0.0183 * f5", "- 0.0064 * f6",
    "- 3.1649 * f8", "- 1.2286 * f10", "+ 0.0103 * f11", "+ 0.8684 * f12", "+ 0.0005 * f16",
]  # fmt: skip
WEKA_WMT12_LM1 = (
    "LM num: 1\neffort = \n" + "".join(f"\t{term} \n" for term in WEKA_WMT12_LM1_TERMS) + "\t+ 3.3894\n"
)


@pytest.mark.data
def test_wmt12_baseline_matches_weka(data_dir):
    folder = data_dir / "wmt12-qe" / "baseline_features"
    X = np.loadtxt(folder / "training.qe.baseline.tsv", delimiter="\t", usecols=range(17))
    y = np.loadtxt(folder / "training.effort")
    X_test = np.loadtxt(folder / "test.qe.baseline.tsv", delimiter="\t", usecols=range(17))
    y_test = np.loadtxt(folder / "test.effort")
    model = M5P().fit(X, y)
    text = model.export_text([f"f{i + 1}" for i in range(17)], target_name="effort")
    assert text.startswith(WEKA_WMT12_TREE)
    assert WEKA_WMT12_LM1 in text
    assert model.n_models_ == 2
    # Weka prints test MAE 0.6753 and RMSE 0.8184 for this model.
    pred = model.predict(X_test)
    assert abs(np.mean(np.abs(pred - y_test)) - 0.6753) <= 1e-4
    assert abs(np.sqrt(np.mean((pred - y_test) ** 2)) - 0.8184) <= 1e-4
