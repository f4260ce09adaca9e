"""Feature selection: correlation ranking vs scipy, CFS merit by hand / brute force / Weka, CV search."""

from __future__ import annotations

import itertools
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sklearn.linear_model import LinearRegression, Ridge
from sklearn.model_selection import KFold, cross_val_score
from sklearn.pipeline import Pipeline

import qe.selection
from qe.config.experiment import ExperimentConfig
from qe.config.rules import registered
from qe.infra.errors import QEInputError
from qe.learners.factory import make_learner
from qe.selection import (
    CFSSelector,
    CorrelationSelector,
    SelectorRecord,
    SequentialSelector,
    cfs_merit,
    make_selector,
    parallel_backend_context,
    registered_selectors,
    write_selection_path,
)

WEKA_JAR = Path("/usr/share/java/weka.jar")


def synthetic(n: int = 240, p: int = 8, seed: int = 0, noise: float = 0.3) -> tuple[np.ndarray, np.ndarray]:
    """Independent normal features; the label depends on features 0 and 3 only."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    y = 3.0 * X[:, 0] + 2.0 * X[:, 3] + noise * rng.normal(size=n)
    return X, y


def correlated(n: int, p: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Features sharing latent factors (so CFS has redundancy to avoid); label from the first three."""
    rng = np.random.default_rng(seed)
    latent = rng.normal(size=(n, 4))
    X = latent @ rng.normal(size=(4, p)) + rng.normal(size=(n, p)) * rng.uniform(0.3, 2.0, size=p)
    y = X[:, :3] @ rng.normal(size=3) + 2.0 * rng.normal(size=n)
    return X, y


# --------------------------------------------------------------------------- correlation ranking


@pytest.mark.parametrize("method", ["pearson", "spearman"])
def test_correlation_ranking_matches_scipy(method: str) -> None:
    rng = np.random.default_rng(1)
    X = rng.normal(size=(150, 6)) + np.outer(np.linspace(-1, 1, 150), [0.1, 2.0, -0.5, 0.0, -3.0, 1.0])
    X[:, 3] = np.round(X[:, 3])  # ties for Spearman's average ranks
    y = np.linspace(-1, 1, 150) + rng.normal(size=150)
    function = stats.pearsonr if method == "pearson" else stats.spearmanr
    expected_r = np.array([function(X[:, j], y).statistic for j in range(6)])
    selector = CorrelationSelector(method=method, k=3).fit(X, y)
    np.testing.assert_allclose(selector.correlations_, expected_r, atol=1e-12)
    expected_order = sorted(range(6), key=lambda j: -abs(expected_r[j]))
    assert list(selector.ranking_) == expected_order
    assert [step["feature"] for step in selector.path_] == expected_order[:3]
    assert sorted(selector.get_support(indices=True)) == sorted(expected_order[:3])
    np.testing.assert_allclose(selector.transform(X), X[:, sorted(expected_order[:3])])


def test_correlation_uses_dataframe_names_and_drops_constant_features() -> None:
    X, y = synthetic(p=4)
    frame = pd.DataFrame(X, columns=["a", "b", "c", "d"]).assign(const=1.0)
    selector = CorrelationSelector().fit(frame, y)
    assert selector.scores_[4] == 0.0
    assert selector.get_feature_names_out().tolist() == ["a", "b", "c", "d"]
    assert selector.selected_features()[:2] == ["a", "d"]


def test_correlation_selecting_nothing_is_an_error_unless_allowed() -> None:
    X, y = synthetic(p=4)
    with pytest.raises(ValueError, match="selection would select nothing"):
        CorrelationSelector(threshold=0.99).fit(X, y)
    with pytest.raises(ValueError, match="selection would select nothing"):
        CorrelationSelector(k=0).fit(X, y)
    selector = CorrelationSelector(threshold=0.99, allow_empty=True).fit(X, y)
    assert not selector.get_support().any()
    assert selector.path_ == []


