"""Prediction with a fitted M5P tree (its ``tree_`` arrays), in numpy alone.

Kept apart from :mod:`qe.learners.m5p` (which builds trees with scikit-learn's estimator API) so
that a saved model scores rows without importing scikit-learn (:mod:`qe.predictors.reader`).
"""

from __future__ import annotations

import numpy as np


def fill_missing(X: np.ndarray, fill_values: np.ndarray) -> np.ndarray:
    """``X`` with missing values replaced by the training means of their columns."""
    missing = np.isnan(X)
    if missing.any():
        X = np.where(missing, fill_values[None, :], X)
    return X


def apply_tree(tree: dict[str, np.ndarray], X: np.ndarray) -> np.ndarray:
    """Index (into the ``tree`` arrays) of the leaf each row of ``X`` (no missing values) reaches.

    A path visits each node at most once, so more steps than nodes means a damaged tree (a cycle).
    """
    node = np.zeros(X.shape[0], dtype=np.int64)
    active = np.arange(X.shape[0])
    for _ in range(len(tree["feature"]) + 1):
        if not active.size:
            return node
        feature = tree["feature"][node[active]]
        inner = feature >= 0
        active, feature = active[inner], feature[inner]
        if not active.size:
            break
        current = node[active]
        go_left = X[active, feature] <= tree["threshold"][current]
        node[active] = np.where(go_left, tree["left"][current], tree["right"][current])
    if active.size:
        raise ValueError("the model tree has a cycle")
    return node


def predict_m5p(tree: dict[str, np.ndarray], fill_values: np.ndarray, X: np.ndarray) -> np.ndarray:
    """The leaf model of the leaf each row reaches, applied to the row."""
    X = fill_missing(X, fill_values)
    leaf = apply_tree(tree, X)
    return np.einsum("ij,ij->i", X, tree["leaf_coef"][leaf]) + tree["leaf_intercept"][leaf]
