"""The learner records (qe.learners.factory.LEARNERS): one record per learner carries its builder,
scaling, seeding, default grid and the classes its model file holds, and the model reader's allow-list
(qe.model.allowlist.MODEL_TYPES) is made of those classes, no more."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
from skops.io import dump

from qe.learners.factory import DEFAULT_FAST_GRID, DEFAULT_SVR_GRID, LEARNERS, make_learner
from qe.model.allowlist import MODEL_TYPES, read_schema

REPO = Path(__file__).resolve().parents[1]
# What any model may hold whatever its learner: containers, numpy values, the pipeline around it.
COMMON = {
    "builtins.dict",
    "builtins.list",
    "builtins.str",
    "builtins.tuple",
    "numpy.ndarray",
    "numpy.float64",
    "numpy.uint64",
    "numpy.random._generator.Generator",
    "numpy.random.mtrand.RandomState",
    "sklearn.pipeline.Pipeline",
    "sklearn.preprocessing._data.StandardScaler",
}
SMALL = {
    "random_forest": {"n_estimators": 3},
    "extra_trees": {"n_estimators": 3},
    "svr_fast": {"n_components": 10},
}
SMALL["gradient_boosting"] = {"max_iter": 5}


def _saved_types(estimator, path: Path) -> set[str]:
    dump(estimator, path)
    with zipfile.ZipFile(path) as archive:
        _, refused, present = read_schema(archive, path.stat().st_size)
    assert not refused
    return set(present)


@pytest.mark.parametrize("name", [n for n, record in LEARNERS.items() if not record.nested])
def test_a_learner_record_lists_the_classes_its_fitted_model_holds(tmp_path, name):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(40, 3))
    y = x[:, 0] + rng.normal(0, 0.1, 40)
    estimator = make_learner(name, SMALL.get(name)).fit(x, y)
    own = _saved_types(estimator, tmp_path / "m.skops") - COMMON
    assert own and own <= set(LEARNERS[name].saves)


def test_the_model_readers_allow_list_is_the_records_classes_and_no_more():
    assert COMMON | {kind for record in LEARNERS.values() for kind in record.saves} == MODEL_TYPES
    assert "sklearn.preprocessing._function_transformer.FunctionTransformer" not in MODEL_TYPES


def test_records_carry_scaling_seeding_and_default_grids():
    """Kernel and linear learners see standardized features, trees do not; what draws random numbers
    or cuts folds follows the run's seed; svr and svr_fast have the documented default grids."""
    assert {n for n, r in LEARNERS.items() if r.scaled} == {"svr", "svr_fast", "kernel_ridge", "ridge", "gp"}
    assert {n for n, r in LEARNERS.items() if not r.seeded} == {"svr", "m5p", "mean", "kernel_ridge", "ridge"}
    assert {n: r.grid for n, r in LEARNERS.items() if r.grid} == {
        "svr": DEFAULT_SVR_GRID,
        "svr_fast": DEFAULT_FAST_GRID,
    }
    forest = make_learner("random_forest", {"n_estimators": 2}, seed=7)
    assert [step for step, _ in forest.steps] == ["model"] and forest[-1].random_state == 7
    assert [step for step, _ in make_learner("ridge").steps] == ["scale", "model"]


LASSO = """    LearnerRecord(
        "lasso",
        _lasso,
        scaled=True,
        seeded=True,
        grid={"alpha": [0.01, 0.1]},
        saves=("sklearn.linear_model._coordinate_descent.Lasso",),
    ),
"""
LASSO_BUILDER = """def _lasso(**params: Any) -> BaseEstimator:
    from sklearn.linear_model import Lasso

    return Lasso(**params)


"""


def test_one_new_record_in_the_factory_is_a_learner_configs_and_model_files_accept(tmp_path):
    """A learner added as one record (and its builder) to a copy of qe/learners/factory.py, nothing
    else: make_learner builds it scaled, seeded and searched on its default grid, the config schema
    names it, and the model reader allows its class."""
    shutil.copytree(REPO / "qe", tmp_path / "qe", ignore=shutil.ignore_patterns("__pycache__"))
    source = tmp_path / "qe" / "learners" / "factory.py"
    text = source.read_text()
    anchor = "LEARNERS: dict[str, LearnerRecord] = _register(\n"
    assert text.count(anchor) == 1
    source.write_text(text.replace(anchor, LASSO_BUILDER + anchor + LASSO))
    code = """
import json
from qe.learners.factory import make_learner
from qe.model.allowlist import MODEL_TYPES
from qe.config.rules import registered
search = make_learner("lasso", grid="default", seed=3)
print(json.dumps({
    "steps": [step for step, _ in search.estimator.steps],
    "seed": search.estimator[-1].random_state,
    "grid": search.param_grid,
    "allowed": "sklearn.linear_model._coordinate_descent.Lasso" in MODEL_TYPES,
    "named": "lasso" in registered("learner")(),
}))
"""
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300
    )
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout.splitlines()[-1])
    assert found == {
        "steps": ["scale", "model"],
        "seed": 3,
        "grid": {"model__alpha": [0.01, 0.1]},
        "allowed": True,
        "named": True,
    }