def test_bad_input_is_a_value_error_as_in_scikit_learn() -> None:
    X, y = synthetic(p=4)
    X[5, 1] = np.nan
    with pytest.raises(ValueError, match="Input X contains NaN"):
        CorrelationSelector().fit(X, y)
    with pytest.raises(ValueError, match="label is constant"):
        CorrelationSelector().fit(np.ones((10, 2)) * np.arange(10)[:, None], np.ones(10))
    with pytest.raises(ValueError, match="parameter of CorrelationSelector must be a str among"):
        CorrelationSelector(method="kendall").fit(*synthetic(p=4))


# --------------------------------------------------------------------------- CFS


def test_cfs_merit_equals_hall_formula_on_three_features() -> None:
    x1 = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    x2 = np.array([2.0, 1.0, 4.0, 3.0, 6.0, 5.0])
    x3 = np.array([1.0, 3.0, 2.0, 3.0, 1.0, 2.0])
    y = np.array([1.5, 1.0, 3.5, 4.0, 5.5, 5.0])
    X = np.column_stack([x1, x2, x3])
    r = lambda a, b: abs(stats.pearsonr(a, b).statistic)  # noqa: E731
    r_cf = [r(x1, y), r(x2, y), r(x3, y)]
    r_ff = [r(x1, x2), r(x1, x3), r(x2, x3)]
    k = 3
    by_hand = k * np.mean(r_cf) / np.sqrt(k + k * (k - 1) * np.mean(r_ff))
    assert cfs_merit(X, y, [0, 1, 2]) == pytest.approx(by_hand, abs=1e-12)
    assert cfs_merit(X, y, [1]) == pytest.approx(r_cf[1], abs=1e-12)
    pair = 2 * np.mean([r_cf[0], r_cf[2]]) / np.sqrt(2 + 2 * r_ff[1])
    assert cfs_merit(X, y, [0, 2]) == pytest.approx(pair, abs=1e-12)
    # A constant feature correlates 0 with everything: it only adds 1 to the denominator's k.
    with_const = np.column_stack([x1, np.full(6, 7.0)])
    assert cfs_merit(with_const, y, [0, 1]) == pytest.approx(r_cf[0] / np.sqrt(2), abs=1e-12)
    assert cfs_merit(X, y, []) == 0.0


def test_best_first_with_a_long_memory_finds_the_brute_force_optimum() -> None:
    X, y = correlated(120, 7, seed=3)
    r = lambda a, b: abs(stats.pearsonr(a, b).statistic)  # noqa: E731

    def merit(subset: tuple[int, ...]) -> float:
        k = len(subset)
        mean_cf = np.mean([r(X[:, i], y) for i in subset])
        mean_ff = np.mean([r(X[:, i], X[:, j]) for i, j in itertools.combinations(subset, 2)]) if k > 1 else 0
        return k * mean_cf / np.sqrt(k + k * (k - 1) * mean_ff)

    subsets = [s for k in range(1, 8) for s in itertools.combinations(range(7), k)]
    best = max(subsets, key=merit)
    selector = CFSSelector(max_stale=200, locally_predictive=False).fit(X, y)
    assert selector.merit_ == pytest.approx(merit(best), abs=1e-5)
    assert tuple(selector.get_support(indices=True)) == best
    greedy = CFSSelector(search="greedy", locally_predictive=False).fit(X, y)
    assert greedy.merit_ <= selector.merit_ + 1e-12
    # the path records each improvement of the best subset, ending at the selection
    assert selector.path_[-1]["subset"] == list(best)
    assert all(a["score"] < b["score"] for a, b in itertools.pairwise(selector.path_))


def test_cfs_on_constant_features_selects_nothing() -> None:
    X = np.ones((20, 3)) * np.array([1.0, 2.0, 3.0])
    y = np.arange(20.0)
    with pytest.raises(ValueError, match="selection would select nothing"):
        CFSSelector().fit(X, y)
    assert not CFSSelector(allow_empty=True).fit(X, y).get_support().any()


