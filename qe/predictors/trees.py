"""The decision trees of a model file, checked and walked with numpy (:mod:`qe.predictors.reader`).

Every tree qe saves numbers its nodes so that children come after their parent (scikit-learn's
trees, histogram gradient boosting's predictors and M5P's pre-order arrays), so a tree is accepted
only if every inner node's children lie after it and inside the tree, its feature is one of the
model's and its threshold is not NaN: then every path ends, in at most as many steps as there are
nodes, and no index leaves its array. Leaf values must be finite.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from qe.predictors.check import F8, I8, BadModel, PlainObject, check_array

# scikit-learn's node records (sklearn.tree._tree.NODE_DTYPE and the histogram gradient boosting
# predictor's PREDICTOR_RECORD_DTYPE), exactly as the versions qe supports save them.
TREE_NODE = np.dtype(
    {
        "names": [
            "left_child",
            "right_child",
            "feature",
            "threshold",
            "impurity",
            "n_node_samples",
            "weighted_n_node_samples",
            "missing_go_to_left",
        ],
        "formats": ["<i8", "<i8", "<i8", "<f8", "<f8", "<i8", "<f8", "u1"],
        "offsets": [0, 8, 16, 24, 32, 40, 48, 56],
        "itemsize": 64,
    }
)
HGB_NODE = np.dtype(
    [
        ("value", "<f8"),
        ("count", "<u4"),
        ("feature_idx", "<i8"),
        ("num_threshold", "<f8"),
        ("missing_go_to_left", "u1"),
        ("left", "<u4"),
        ("right", "<u4"),
        ("gain", "<f8"),
        ("depth", "<u4"),
        ("is_leaf", "u1"),
        ("bin_threshold", "u1"),
        ("is_categorical", "u1"),
        ("bitset_idx", "<u4"),
    ]
)
TREE_LEAF = -1  # scikit-learn's child index of a leaf
TREE_UNDEFINED = -2  # and its feature


@dataclass(frozen=True)
class Tree:
    """A checked binary tree: per node its feature, threshold, children, whether it is a leaf and where
    a missing value goes; ``value``: one finite number per node (read at the leaves)."""

    feature: np.ndarray
    threshold: np.ndarray
    left: np.ndarray
    right: np.ndarray
    leaf: np.ndarray
    value: np.ndarray
    missing_left: np.ndarray | None = None

    def leaves(self, X: np.ndarray) -> np.ndarray:
        """The leaf each row of ``X`` reaches (``x <= threshold`` goes left; NaN by ``missing_left``)."""
        node = np.zeros(X.shape[0], dtype=np.intp)
        active = np.arange(X.shape[0]) if not self.leaf[0] else np.empty(0, dtype=np.intp)
        for _ in range(len(self.leaf)):  # each step goes deeper: at most one step per node
            if not active.size:
                break
            current = node[active]
            x = X[active, self.feature[current]]
            left = x <= self.threshold[current]
            if self.missing_left is not None:
                left = np.where(np.isnan(x), self.missing_left[current], left)
            node[active] = np.where(left, self.left[current], self.right[current])
            active = active[~self.leaf[node[active]]]
        return node


@dataclass(frozen=True)
class Forest:
    """Checked trees walked together, a step of every tree at once (:meth:`leaf_values`): the same
    leaves as each :meth:`Tree.leaves` alone, for a Python loop over depth rather than over trees."""

    tree: Tree  # the trees' nodes end to end, children renumbered to point inside their own tree
    roots: np.ndarray  # the first node of each tree

    @classmethod
    def of(cls, trees: list[Tree]) -> Forest:
        """The trees of one model (at least one), in their order."""
        sizes = np.array([len(tree.leaf) for tree in trees])
        roots = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.intp)
        missing = [tree.missing_left for tree in trees]
        if any(m is None for m in missing) and not all(m is None for m in missing):
            raise BadModel("a model mixing trees with and without a missing-value direction")
        joined = Tree(
            feature=np.concatenate([tree.feature for tree in trees]),
            threshold=np.concatenate([tree.threshold for tree in trees]),
            left=np.concatenate([tree.left + root for tree, root in zip(trees, roots, strict=True)]),
            right=np.concatenate([tree.right + root for tree, root in zip(trees, roots, strict=True)]),
            leaf=np.concatenate([tree.leaf for tree in trees]),
            value=np.concatenate([tree.value for tree in trees]),
            missing_left=None if missing[0] is None else np.concatenate(missing),
        )
        return cls(joined, roots)

    def leaf_values(self, X: np.ndarray) -> np.ndarray:
        """``(rows, trees)``: the value of the leaf each row of ``X`` reaches in each tree."""
        t = self.tree
        node = np.broadcast_to(self.roots, (X.shape[0], len(self.roots))).copy()
        rows = np.arange(X.shape[0])[:, None]
        for _ in range(len(t.leaf)):  # each step goes deeper in every tree not yet at a leaf
            inner = ~t.leaf[node]
            if not inner.any():
                break
            x = X[rows, t.feature[node]]  # a leaf's feature is 0: read, never followed
            left = x <= t.threshold[node]
            if t.missing_left is not None:
                left = np.where(np.isnan(x), t.missing_left[node], left)
            node = np.where(inner, np.where(left, t.left[node], t.right[node]), node)
        return t.value[node]


def added_in_order(start: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``start`` plus each column of ``values`` in turn, rounded after every addition (the sum a loop
    over the trees makes, to the last bit: a cumulative sum adds in that order, a plain sum does not)."""
    return np.cumsum(np.column_stack([start, values]), axis=1)[:, -1]


