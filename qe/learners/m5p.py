"""M5P model tree (Quinlan's M5 with Wang & Witten's refinements), faithful to Weka 3.6's ``M5P``.

Written from Weka's documented algorithm so that ``qe`` reproduces the WMT12 M5P baseline without a
JVM. The fitted tree is kept in plain numpy arrays (one row per node) so that it pickles and loads
with ``skops`` without trusting any extra type.

Steps, as in Weka (``M5Base`` / ``RuleNode`` / ``LinearRegression``):

1. Missing feature values are replaced by the training means (also at prediction time).
2. Grow: a node is a leaf when it holds fewer than ``min_instances`` rows or its target standard
   deviation is below 5 % of the root's; otherwise split on the attribute and cut maximising
   ``V**(1/5) - nL/n * VL**(1/5) - nR/n * VR**(1/5)`` (population variances), keeping at least
   ``max(1, n // 5) + 1`` rows on each side; the split value is the midpoint between neighbouring
   distinct values. A later attribute wins only by more than 1e-6.
3. Linear models: every internal node regresses the target on the attributes tested in its
   (grown) subtree, leaves start constant; the regression standardises the inputs, adds a ridge of
   1e-8, removes collinear attributes (standardised coefficient > 1.5) and then drops the attribute
   with the smallest standardised coefficient while an Akaike-like score improves.
4. Prune bottom-up: a subtree is replaced by its node's model when the model's training RMSE times
   ``(n + 2v) / (n - v)`` (``v`` = non-zero coefficients + 1; factor 10 when ``n <= v``) does not exceed
   the subtree's RMSE times the same factor with ``v`` = parameters of both children + 1.
5. Smooth: each leaf model is blended with the models on its path to the root,
   ``c <- (n c + 15 c_parent) / (n + 15)`` with ``n`` the size of the child node, giving one linear
   model per leaf.

Weka also shuffles the rows (Java ``Random(1)``) and sorts them with an unstable quicksort; that only
changes the order of floating-point sums, so it is not reproduced and the estimator needs no seed.
The one visible effect: when two cuts give the same partition of target values and one side has
identical targets, the 1/5 power turns rounding noise (~1e-16) into ~1e-3 of impurity and Weka's
choice depends on its row order. This happens only in nodes of a few rows; on the WMT12 features
the default, ``-U``, ``-R`` and ``-M 10`` trees are identical to Weka's, and unpruned trees differ
in a few leaves of 2-5 rows.
"""

from __future__ import annotations

import math
from numbers import Real
from typing import ClassVar

import numpy as np
from scipy.linalg.lapack import dgesv
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import check_is_fitted, validate_data

from qe.predictors.m5p_tree import apply_tree, fill_missing, predict_m5p

SMOOTHING_CONSTANT = 15.0
DEV_FRACTION = 0.05  # stop splitting below this share of the root's standard deviation
PRUNING_MULTIPLIER = 2.0
RIDGE = 1.0e-8
COLINEAR_SC = 1.5  # standardised coefficient above which an attribute counts as collinear
SPLIT_EPS = 1.0e-10  # values closer than this are treated as equal when placing cuts
IMPURITY_MARGIN = 1.0e-6  # a later attribute must beat the best split by more than this
IMPURITY_ORDER = 5.0


# --------------------------------------------------------------------------------------------
# Linear regression with Weka's M5 attribute elimination
# --------------------------------------------------------------------------------------------


def _pop_sd(y: np.ndarray) -> float:
    """Population standard deviation by the sum / sum-of-squares formula (0 for fewer than 2 rows)."""
    n = y.shape[0]
    if n < 2:
        return 0.0
    s = float(y.sum())
    s2 = float(np.dot(y, y))
    return math.sqrt(abs((s2 - s * s / n) / n))