def _write_arff(path: Path, X: np.ndarray, y: np.ndarray) -> None:
    lines = ["@relation cfs_test"]
    lines += [f"@attribute f{i} numeric" for i in range(X.shape[1])]
    lines += ["@attribute class numeric", "@data"]
    lines += [",".join(repr(float(v)) for v in [*row, label]) for row, label in zip(X, y, strict=True)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _weka_cfs(arff: Path, search: str, locally_predictive: bool) -> list[int]:
    command = ["java", "-cp", str(WEKA_JAR), "weka.attributeSelection.CfsSubsetEval", "-i", str(arff)]
    command += ["-s", search] + ([] if locally_predictive else ["-L"])
    output = subprocess.run(command, capture_output=True, text=True, check=True, timeout=120).stdout
    match = re.search(r"Selected attributes: ([\d,]+) :", output)
    assert match, output
    return [int(v) - 1 for v in match.group(1).split(",")]


WEKA_SEARCHES = [("best_first", "weka.attributeSelection.BestFirst -D 1 -N 5"),
                 ("greedy", "weka.attributeSelection.GreedyStepwise")]  # fmt: skip
needs_weka = pytest.mark.skipif(
    shutil.which("java") is None or not WEKA_JAR.is_file(), reason="java or /usr/share/java/weka.jar missing"
)


def _compare_with_weka(tmp_path: Path, X: np.ndarray, y: np.ndarray) -> None:
    # Weka's CfsSubsetEval weights each feature by its standard deviation, so it computes
    # Hall's standardized merit only on standardized data: give it z-scores.
    Z = (X - X.mean(axis=0)) / X.std(axis=0)
    arff = tmp_path / "data.arff"
    _write_arff(arff, Z, y)
    for ours, weka_search in WEKA_SEARCHES:
        for locally_predictive in (True, False):
            expected = _weka_cfs(arff, weka_search, locally_predictive)
            selector = CFSSelector(search=ours, locally_predictive=locally_predictive).fit(X, y)
            assert selector.get_support(indices=True).tolist() == expected, (ours, locally_predictive)


@needs_weka
@pytest.mark.parametrize("seed", [0, 7])
def test_cfs_selects_the_same_subsets_as_weka(tmp_path: Path, seed: int) -> None:
    X, y = correlated(200, 16, seed)
    _compare_with_weka(tmp_path, X, y)


@needs_weka
@pytest.mark.data
def test_cfs_matches_weka_on_wmt12_official_features(tmp_path: Path, data_dir: Path) -> None:
    from qe.data import load_registered, load_registered_features

    X = load_registered_features("wmt12-en-es", "wmt12-official-bf17", "train", data_dir).to_numpy()
    y = load_registered("wmt12-en-es", "train", data_dir).labels
    _compare_with_weka(tmp_path, X, y)


# --------------------------------------------------------------------------- greedy CV selection


def _cv_mae(estimator, X: np.ndarray, y: np.ndarray, columns: list[int], folds: int = 5) -> float:
    cv = KFold(folds, shuffle=True, random_state=42)
    return -cross_val_score(estimator, X[:, columns], y, cv=cv, scoring="neg_mean_absolute_error").mean()


def test_forward_selection_with_svr_picks_the_informative_features_first() -> None:
    X, y = synthetic(n=200, p=8)
    selector = SequentialSelector(direction="forward", n_jobs=2).fit(X, y)
    assert {selector.path_[1]["feature"], selector.path_[2]["feature"]} == {0, 3}
    assert selector.path_[0]["feature"] is None
    # path scores are the sklearn cross-validated MAE of the subset after each step
    for step in selector.path_[1:]:
        columns = [s["feature"] for s in selector.path_[1 : step["step"] + 1]]
        assert step["score"] == pytest.approx(_cv_mae(make_learner("svr"), X, y, columns), abs=1e-9)
    baseline = np.mean([np.abs(y[test] - y[train].mean()).mean() for train, test in
                        KFold(5, shuffle=True, random_state=42).split(X)])  # fmt: skip
    assert selector.path_[0]["score"] == pytest.approx(baseline, abs=1e-12)
    assert selector.score_ == selector.path_[-1]["score"] < selector.baseline_score_


def test_forward_selection_stops_at_tolerance_and_max_features() -> None:
    X, y = synthetic(n=200, p=8, noise=0.5)
    by_tol = SequentialSelector(Ridge(), tol=0.05).fit(X, y)
    assert sorted(by_tol.get_support(indices=True)) == [0, 3]
    capped = SequentialSelector(Ridge(), max_features=1).fit(X, y)
    assert capped.get_support(indices=True).tolist() == [0]  # 3 * x0 explains more than 2 * x3


def test_forward_selection_with_delta_avg_scoring() -> None:
    rng = np.random.default_rng(5)
    X = rng.normal(size=(200, 5))
    y = X[:, 2] + 0.2 * rng.normal(size=200)
    selector = SequentialSelector(LinearRegression(), scoring="DeltaAvg", max_features=1).fit(X, y)
    assert selector.path_[1]["feature"] == 2
    assert selector.path_[1]["score"] > selector.path_[0]["score"]


def test_backward_elimination_drops_the_noise_features() -> None:
    X, y = synthetic(n=200, p=7)
    selector = make_selector("backward", estimator=Ridge(), tol=0.01).fit(X, y)
    assert sorted(selector.get_support(indices=True)) == [0, 3]
    dropped = [step["feature"] for step in selector.path_[1:]]
    assert sorted(dropped) == [1, 2, 4, 5, 6]
    assert selector.path_[0]["n_features"] == 7
    assert selector.path_[0]["score"] == pytest.approx(_cv_mae(Ridge(), X, y, list(range(7))), abs=1e-9)


def test_sequential_selecting_nothing_is_an_error_unless_allowed() -> None:
    rng = np.random.default_rng(2)
    X, y = rng.normal(size=(100, 4)), rng.normal(size=100)
    with pytest.raises(ValueError, match="selection would select nothing"):
        SequentialSelector(Ridge(), tol=0.05).fit(X, y)
    selector = SequentialSelector(Ridge(), tol=0.05, allow_empty=True).fit(X, y)
    assert not selector.get_support().any()
    assert selector.score_ == selector.baseline_score_


def test_sequential_keeps_dataframe_names_and_works_in_a_pipeline() -> None:
    X, y = synthetic(n=150, p=5)
    frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(5)])
    pipeline = Pipeline(
        [("select", make_selector("forward", estimator=Ridge(), tol=0.05)), ("model", Ridge())]
    )
    pipeline.fit(frame, y)
    selector = pipeline.named_steps["select"]
    assert selector.selected_features() == ["f0", "f3"]
    assert pipeline.predict(frame).shape == (150,)