def checked_tree(
    what: str,
    n_features: int,
    *,
    feature: np.ndarray,
    threshold: np.ndarray,
    left: np.ndarray,
    right: np.ndarray,
    leaf: np.ndarray,
    value: np.ndarray,
    missing_left: np.ndarray | None = None,
) -> Tree:
    """A :class:`Tree` from node arrays of equal length, refusing what would send a walk astray."""
    n = len(leaf)
    if n == 0:
        raise BadModel(f"{what} has no nodes")
    inner = np.flatnonzero(~leaf)
    order = inner.astype(np.int64)
    for side, children in (("child", left), ("child", right)):
        child = children[inner].astype(np.int64)
        if ((child <= order) | (child >= n)).any():
            raise BadModel(f"{what} has a {side} index outside the nodes after its parent (a cycle?)")
    used = feature[inner].astype(np.int64)
    if ((used < 0) | (used >= n_features)).any():
        raise BadModel(f"{what} splits on a feature outside the model's {n_features}")
    if np.isnan(threshold[inner]).any():
        raise BadModel(f"{what} has a NaN threshold")
    if not np.isfinite(value[leaf]).all():
        raise BadModel(f"{what} has a NaN or infinite leaf value")
    return Tree(  # leaves' features and children are never followed: zeros, so no index is wild
        feature=np.where(leaf, 0, feature).astype(np.intp),
        threshold=np.asarray(threshold, dtype=np.float64),
        left=np.where(leaf, 0, left).astype(np.intp),
        right=np.where(leaf, 0, right).astype(np.intp),
        leaf=np.asarray(leaf, dtype=bool),
        value=np.asarray(value, dtype=np.float64),
        missing_left=None if missing_left is None else np.asarray(missing_left, dtype=bool),
    )


# ---------------------------------------------------------------------- scikit-learn's trees (forests)


