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
from tests.helpers.zipmembers import read_members, write_zip


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
    members = read_members(path)
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
    write_zip(path, members, zipfile.ZIP_STORED)


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


def _random_tree(rng: np.random.Generator, depth: int):
    """A random tree in pre-order (children after their parent), some splits sending NaN left."""
    from qe.predictors.trees import checked_tree

    feature, threshold, left, right, leaf, value, missing = [], [], [], [], [], [], []

    def grow(level: int) -> int:
        index = len(leaf)
        for column in (feature, threshold, left, right, leaf, value, missing):
            column.append(0)
        if level == depth or rng.random() < 0.25:
            leaf[index], value[index] = True, rng.normal()
            return index
        feature[index], threshold[index] = rng.integers(3), rng.normal()
        missing[index] = rng.random() < 0.5
        left[index] = grow(level + 1)
        right[index] = grow(level + 1)
        return index

    grow(0)
    arrays = [np.array(column) for column in (feature, threshold, left, right, leaf, value, missing)]
    names = ("feature", "threshold", "left", "right", "leaf", "value", "missing_left")
    arrays[4], arrays[6] = arrays[4].astype(bool), arrays[6].astype(bool)
    return checked_tree("a random tree", 3, **dict(zip(names, arrays, strict=True)))


def test_trees_walked_together_reach_the_leaves_each_tree_reaches_alone():
    """``Forest.leaf_values`` (every tree a step at a time) against ``Tree.leaves`` tree by tree, on
    trees of different depths (a leaf alone among them) and rows with missing values."""
    from qe.predictors.trees import Forest

    rng = np.random.default_rng(11)
    trees = [_random_tree(rng, depth) for depth in (0, 1, 3, 6, 9, 9, 12)]
    rows = rng.normal(size=(400, 3))
    rows[::5, 0] = np.nan
    rows[::7, 2] = np.nan
    alone = np.column_stack([tree.value[tree.leaves(rows)] for tree in trees])
    assert np.array_equal(Forest.of(trees).leaf_values(rows), alone)
    assert Forest.of(trees).leaf_values(rows[:0]).shape == (0, len(trees))


def test_a_cumulative_sum_adds_in_loop_order():
    from qe.predictors.trees import added_in_order

    values = np.random.default_rng(1).normal(scale=1e6, size=(50, 300)) * np.logspace(-8, 8, 300)
    start = np.full(50, 0.1)
    looped = start.copy()
    for column in values.T:
        looped += column
    assert np.array_equal(added_in_order(start, values), looped)
    assert not np.array_equal(values.sum(axis=1) + 0.1, looped)  # the plain sum rounds differently