@pytest.mark.parametrize(
    ("name", "params", "message"),
    [
        ("lasso", {}, "unknown selector"),
        ("forward", {"direction": "backward"}, "fixes parameter"),
        ("cfs", {"depth": 3}, "unknown parameter"),
    ],
)
def test_make_selector_rejects_bad_configs(name: str, params: dict, message: str) -> None:
    with pytest.raises(QEInputError, match=message):
        make_selector(name, **params)


def test_make_selector_builds_learners_by_name_and_bad_params_fail_at_fit() -> None:
    X, y = synthetic(n=100, p=4)
    selector = make_selector("forward", estimator="svr", estimator_params={"C": 10.0}, cv=3, max_features=1)
    assert selector.fit(X, y).get_support(indices=True).tolist() == [0]
    with pytest.raises(QEInputError, match=r"selection\.params\.scoring = 'R2': expected a str among"):
        make_selector("forward", scoring="R2").fit(X, y)
    with pytest.raises(QEInputError, match="bad parameter"):
        make_selector("forward", estimator="svr", estimator_params={"depth": 2}).fit(X, y)


def test_each_selector_is_a_record_whose_names_the_config_schema_takes() -> None:
    records = registered_selectors()
    assert list(records) == registered("selector")() == ["backward", "cfs", "correlation", "forward"]
    assert {name: record.cls for name, record in records.items()} == {
        "backward": SequentialSelector,
        "cfs": CFSSelector,
        "correlation": CorrelationSelector,
        "forward": SequentialSelector,
    }
    assert (
        make_selector("backward").direction == "backward" and make_selector("forward").direction == "forward"
    )
    # What a selector takes from the run: the searches with a learner in the loop its seed, folds and jobs.
    assert records["forward"].run_defaults(7, 3, 2) == {"random_state": 7, "cv": 3, "n_jobs": 2}
    assert records["cfs"].run_defaults(7, 3, 2) == {} == records["correlation"].run_defaults(7, 3, 2)
    with pytest.raises(ValueError, match="a run has no value for depth"):
        SelectorRecord("deep", CFSSelector, from_run=("depth",))