def _sum_sd(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Column sums and sample standard deviations as Weka computes them (clipped at 0, 0 if n <= 1)."""
    n = x.shape[0]
    s = x.sum(axis=0)
    if n <= 1:
        return s, np.zeros(x.shape[1])
    s2 = np.einsum("ij,ij->j", x, x)
    return s, np.sqrt(np.maximum((s2 - s * s / n) / (n - 1), 0.0))


def _solve_ridge(gram: np.ndarray, zy: np.ndarray, ridge: float) -> np.ndarray:
    """Solve (G + ridge I) b = Z'y by LU; while the matrix is singular multiply the ridge by 10 (as Weka)."""
    if gram.shape[0] == 1:
        return zy / (gram[0] + ridge)
    diagonal = np.arange(gram.shape[0])
    for _ in range(30):
        system = gram.copy()
        system[diagonal, diagonal] += ridge
        _, _, solution, info = dgesv(system, zy)
        if info == 0:
            return solution
        ridge *= 10.0
    return np.linalg.lstsq(system, zy, rcond=None)[0]


def fit_linear_model(x: np.ndarray, y: np.ndarray, ridge: float = RIDGE) -> tuple[np.ndarray, float]:
    """Weka ``LinearRegression`` with its default M5 attribute elimination.

    Inputs are standardised with the sample standard deviation; attributes with zero spread are left
    out. While some standardised coefficient exceeds 1.5 the largest is dropped (collinearity); then
    the attribute with the smallest standardised coefficient is dropped while
    ``SSE / SSE_full * (n - p_full) + 2 p`` decreases. Returns one coefficient per column of ``x``
    (0 for dropped attributes) and the intercept.
    """
    n, p = x.shape
    class_mean = float(y.mean()) if n else 0.0
    coef_full = np.zeros(p)
    if p == 0 or n == 0:
        return coef_full, class_mean
    sums, sds = _sum_sd(x)
    usable = np.flatnonzero(sds != 0)
    if usable.size == 0:
        return coef_full, class_mean
    class_sum = float(y.sum())
    class_var = (float(np.dot(y, y)) - class_sum * class_sum / n) / (n - 1)
    class_sd = math.sqrt(class_var) if class_var > 0 else 0.0
    sd_u, mean_u = sds[usable], sums[usable] / n
    z = (x[:, usable] - mean_u) / sd_u
    gram = z.T @ z
    zy = z.T @ y
    offset = class_mean - y
    n_all = usable.size

    def regress(cols: np.ndarray) -> tuple[np.ndarray, float]:
        """Coefficients on the original scale for the attributes ``usable[cols]``, and the SSE."""
        if cols.size == 0:
            return np.zeros(0), float(np.dot(offset, offset))
        if cols.size == n_all:
            beta = _solve_ridge(gram, zy, ridge)
            resid = z @ beta + offset
        else:
            beta = _solve_ridge(gram[cols][:, cols], zy[cols], ridge)
            resid = z[:, cols] @ beta + offset
        return beta / sd_u[cols], float(np.dot(resid, resid))

    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        cols = np.arange(n_all)
        # Full model, dropping the most collinear attribute while any has |SC| > 1.5.
        while True:
            coef, full_sse = regress(cols)
            sc = np.abs(coef * sd_u[cols] / class_sd)
            over = sc > COLINEAR_SC  # NaN never counts
            if not over.any():
                break
            worst = int(np.argmax(np.where(over, sc, -np.inf)))  # the first of the largest
            cols = np.concatenate([cols[:worst], cols[worst + 1 :]])

        n_params = cols.size + 1
        full = np.float64(full_sse)
        akaike = np.float64((n - n_params) + 2 * n_params)
        current_params = n_params
        while cols.size:
            current_params -= 1
            sc = np.abs(coef * sd_u[cols] / class_sd).tolist()
            k = 0
            for j in range(1, len(sc)):  # the first smallest; NaN never wins (as in Weka)
                if sc[j] < sc[k]:
                    k = j
            trial = np.concatenate([cols[:k], cols[k + 1 :]])
            trial_coef, trial_sse = regress(trial)
            trial_akaike = np.float64(trial_sse) / full * (n - n_params) + 2 * current_params
            if not trial_akaike < akaike:
                break
            akaike, cols, coef = trial_akaike, trial, trial_coef

    coef_full[usable[cols]] = coef
    intercept = class_mean - float(np.dot(coef, mean_u[cols]))
    return coef_full, intercept


# --------------------------------------------------------------------------------------------
# Split search
# --------------------------------------------------------------------------------------------


def find_best_split(x: np.ndarray, y: np.ndarray) -> tuple[int, float] | None:
    """Best (attribute, split value) by Weka's M5 impurity reduction, or None when no cut is allowed.

    For each attribute the rows are sorted by value; a cut after sorted row ``i`` is allowed for
    ``low <= i <= n - low - 2`` (``low = max(1, n // 5)``) when the next value differs by at least
    1e-10. Variances are population variances from running sums and sums of squares, as in Weka.
    """
    n, d = x.shape
    low = 1 if n < 5 else n // 5
    if n < 4 or d == 0 or n - low - 2 < low:
        return None
    order = np.argsort(x, axis=0, kind="stable")
    xs = x[order, np.arange(d)]
    ys = y[order]
    both = np.concatenate([ys, ys * ys], axis=1)  # sums and sums of squares side by side
    # Accumulate exactly as Weka does: the left part starts with the first `low` rows and gains one
    # row per cut; the right part starts with the sum of the rest and loses one row per cut. The
    # order matters: a 1/5 power turns rounding noise in a zero variance into visible impurity.
    cum = np.cumsum(both, axis=0)
    total = cum[-1]
    left = cum[low : n - low - 1]  # cut after sorted row i keeps rows 0..i on the left
    moving = both[low : n - low - 1]
    right = np.cumsum(np.concatenate([np.cumsum(both[low:], axis=0)[-1:], -moving]), axis=0)[1:]
    sums = np.stack([left, right])  # (side, cut, 2d)
    counts = np.arange(low + 1, n - low, dtype=float)[:, None]
    counts = np.stack([counts, n - counts])
    s, s2 = sums[..., :d], sums[..., d:]
    var = np.abs((counts * s2 - s * s) / (counts * counts)) ** (1.0 / IMPURITY_ORDER)
    va = np.abs((total[d:] - total[:d] * total[:d] / n) / n) ** (1.0 / IMPURITY_ORDER)
    impurity = va - (counts[0] / n) * var[0] - (counts[1] / n) * var[1]
    distinct = np.diff(xs[low : n - low], axis=0) >= SPLIT_EPS
    impurity[~distinct] = -np.inf

    pos = np.argmax(impurity, axis=0)
    best_imp_per_attr = impurity[pos, np.arange(d)].tolist()
    best_attr, best_imp = -1, -1.0e20
    for j, imp in enumerate(best_imp_per_attr):
        if imp != -np.inf and abs(imp - best_imp) > IMPURITY_MARGIN and imp > best_imp + IMPURITY_MARGIN:
            best_attr, best_imp = j, imp
    if best_attr < 0:
        return None
    i = int(pos[best_attr]) + low
    return best_attr, float((xs[i, best_attr] + xs[i + 1, best_attr]) * 0.5)


# --------------------------------------------------------------------------------------------
# Tree building (temporary node objects, flattened into arrays at the end)
# --------------------------------------------------------------------------------------------


class _Node:
    """A node while fitting: rows reaching it, split, children and linear models."""

    __slots__ = (
        "attrs",
        "coef",
        "feature",
        "idx",
        "intercept",
        "left",
        "n_params",
        "right",
        "rmse",
        "smooth_coef",
        "smooth_intercept",
        "threshold",
    )

    def __init__(self, idx: np.ndarray):
        self.idx = idx
        self.feature = -1
        self.threshold = 0.0
        self.left: _Node | None = None
        self.right: _Node | None = None
        self.attrs: np.ndarray = np.zeros(0, dtype=np.intp)
        self.n_params = 1
        self.coef: np.ndarray | None = None
        self.intercept = 0.0
        self.rmse = 0.0
        self.smooth_coef: np.ndarray | None = None
        self.smooth_intercept = 0.0

    @property
    def is_leaf(self) -> bool:
        return self.left is None


class _Builder:
    """Grows, prunes and smooths one tree on fixed training data."""

    def __init__(self, x: np.ndarray, y: np.ndarray, min_instances: float, regression_tree: bool):
        self.x, self.y = x, y
        self.min_instances = min_instances
        self.regression_tree = regression_tree
        self.global_sd = _pop_sd(y)

    def grow(self, idx: np.ndarray) -> _Node:
        node = _Node(idx)
        y = self.y[idx]
        if len(idx) < self.min_instances or _pop_sd(y) < self.global_sd * DEV_FRACTION:
            return node
        split = find_best_split(self.x[idx], y)
        if split is None:
            return node
        feature, threshold = split
        go_left = self.x[idx, feature] <= threshold
        if go_left.all() or not go_left.any():
            return node
        node.feature, node.threshold = feature, threshold
        node.left = self.grow(idx[go_left])
        node.right = self.grow(idx[~go_left])
        if not self.regression_tree:
            tested = np.concatenate([[feature], node.left.attrs, node.right.attrs])
            node.attrs = np.unique(tested).astype(np.intp)  # attributes tested in this subtree
        return node

    def install_model(self, node: _Node) -> np.ndarray:
        """Fit the node's linear model; return its predictions on the node's rows."""
        y = self.y[node.idx]
        node.coef = np.zeros(self.x.shape[1])
        if node.attrs.size == 0:  # constant model: the mean
            node.intercept = float(y.mean())
            pred = np.full(y.shape[0], node.intercept)
        else:
            x = self.x[np.ix_(node.idx, node.attrs)]
            coef_attrs, node.intercept = fit_linear_model(x, y)
            node.coef[node.attrs] = coef_attrs
            pred = x @ coef_attrs + node.intercept
        node.rmse = _rmse(pred, y)
        return pred

    def prune(self, node: _Node) -> np.ndarray:
        """Prune the subtree bottom-up; return its training predictions (before smoothing)."""
        if node.is_leaf:
            return self.install_model(node)
        assert node.left is not None and node.right is not None
        go_left = self.x[node.idx, node.feature] <= node.threshold
        subtree_pred = np.empty(len(node.idx))
        subtree_pred[go_left] = self.prune(node.left)
        subtree_pred[~go_left] = self.prune(node.right)
        model_pred = self.install_model(node)
        n = len(node.idx)
        y = self.y[node.idx]
        model_params = int(np.count_nonzero(node.coef)) + 1
        model_error = node.rmse * _pruning_factor(n, model_params)
        subtree_rmse = _rmse(subtree_pred, y)
        subtree_params = node.left.n_params + node.right.n_params + 1
        subtree_error = subtree_rmse * _pruning_factor(n, subtree_params)
        if model_error <= subtree_error or model_error < self.global_sd * 1.0e-5:
            node.left = node.right = None
            node.feature = -1
            node.n_params = model_params
            return model_pred
        node.n_params = subtree_params
        node.rmse = subtree_rmse
        return subtree_pred

    def install_all(self, node: _Node) -> None:
        """Fit models at every node without pruning (Weka's ``-N``)."""
        if not node.is_leaf:
            assert node.left is not None and node.right is not None
            self.install_all(node.left)
            self.install_all(node.right)
        self.install_model(node)

    def smooth(self, node: _Node, path: list[_Node]) -> None:
        """Give every leaf the blend of the models on its path to the root."""
        if node.is_leaf:
            assert node.coef is not None
            coef, intercept = node.coef.copy(), node.intercept
            child = node
            for parent in reversed(path):
                assert parent.coef is not None
                n = float(len(child.idx))
                denominator = n + SMOOTHING_CONSTANT
                coef = coef * n / denominator + SMOOTHING_CONSTANT * parent.coef / denominator
                intercept = intercept * n / denominator + SMOOTHING_CONSTANT * parent.intercept / denominator
                child = parent
            node.smooth_coef, node.smooth_intercept = coef, intercept
            return
        assert node.left is not None and node.right is not None
        self.smooth(node.left, [*path, node])
        self.smooth(node.right, [*path, node])


def _rmse(pred: np.ndarray, y: np.ndarray) -> float:
    resid = pred - y
    return math.sqrt(float(np.dot(resid, resid)) / resid.shape[0]) if resid.shape[0] else 0.0


def _pruning_factor(n: int, params: int) -> float:
    """Weka's error compensation (n + 2v) / (n - v), or 10 when there are too few rows."""
    if n <= params:
        return 10.0
    return (n + PRUNING_MULTIPLIER * params) / (n - params)


def _flatten(root: _Node, n_features: int, smoothed: bool) -> dict[str, np.ndarray]:
    """Pre-order arrays describing the tree; leaves are numbered LM1, LM2, ... left to right."""
    nodes: list[_Node] = []
    parents: list[int] = []
    stack: list[tuple[_Node, int]] = [(root, -1)]
    while stack:
        node, parent = stack.pop()
        nodes.append(node)
        parents.append(parent)
        if not node.is_leaf:
            assert node.left is not None and node.right is not None
            me = len(nodes) - 1
            stack.append((node.right, me))
            stack.append((node.left, me))
    index = {id(node): i for i, node in enumerate(nodes)}
    m = len(nodes)
    tree = {
        "feature": np.full(m, -1, dtype=np.int64),
        "threshold": np.zeros(m),
        "left": np.full(m, -1, dtype=np.int64),
        "right": np.full(m, -1, dtype=np.int64),
        "parent": np.asarray(parents, dtype=np.int64),
        "n_samples": np.zeros(m, dtype=np.int64),
        "rmse": np.zeros(m),
        "model_num": np.zeros(m, dtype=np.int64),
        "coef": np.zeros((m, n_features)),
        "intercept": np.zeros(m),
        "leaf_coef": np.zeros((m, n_features)),
        "leaf_intercept": np.zeros(m),
    }
    n_models = 0
    for i, node in enumerate(nodes):
        assert node.coef is not None
        tree["n_samples"][i] = len(node.idx)
        tree["rmse"][i] = node.rmse
        tree["coef"][i] = node.coef
        tree["intercept"][i] = node.intercept
        if node.is_leaf:
            n_models += 1
            tree["model_num"][i] = n_models
            use_smoothed = smoothed and node.smooth_coef is not None
            tree["leaf_coef"][i] = node.smooth_coef if use_smoothed else node.coef
            tree["leaf_intercept"][i] = node.smooth_intercept if use_smoothed else node.intercept
        else:
            assert node.left is not None and node.right is not None
            tree["feature"][i] = node.feature
            tree["threshold"][i] = node.threshold
            tree["left"][i] = index[id(node.left)]
            tree["right"][i] = index[id(node.right)]
    return tree


# --------------------------------------------------------------------------------------------
# Estimator
# --------------------------------------------------------------------------------------------


class M5P(RegressorMixin, BaseEstimator):
    """M5P model tree regressor, matching Weka 3.6's ``weka.classifiers.trees.M5P``.

    Parameters
    ----------
    min_instances : float, default=4
        A node with fewer rows is not split (Weka ``-M``).
    unpruned : bool, default=False
        Keep the fully grown tree (Weka ``-N``); leaves then hold constant models.
    unsmoothed : bool, default=False
        Predict with the leaf models alone instead of the smoothed ones (Weka ``-U``).
    build_regression_tree : bool, default=False
        Constant models everywhere: a regression tree (Weka ``-R``).

    Attributes
    ----------
    tree_ : dict of numpy arrays
        One entry per node in pre-order: ``feature`` (-1 for a leaf), ``threshold`` (go left when
        ``x <= threshold``), ``left``, ``right``, ``parent``, ``n_samples``, ``rmse`` (training RMSE of
        the node's chosen model), ``model_num`` (1-based leaf model number, 0 for internal nodes),
        ``coef`` / ``intercept`` (the node's own unsmoothed linear model) and ``leaf_coef`` /
        ``leaf_intercept`` (the model used for prediction at a leaf).
    n_models_ : int
        Number of linear models (= leaves, Weka's "Number of Rules").
    fill_values_ : ndarray
        Training means that replace missing feature values.
    global_sd_ : float
        Population standard deviation of the training target.
    n_features_in_, feature_names_in_ : as in scikit-learn.
    """

    _parameter_constraints: ClassVar[dict[str, list]] = {
        "min_instances": [Interval(Real, 1, None, closed="left")],
        "unpruned": ["boolean"],
        "unsmoothed": ["boolean"],
        "build_regression_tree": ["boolean"],
    }

    def __init__(
        self,
        min_instances: float = 4,
        unpruned: bool = False,
        unsmoothed: bool = False,
        build_regression_tree: bool = False,
    ):
        self.min_instances = min_instances
        self.unpruned = unpruned
        self.unsmoothed = unsmoothed
        self.build_regression_tree = build_regression_tree

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        return tags

    def fit(self, X, y) -> M5P:
        """Grow, prune and smooth the tree on ``X`` (n_samples, n_features) and target ``y``."""
        self._validate_params()
        X, y = validate_data(
            self, X, y, dtype=np.float64, ensure_all_finite="allow-nan", y_numeric=True, multi_output=False
        )
        y = np.asarray(y, dtype=np.float64)
        present = ~np.isnan(X)
        counts = present.sum(axis=0)
        sums = np.where(present, X, 0.0).sum(axis=0)
        self.fill_values_ = np.where(counts > 0, sums / np.maximum(counts, 1), 0.0)
        X = self._fill_missing(X)

        builder = _Builder(X, y, float(self.min_instances), bool(self.build_regression_tree))
        root = builder.grow(np.arange(X.shape[0]))
        if self.unpruned:
            builder.install_all(root)
        else:
            builder.prune(root)
        smoothed = not self.unsmoothed
        if smoothed:
            builder.smooth(root, [])
        self.tree_ = _flatten(root, X.shape[1], smoothed)
        self.n_models_ = int(np.count_nonzero(self.tree_["feature"] < 0))
        self.global_sd_ = builder.global_sd
        return self

    def _fill_missing(self, X: np.ndarray) -> np.ndarray:
        return fill_missing(X, self.fill_values_)

    def apply(self, X) -> np.ndarray:
        """Index (into ``tree_`` arrays) of the leaf each row of ``X`` reaches."""
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, ensure_all_finite="allow-nan", reset=False)
        return apply_tree(self.tree_, self._fill_missing(X))

    def predict(self, X) -> np.ndarray:
        """Predicted target for each row of ``X``."""
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, ensure_all_finite="allow-nan", reset=False)
        return predict_m5p(self.tree_, self.fill_values_, X)

    def export_text(self, feature_names=None, target_name: str = "y", decimals: int = 4) -> str:
        """The tree and its leaf models, laid out like Weka's M5P output.

        ``feature_names`` defaults to ``feature_names_in_`` when fitted on a DataFrame, else
        ``x0, x1, ...``. Split values are printed with 3 decimals and coefficients with ``decimals``.
        """
        check_is_fitted(self)
        if feature_names is None:
            names = getattr(self, "feature_names_in_", None)
            feature_names = (
                list(names) if names is not None else [f"x{i}" for i in range(self.n_features_in_)]
            )
        feature_names = [str(name) for name in feature_names]
        if len(feature_names) != self.n_features_in_:
            raise ValueError(f"expected {self.n_features_in_} feature names, got {len(feature_names)}")
        tree = self.tree_
        kind = "regression" if self.build_regression_tree else "model"
        lines = [f"M5 {'unpruned' if self.unpruned else 'pruned'} {kind} tree:"]
        if not self.unsmoothed:
            lines.append("(using smoothed linear models)")
        text = "\n".join(lines) + "\n" + self._tree_text(0, 0, feature_names)
        for i in np.flatnonzero(tree["feature"] < 0):
            text += f"\nLM num: {tree['model_num'][i]}"
            text += _model_text(
                tree["leaf_coef"][i], tree["leaf_intercept"][i], feature_names, target_name, decimals
            )
            text += "\n"
        text += f"\nNumber of Rules : {self.n_models_}"
        return text

    def _tree_text(self, node: int, level: int, names: list[str]) -> str:
        tree = self.tree_
        if tree["feature"][node] < 0:
            n = tree["n_samples"][node]
            if self.global_sd_ > 0:
                share = _fmt(100.0 * tree["rmse"][node] / self.global_sd_, 3)
                return f"LM{tree['model_num'][node]} ({n}/{share}%)\n"
            return f"LM{tree['model_num'][node]} ({n})\n"
        indent = "|   " * level
        name = names[tree["feature"][node]]
        value = _fmt(tree["threshold"][node], 3)
        return (
            f"\n{indent}{name} <= {value} : "
            + self._tree_text(int(tree["left"][node]), level + 1, names)
            + f"{indent}{name} >  {value} : "
            + self._tree_text(int(tree["right"][node]), level + 1, names)
        )


def _fmt(value: float, decimals: int) -> str:
    """Round half away from zero, drop trailing zeros: Weka's ``Utils.doubleToString``."""
    scaled = int(abs(value) * 10.0**decimals + 0.5)
    if scaled == 0:
        return "0"
    digits = str(scaled).rjust(decimals + 1, "0")
    text = f"{digits[:-decimals]}.{digits[-decimals:]}".rstrip("0").rstrip(".") if decimals else digits
    return f"-{text}" if value < 0 else text


def _model_text(coef: np.ndarray, intercept: float, names: list[str], target: str, decimals: int) -> str:
    out = f"\n{target} = "
    first = True
    for j in np.flatnonzero(coef != 0.0):
        c = float(coef[j])
        if first:
            out += f"\n\t{_fmt(c, decimals)} * {names[j]} "
            first = False
        else:
            out += f"\n\t{'-' if c < 0 else '+'} {_fmt(abs(c), decimals)} * {names[j]} "
    out += f"\n\t{'-' if intercept < 0 else '+'} {_fmt(abs(intercept), decimals)}"
    return out
