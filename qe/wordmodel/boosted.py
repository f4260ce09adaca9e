"""A word tagger's gradient-boosting classifier as plain arrays, and its probabilities in numpy.

A fitted binary ``HistGradientBoostingClassifier`` decides by the sigmoid of its baseline plus the
value of the leaf each tree sends the row to (the trees added in order, as scikit-learn adds them).
:func:`tree_arrays` takes its trees' node records apart into one array per field, the trees end to end
(``sizes``: nodes per tree); :func:`boosted_trees` checks such arrays as read from a file (dtypes and
lengths, then every tree with ``qe.predictors.trees.checked_tree``: children after their parent and
inside the tree, features among the model's, no NaN threshold, finite leaf values) and gives a
:class:`BoostedTrees` that walks them with numpy alone: scikit-learn's compiled code never runs on a
file's arrays.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from qe.predictors.check import F8, I8, BadModel, check_array, check_number
from qe.predictors.trees import Forest, added_in_order, checked_tree

U1 = np.dtype("|u1")
TREE_ARRAYS = {
    "sizes": I8,
    "feature": I8,
    "threshold": F8,
    "left": I8,
    "right": I8,
    "leaf": U1,
    "missing_left": U1,
    "value": F8,
}
"""Per kind: nodes per tree, then each node's split feature, threshold, children (indices inside its own
tree), whether it is a leaf, where a missing value goes and its value (read at leaves)."""
MAX_TREES = 10_000
BLOCK = 4096  # rows walked at once: (rows x trees) node indices stay a few tens of MB


@dataclass(frozen=True)
class BoostedTrees:
    """A checked binary gradient-boosting classifier: ``baseline`` plus its trees' leaf values, through
    the sigmoid, is each row's probability of the positive class (BAD)."""

    baseline: float
    forest: Forest | None
    n_features: int

    def raw(self, X: np.ndarray) -> np.ndarray:
        """The decision value of each row of ``X`` (``n_features`` columns; NaN is missing)."""
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != self.n_features:
            raise ValueError(f"expected rows of {self.n_features} features, got shape {X.shape}")
        out = np.full(X.shape[0], self.baseline)
        if self.forest is None:
            return out
        for start in range(0, X.shape[0], BLOCK):
            rows = slice(start, start + BLOCK)
            out[rows] = added_in_order(out[rows], self.forest.leaf_values(X[rows]))
        return out

    def probability(self, X: np.ndarray) -> np.ndarray:
        """Each row's probability of BAD: the sigmoid of :meth:`raw` (scipy's, as scikit-learn's)."""
        from scipy.special import expit

        return expit(self.raw(X))


def tree_arrays(model) -> tuple[float, dict[str, np.ndarray]]:
    """The baseline and the :data:`TREE_ARRAYS` of a fitted binary ``HistGradientBoostingClassifier``
    (numeric features only, one tree per iteration)."""
    if getattr(model, "n_trees_per_iteration_", None) != 1 or len(model.classes_) != 2:
        raise ValueError("only a binary gradient-boosting classifier is saved")
    nodes = [iteration[0].nodes for iteration in model._predictors]
    if any(node["is_categorical"].any() for node in nodes):
        raise ValueError("a gradient-boosting classifier with categorical splits is not saved")
    baseline = float(np.asarray(model._baseline_prediction).reshape(-1)[0])
    if not nodes:
        return baseline, {name: np.zeros(0, dtype=dtype) for name, dtype in TREE_ARRAYS.items()}
    joined = np.concatenate(nodes)
    return baseline, {
        "sizes": np.array([len(node) for node in nodes], dtype=I8),
        "feature": joined["feature_idx"].astype(I8),
        "threshold": joined["num_threshold"].astype(F8),
        "left": joined["left"].astype(I8),
        "right": joined["right"].astype(I8),
        "leaf": joined["is_leaf"].astype(U1),
        "missing_left": joined["missing_go_to_left"].astype(U1),
        "value": joined["value"].astype(F8),
    }


def boosted_trees(
    what: str, baseline: object, arrays: dict[str, np.ndarray], n_features: int
) -> BoostedTrees:
    """A :class:`BoostedTrees` from arrays read from a file, every one checked (``BadModel`` names
    ``what`` and the fault)."""
    base = check_number(baseline, f"{what} baseline", -1e6, 1e6)
    sizes = check_array(arrays["sizes"], f"{what}_sizes", I8, (None,))
    if len(sizes) > MAX_TREES or (sizes < 1).any():
        raise BadModel(f"{what}_sizes is not up to {MAX_TREES:,} tree sizes of at least one node")
    total = int(sizes.sum())
    nodes = {
        name: check_array(arrays[name], f"{what}_{name}", dtype, (total,))
        for name, dtype in TREE_ARRAYS.items()
        if name != "sizes"
    }
    for flag in ("leaf", "missing_left"):
        if (nodes[flag] > 1).any():
            raise BadModel(f"{what}_{flag} holds values other than 0 and 1")
    trees, start = [], 0
    for number, size in enumerate(sizes.tolist()):
        part = {name: values[start : start + size] for name, values in nodes.items()}
        trees.append(
            checked_tree(
                f"{what} tree {number}",
                n_features,
                feature=part["feature"],
                threshold=part["threshold"],
                left=part["left"],
                right=part["right"],
                leaf=part["leaf"] == 1,
                value=part["value"],
                missing_left=part["missing_left"] == 1,
            )
        )
        start += size
    return BoostedTrees(base, Forest.of(trees) if trees else None, n_features)