KEEP_ALL = """
from qe.selection import SelectorRecord, register_selector
from qe.selection.base import PathSelector


class KeepAll(PathSelector):
    def __init__(self, allow_empty=False):
        self.allow_empty = allow_empty

    def fit(self, X, y):
        X, y = self._check_input(X, y)
        self.path_ = []
        self._set_support(range(X.shape[1]), "no columns")
        return self


register_selector(SelectorRecord("keep_all", KeepAll))
"""


def test_a_new_selector_is_one_record_in_one_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    (tmp_path / "keep_all.py").write_text(KEEP_ALL, encoding="utf-8")
    monkeypatch.setattr(qe.selection, "__path__", [*qe.selection.__path__, str(tmp_path)])
    monkeypatch.setattr(qe.selection, "_REGISTRY", dict(qe.selection._REGISTRY))  # all forgotten after
    monkeypatch.setattr(qe.selection, "_loaded", False)
    monkeypatch.setattr(qe.selection, "keep_all", None, raising=False)
    request.addfinalizer(lambda: sys.modules.pop("qe.selection.keep_all", None))
    assert "keep_all" in registered("selector")()
    X, y = synthetic(p=4)
    assert make_selector("keep_all").fit(X, y).get_support().tolist() == [True] * 4
    with pytest.raises(QEInputError, match=r"selection\.params\.allow_empty = 'no': expected"):
        make_selector("keep_all", allow_empty="no")  # the base class's constraints


def test_write_selection_path(tmp_path: Path) -> None:
    X, y = synthetic(p=4)
    selector = CFSSelector().fit(pd.DataFrame(X, columns=list("abcd")), y)
    out = tmp_path / "sel" / "path.json"
    write_selection_path(selector, out)
    report = json.loads(out.read_text())
    assert report["selected"] == ["a", "d"]
    assert [step["feature"] for step in report["path"]][:2] == ["a", "d"]
    assert report["params"]["search"] == "best_first"


# --------------------------------------------------------------------------- parallel backends


def test_backend_switch_rejects_bad_names() -> None:
    with pytest.raises(QEInputError, match="unknown parallel backend"), parallel_backend_context("spark"):
        pass
    address = "tcp://127.0.0.1:8786"
    with (
        pytest.raises(QEInputError, match="scheduler"),
        parallel_backend_context("loky", scheduler=address),
    ):
        pass


@pytest.mark.slow
def test_dask_backend_gives_the_same_selection_as_loky() -> None:
    distributed = pytest.importorskip("distributed")
    from joblib.parallel import get_active_backend

    X, y = synthetic(n=150, p=8, seed=4, noise=1.0)

    def select() -> SequentialSelector:
        return SequentialSelector(Ridge(), cv=3, tol=0.0).fit(X, y)

    with parallel_backend_context("loky", n_jobs=2):
        local = select()
    # a LocalCluster started by the context (threaded workers) ...
    with parallel_backend_context("dask", n_jobs=2, processes=False) as client:
        assert type(get_active_backend()[0]).__name__ == "DaskDistributedBackend"
        on_dask = select()
        assert len(client.scheduler_info()["workers"]) == 2
    # ... and an existing cluster of 2 worker processes, reached by its scheduler address
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None)
    with cluster, parallel_backend_context("dask", scheduler=cluster.scheduler_address) as client:
        on_cluster = select()
        assert sum(client.run(lambda: 1).values()) == 2
    assert on_dask.path_ == local.path_
    assert on_cluster.path_ == local.path_
    assert on_dask.get_support().tolist() == on_cluster.get_support().tolist() == local.get_support().tolist()
    assert {local.path_[1]["feature"], local.path_[2]["feature"]} == {0, 3}


