"""Rank averaging of several learners' predictions, in numpy alone.

Kept apart from :mod:`qe.learners.ensemble` (scikit-learn's estimator API) so that a saved
``AveragingRegressor(combine="rank")`` scores rows with the same code without importing
scikit-learn or scipy (:mod:`qe.predictors.estimators`).
"""

from __future__ import annotations

import numpy as np


def average_ranks(values: np.ndarray) -> np.ndarray:
    """Ranks from 1, ties sharing their mean rank (scipy's ``rankdata``)."""
    order = np.argsort(values, kind="mergesort")
    ordered = values[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    ends = np.r_[starts[1:], len(values)]
    ranks = np.empty(len(values))
    ranks[order] = np.repeat((starts + ends + 1) / 2.0, ends - starts)
    return ranks


def rank_average(predictions: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Order the rows by the weighted mean of each member's (average) ranks, keeping the score scale.

    ``predictions``: ``(rows, members)``. The values handed out are the sorted weighted-mean scores,
    so the predictions keep the calibration (and MAE behaviour) of plain averaging while their order
    follows the rank vote. Rows with equal votes share the mean of the scores they draw, so that no
    row's score depends on where it stands in the batch.
    """
    ranks = np.column_stack([average_ranks(column) for column in predictions.T])
    vote = ranks @ weights
    order = np.argsort(vote, kind="stable")
    _, tied, counts = np.unique(vote[order], return_inverse=True, return_counts=True)
    shares = np.bincount(tied, weights=np.sort(predictions @ weights)) / counts
    out = np.empty(len(vote))
    out[order] = shares[tied]
    return out
