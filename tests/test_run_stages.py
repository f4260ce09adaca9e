"""The stages of a run, qe.run (load the splits, build the features, fit, evaluate, write the run), on a
toy feature table, against scikit-learn used by hand; and per-split family settings."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import pearsonr
from sklearn.model_selection import KFold
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVR

from qe.config.document import freeze
from qe.config.features import FeaturesConfig, split_settings
from qe.data.splits import load_split
from qe.infra.errors import QEInputError
from qe.model.file import QEModel
from qe.run.config import load_config
from qe.run.context import RunContext
from qe.run.evaluate import fit_and_evaluate
from qe.run.extraction import build_split
from qe.run.pipeline import run_experiment
from tests.helpers import write_config, write_lines


def test_split_settings_override_shared_keys_per_split():
    settings = {
        "decoder": {
            "missing": "nan",
            "train": {"nbest": "a.nbest"},
            "test": {"nbest": "b.nbest", "missing": "error"},
        },
        "surface": {"style": "moses"},
    }
    assert split_settings(settings, "train") == {
        "decoder": {"missing": "nan", "nbest": "a.nbest"},
        "surface": {"style": "moses"},
    }
    assert split_settings(settings, "test")["decoder"] == {"missing": "error", "nbest": "b.nbest"}
    assert split_settings(settings, "predict")["decoder"] == {"missing": "nan"}


# ---------------------------------------------------------------------- the run stages, on a toy table
# 40 training and 12 test rows of two features; the label is 1 + 0.5 a + 0.2 b (within [1, 5]).


def _rows(n: int, offset: int) -> tuple[np.ndarray, np.ndarray]:
    i = np.arange(offset, offset + n)
    x = np.column_stack([i % 7, (3 * i) % 5]).astype(float)
    return x, 1 + 0.5 * x[:, 0] + 0.2 * x[:, 1]


def _toy_run_config(tmp_path: Path, learner: dict, **data) -> dict:
    splits = {}
    for split, n, offset in (("train", 40, 0), ("test", 12, 100)):
        x, y = _rows(n, offset)
        table = write_lines(tmp_path / f"{split}.tsv", ["a\tb"] + [f"{p:g}\t{q:g}" for p, q in x])
        labels = write_lines(tmp_path / f"{split}.labels", [f"{v:g}" for v in y])
        splits[split] = {"features": str(table), "labels": str(labels)}
    config = {
        "name": "toy-table",
        "seed": 7,
        "data": {"label_range": [1, 5], **splits, **data},
        "features": {"sets": [], "families": []},
        "learner": learner,
        "cv": {"folds": 4},
    }
    return load_config(write_config(tmp_path / "toy.toml", config))


def _svr_by_hand(x: np.ndarray, y: np.ndarray) -> Pipeline:
    return make_pipeline(StandardScaler(), SVR(kernel="rbf", C=10.0)).fit(x, y)


def test_load_split_reads_the_labels_written(tmp_path: Path) -> None:
    config = _toy_run_config(tmp_path, {"name": "mean"})
    train = load_split(config.data, "train").dataset
    assert len(train) == 40
    np.testing.assert_array_equal(train.labels, _rows(40, 0)[1])


def test_build_split_reads_the_feature_table_in_order(tmp_path: Path) -> None:
    config = _toy_run_config(tmp_path, {"name": "mean"})
    test = build_split(RunContext(config), "test")
    assert list(test.features.columns) == ["a", "b"]
    np.testing.assert_array_equal(test.features.to_numpy(), _rows(12, 100)[0])
    assert test.table_sha256 == hashlib.sha256((tmp_path / "test.tsv").read_bytes()).hexdigest()[:16]


def test_fit_and_evaluate_gives_the_predictions_and_metrics_of_scikit_learn_by_hand(tmp_path: Path) -> None:
    ctx = RunContext(_toy_run_config(tmp_path, {"name": "svr", "params": {"C": 10.0}}))
    train, test = build_split(ctx, "train"), build_split(ctx, "test")
    fitted = fit_and_evaluate(ctx, train, test)
    (x_train, y_train), (x_test, y_test) = _rows(40, 0), _rows(12, 100)
    expected = np.clip(_svr_by_hand(x_train, y_train).predict(x_test), 1, 5)
    np.testing.assert_allclose(fitted.test_pred, expected, rtol=1e-10)
    # CV predictions: the same model on 4 shuffled folds seeded by the config's seed
    cv_expected = np.zeros(40)
    for fit_rows, held in KFold(4, shuffle=True, random_state=7).split(x_train):
        cv_expected[held] = _svr_by_hand(x_train[fit_rows], y_train[fit_rows]).predict(x_train[held])
    np.testing.assert_allclose(fitted.cv_pred, np.clip(cv_expected, 1, 5), rtol=1e-10)
    test_metrics = fitted.metrics["test"]
    assert test_metrics["MAE_exact"] == pytest.approx(np.mean(np.abs(expected - y_test)), rel=1e-9)
    assert test_metrics["Pearson"] == pytest.approx(pearsonr(y_test, expected)[0], rel=1e-9)
    assert fitted.metrics["cv"]["folds"] == 4


def test_fit_and_evaluate_refuses_a_test_split_too_small_to_score(tmp_path: Path) -> None:
    ctx = RunContext(_toy_run_config(tmp_path, {"name": "mean"}))
    train, test = build_split(ctx, "train"), build_split(ctx, "test")
    test.dataset, test.features = test.dataset.subset([0, 1, 2]), test.features.iloc[:3]
    with pytest.raises(QEInputError, match="the test split has 3 sentences; scoring needs 4"):
        fit_and_evaluate(ctx, train, test)


def test_run_experiment_writes_the_fitted_models_predictions_metrics_and_model(tmp_path: Path) -> None:
    config = _toy_run_config(tmp_path, {"name": "svr", "params": {"C": 10.0}})
    metrics = run_experiment(config, tmp_path / "run", progress=False)
    (x_train, y_train), (x_test, y_test) = _rows(40, 0), _rows(12, 100)
    expected = np.clip(_svr_by_hand(x_train, y_train).predict(x_test), 1, 5)
    rows = (tmp_path / "run" / "predictions.tsv").read_text().splitlines()
    assert rows[0] == "id\tscore" and [r.split("\t")[0] for r in rows[1:]] == [str(k) for k in range(12)]
    np.testing.assert_allclose([float(r.split("\t")[1]) for r in rows[1:]], expected, atol=5e-7)
    assert json.loads((tmp_path / "run" / "metrics.json").read_text())["test"] == metrics["test"]
    assert metrics["test"]["MAE_exact"] == pytest.approx(np.mean(np.abs(expected - y_test)), rel=1e-9)
    model = QEModel.load(tmp_path / "run" / "model.skops")
    assert model.feature_names == ["a", "b"]
    np.testing.assert_allclose(
        model.checked_scores(pd.DataFrame(x_test, columns=["a", "b"]))[0], expected, rtol=1e-10
    )
    assert (tmp_path / "run" / "signature.txt").read_text() == metrics["signature"] + "\n"


def test_the_systems_of_a_run_share_its_splits_families_and_learner(tmp_path: Path) -> None:
    config = _toy_run_config(tmp_path, {"name": "svr", "params": {"C": 10.0}})
    config = config.replace(features=FeaturesConfig(families=("surface",)))
    ctx = RunContext(config)
    settings = freeze({"surface": {"style": "wmt12"}})
    other = ctx.system(config.replace(features=FeaturesConfig(families=("surface",), settings=settings)))
    assert other.dataset("train") is ctx.dataset("train") and other.loaded("test") is ctx.loaded("test")
    (ours,), _ = ctx.families("train")
    assert ctx.families("test")[0] == [ours]  # the same settings on both splits: one family
    (theirs,), _ = other.families("train")
    assert theirs is not ours and (ours.settings["style"], theirs.settings["style"]) == ("moses", "wmt12")
    first, second = ctx.learner(40), other.learner(40)
    assert first is not second and first.get_params()["model__C"] == second.get_params()["model__C"] == 10.0
    assert not hasattr(first, "n_features_in_")  # each fit gets its own unfitted copy