def sklearn_tree(obj: PlainObject, n_features: int) -> Tree:
    """A fitted ``sklearn.tree._tree.Tree`` of a single-output regressor: its node records, values
    and constructor arguments (features, classes, outputs) checked against each other."""
    args = obj.items("__reduce_args__", 3)
    if args[0] != n_features or isinstance(args[0], bool):
        raise BadModel(f"{obj.name} is built for {args[0]!r} features, not {n_features}")
    check_array(args[1], f"{obj.name} classes", I8, (1,))
    if args[1][0] != 1 or args[2] != 1 or isinstance(args[2], bool):
        raise BadModel(f"{obj.name} is not a single-output regression tree")
    nodes = obj.array("nodes", TREE_NODE, (None,))
    if obj.integer("node_count") != len(nodes):
        raise BadModel(f"{obj.name}.node_count is not its {len(nodes)} nodes")
    obj.integer("max_depth", 0, len(nodes))
    values = obj.array("values", F8, (len(nodes), 1, 1))
    leaf = nodes["left_child"] == TREE_LEAF
    if (leaf != (nodes["right_child"] == TREE_LEAF)).any():
        raise BadModel(f"{obj.name} has a node with one child")
    if (nodes["missing_go_to_left"] > 1).any():
        raise BadModel(f"{obj.name} has a missing-value direction that is neither left nor right")
    tree = checked_tree(
        obj.name,
        n_features,
        feature=nodes["feature"],
        threshold=nodes["threshold"],
        left=nodes["left_child"],
        right=nodes["right_child"],
        leaf=leaf,
        value=values[:, 0, 0],
        missing_left=nodes["missing_go_to_left"],
    )
    obj.done()
    return tree


# ---------------------------------------------------------------------- histogram gradient boosting


def hgb_tree(obj: PlainObject, n_features: int) -> Tree:
    """A ``TreePredictor`` without categorical splits (qe's features are numbers)."""
    nodes = obj.array("nodes", HGB_NODE, (None,))
    for key in ("binned_left_cat_bitsets", "raw_left_cat_bitsets"):
        obj.array(key, np.dtype("<u4"), (0, 8))  # no categorical split, so no bitset
    for key in ("is_leaf", "missing_go_to_left", "is_categorical"):
        if (nodes[key] > 1).any():
            raise BadModel(f"{obj.name}.{key} is neither 0 nor 1")
    leaf = nodes["is_leaf"] == 1
    if nodes["is_categorical"][~leaf].any():
        raise BadModel(f"{obj.name} has a categorical split, which qe's models never hold")
    tree = checked_tree(
        obj.name,
        n_features,
        feature=nodes["feature_idx"],
        threshold=nodes["num_threshold"],
        left=nodes["left"],
        right=nodes["right"],
        leaf=leaf,
        value=nodes["value"],
        missing_left=nodes["missing_go_to_left"],
    )
    obj.done()
    return tree


# ---------------------------------------------------------------------- M5P


M5P_ARRAYS = {  # name -> (dtype, columns: None for a vector, True for one per feature)
    "feature": (I8, None),
    "threshold": (F8, None),
    "left": (I8, None),
    "right": (I8, None),
    "parent": (I8, None),
    "n_samples": (I8, None),
    "rmse": (F8, None),
    "model_num": (I8, None),
    "coef": (F8, True),
    "intercept": (F8, None),
    "leaf_coef": (F8, True),
    "leaf_intercept": (F8, None),
}


def m5p_tree(tree: object, what: str, n_features: int) -> tuple[Tree, np.ndarray, np.ndarray]:
    """An M5P ``tree_`` (a dict of arrays): the tree, and the leaf models' coefficients and
    intercepts (finite at every leaf)."""
    if not isinstance(tree, dict) or set(tree) != set(M5P_ARRAYS):
        raise BadModel(f"{what} is not an M5P tree's arrays")
    n = len(tree["feature"]) if isinstance(tree["feature"], np.ndarray) else -1
    arrays = {
        key: check_array(tree[key], f"{what}[{key!r}]", dtype, (n, n_features) if wide else (n,))
        for key, (dtype, wide) in M5P_ARRAYS.items()
    }
    leaf = arrays["feature"] == -1
    checked = checked_tree(
        what,
        n_features,
        feature=arrays["feature"],
        threshold=arrays["threshold"],
        left=arrays["left"],
        right=arrays["right"],
        leaf=leaf,
        value=arrays["leaf_intercept"],
    )
    if not np.isfinite(arrays["leaf_coef"][leaf]).all():
        raise BadModel(f"{what} has NaN or infinite leaf coefficients")
    return checked, arrays["leaf_coef"], arrays["leaf_intercept"]
