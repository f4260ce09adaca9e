"""Scoring without scikit-learn (qe.predictors.reader): for every learner the factory builds, the numpy
predictions of a saved model equal scikit-learn's own ``predict`` on the same file, and damaged
arrays or trees are refused when the model loads instead of reaching a prediction."""

from __future__ import annotations

import io
import json
import zipfile

import numpy as np
import pytest

from qe.infra.errors import QEInputError
from qe.model.file import QEModel, load_model, save_model
from qe.predictors.m5p_tree import apply_tree
from tests.helpers.learners import FACTORY_SPECS, MANIFEST, fit_factory_learner


def _fitted(name: str, spec: dict):
    return fit_factory_learner(name, spec)[0]


@pytest.mark.parametrize(
    "name,spec",
    FACTORY_SPECS,
    ids=[f"{n}-{i}" for i, (n, _) in enumerate(FACTORY_SPECS)],
)
def test_numpy_scores_equal_scikit_learns_for_every_learner(tmp_path, name, spec):
    chosen = _fitted(name, spec)
    path = tmp_path / "m.skops"
    save_model(path, chosen, ["a", "b", "c"], MANIFEST)
    model = QEModel.load(path)
    rows = np.random.default_rng(7).normal(scale=2.0, size=(200, 3))
    reference, _, _ = load_model(path)  # scikit-learn's estimator, built by skops from the same file
    expected = reference.predict(rows)
    np.testing.assert_allclose(model._plain(rows), expected, rtol=1e-9, atol=1e-9)
    assert model.estimator is not None  # built on demand, the same model
    np.testing.assert_array_equal(model.estimator.predict(rows), expected)
    assert model.feature_names == ["a", "b", "c"] and model.manifest == MANIFEST


def test_gradient_boosting_and_m5p_route_missing_values_as_scikit_learn_does(tmp_path):
    rows = np.random.default_rng(3).normal(size=(50, 3))
    rows[::3, 0] = np.nan
    rows[1::4, 2] = np.nan
    for name, spec in (("gradient_boosting", {"params": {"max_iter": 10}}), ("m5p", {})):
        chosen = _fitted(name, spec)
        save_model(tmp_path / f"{name}.skops", chosen, ["a", "b", "c"], MANIFEST)
        plain = QEModel.load(tmp_path / f"{name}.skops")._plain
        np.testing.assert_allclose(plain(rows), chosen.predict(rows), rtol=1e-12, atol=1e-12)


def test_missing_values_are_refused_where_scikit_learn_refuses_them(tmp_path):
    chosen = _fitted("svr", {})
    save_model(tmp_path / "m.skops", chosen, ["a", "b", "c"], MANIFEST)
    plain = QEModel.load(tmp_path / "m.skops")._plain
    rows = np.ones((2, 3))
    rows[1, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        chosen.predict(rows)
    with pytest.raises(ValueError, match="NaN"):
        plain(rows)
    rows[1, 1] = np.inf
    with pytest.raises(ValueError, match="infinity"):
        plain(rows)


def _rewrite_array(path, attribute: str, change) -> None:
    """Replace one array of the first object holding ``attribute`` in a skops file."""
    with zipfile.ZipFile(path) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    schema = json.loads(members["schema.json"])
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            content = node.get("content")
            if isinstance(content, dict) and attribute in content and "file" in content[attribute]:
                name = content[attribute]["file"]
                array = np.load(io.BytesIO(members[name]))
                buffer = io.BytesIO()
                np.save(buffer, change(array))
                members[name] = buffer.getvalue()
                break
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)


def test_arrays_of_the_wrong_width_are_refused_when_the_model_loads(tmp_path):
    """These used to fall back to skops, whose libsvm read 2 columns of 3 (or crashed)."""
    path = tmp_path / "m.skops"
    save_model(path, _fitted("svr", {}), ["a", "b", "c"], MANIFEST)
    _rewrite_array(path, "support_vectors_", lambda a: a[:, :2].copy())
    with pytest.raises(
        QEInputError, match=r"m\.skops: SVR\.support_vectors_ has shape \(\d+, 2\), not \(n, 3\)"
    ):
        QEModel.load(path)
    save_model(path, _fitted("svr", {}), ["a", "b", "c"], MANIFEST)
    _rewrite_array(path, "mean_", lambda a: a[:2].copy())
    with pytest.raises(QEInputError, match=r"StandardScaler\.mean_ has shape \(2,\), not \(3,\)"):
        load_model(path)


def test_a_tree_with_a_cycle_is_an_error_not_a_hang():
    tree = {
        "feature": np.array([0, 0, -1]),
        "threshold": np.array([0.0, 0.0, 0.0]),
        "left": np.array([1, 0, -1]),  # node 1 sends rows with x <= 0 back to the root
        "right": np.array([2, 2, -1]),
    }
    assert apply_tree(tree, np.array([[1.0]])).tolist() == [2]
    with pytest.raises(ValueError, match="cycle"):
        apply_tree(tree, np.array([[-1.0]]))


def test_gradient_boosting_cycles_are_refused_when_the_model_loads(tmp_path):
    save_model(
        tmp_path / "m.skops", _fitted("gradient_boosting", {"params": {"max_iter": 3}}), list("abc"), MANIFEST
    )

    def loop(nodes):
        nodes = nodes.copy()
        nodes["left"][0] = 0
        nodes["right"][0] = 0
        nodes["is_leaf"][0] = 0
        return nodes

    _rewrite_array(tmp_path / "m.skops", "nodes", loop)
    with pytest.raises(QEInputError, match="cycle"):
        QEModel.load(tmp_path / "m.skops")