@pytest.mark.parametrize(
    ("name", "params", "message"),
    [
        ("correlation", {"threshold": "x"}, "threshold = 'x': expected a float"),  # a numpy error before
        ("correlation", {"k": True}, "k = true: expected an int in the range [0, inf)"),  # ran as k = 1
        ("correlation", {"allow_empty": "yes"}, "allow_empty = 'yes': expected an instance of 'bool'"),
        ("forward", {"tol": "x"}, "tol = 'x': expected a float"),  # TypeError before
        ("forward", {"n_jobs": 0}, "n_jobs = 0: expected an int in the range [1, inf)"),  # joblib's error
        ("forward", {"estimator": "bogus"}, "selection.params.estimator: unknown learner 'bogus'"),
        ("forward", {"estimator": Ridge(), "estimator_params": {"alpha": 1.0}}, "estimator_params only"),
        ("cfs", {"max_stale": 2.5}, "max_stale = 2.5: expected an int in the range [1, inf)"),
    ],
)
def test_selector_parameters_are_checked_when_the_selector_is_made(name, params, message):
    """Checked by make_selector (so by config loading, naming the file), not after extraction."""
    with pytest.raises(QEInputError) as caught:
        make_selector(name, **params)
    assert str(caught.value).startswith("selection.params.") and message in str(caught.value)


class FirstK(qe.selection.PathSelector):
    """A selector with a seed, as a plug-in would define one: the first ``k`` columns."""

    def __init__(self, k=2, random_state=None, allow_empty=False):
        self.k = k
        self.random_state = random_state
        self.allow_empty = allow_empty

    def fit(self, X, y):
        X, y = self._check_input(X, y)
        self.path_ = [{"step": i, "feature": self._label(i), "score": float(i)} for i in range(self.k)]
        self._set_support(range(self.k), "k = 0")
        return self


def test_a_run_gives_a_selector_what_its_record_takes_from_the_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """The run stage once filled in the seed, folds and jobs for "forward" and "backward" by name; now any
    record's ``from_run`` applies, and a report names the path's score by the record's ``path_score``."""
    from qe.data import QEDataset
    from qe.report.plots import selection_score_name
    from qe.run.context import RunContext
    from qe.run.extraction import SplitData
    from qe.run.selection import select_features

    registered_selectors()  # the built-in ones loaded first, then ours beside them
    record = SelectorRecord(
        "first_k", FirstK, from_run=("random_state",), path_score="rank {k} (seed {random_state})"
    )
    monkeypatch.setitem(qe.selection._REGISTRY, "first_k", record)
    X, y = synthetic(n=30, p=4)
    names = [str(i) for i in range(30)]
    train = SplitData(QEDataset(names, names, names, y), pd.DataFrame(X, columns=list("abcd")))
    config = {
        "name": "first",
        "selection": {"name": "first_k", "params": {"k": 3}},
        "seed": 11,
        "cv": {"folds": 3, "n_jobs": 1},
        "learner": {"name": "svr"},
    }
    selected, report = select_features(RunContext(ExperimentConfig.from_document(config)), train)
    assert selected == ["a", "b", "c"]
    assert report["params"] == {
        "k": 3,
        "random_state": 11,
        "allow_empty": False,
    }  # 2bfca9c: random_state None
    assert selection_score_name(report) == "rank 3 (seed 11)"  # 2bfca9c: "score"
    config["selection"]["params"]["random_state"] = 5  # the config's own value wins
    ctx = RunContext(ExperimentConfig.from_document(config))
    assert select_features(ctx, train)[1]["params"]["random_state"] == 5


@pytest.mark.parametrize(
    ("selector", "params", "name"),
    [
        ("CFSSelector", {"search": "greedy"}, "CFS merit"),
        ("CorrelationSelector", {"method": "spearman"}, "|spearman r| with the label"),
        ("CorrelationSelector", {}, "|pearson r| with the label"),  # the class's default
        ("SequentialSelector", {"scoring": "pearson"}, "CV pearson"),
        ("RetiredSelector", {}, "score"),  # a report of a selector no longer registered
    ],
)
def test_a_selection_reports_score_is_named_by_its_record(selector: str, params: dict, name: str) -> None:
    from qe.report.plots import selection_score_name

    assert selection_score_name({"selector": selector, "params": params}) == name
