"""Numbers the report derives from a run: residuals by label band and a model's feature importances."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from qe.infra.errors import QEInputError
from qe.report.rundir import RunDir, own_file


def label_bands(low: float, high: float, n: int = 4) -> list[tuple[float, float]]:
    """``n`` equal bands over ``[low, high]``: ``[1, 5]`` gives [1,2), [2,3), [3,4), [4,5]."""
    edges = np.linspace(low, high, n + 1)
    return [(float(a), float(b)) for a, b in itertools.pairwise(edges)]


def residuals_by_band(
    gold: np.ndarray, pred: np.ndarray, bands: list[tuple[float, float]]
) -> list[dict[str, Any]]:
    """Per gold-label band: count, mean residual (predicted - gold) and MAE; the last band is closed.

    Values of an empty band are NaN.
    """
    gold, pred = np.asarray(gold, dtype=np.float64), np.asarray(pred, dtype=np.float64)
    rows = []
    for index, (low, high) in enumerate(bands):
        last = index == len(bands) - 1
        inside = (gold >= low) & ((gold <= high) if last else (gold < high))
        residual = pred[inside] - gold[inside]
        rows.append(
            {
                "band": f"[{low:g}, {high:g}{']' if last else ')'}",
                "low": low,
                "high": high,
                "n": int(inside.sum()),
                "mean_residual": float(residual.mean()) if residual.size else float("nan"),
                "MAE": float(np.abs(residual).mean()) if residual.size else float("nan"),
            }
        )
    return rows


def model_importances(run: RunDir) -> tuple[list[str], np.ndarray] | str:
    """``(feature names, importances)`` of a tree ensemble, else a sentence saying why there are none."""
    from qe.model.file import QEModel

    try:
        model_path = own_file(run.path, "model.skops")
        if model_path is None:
            return "Feature importances are not available: the run directory has no model.skops."
        model = QEModel.load(model_path)
        built = model.estimator  # built by skops here (loading alone may read it as plain data)
    except QEInputError as exc:
        return f"Feature importances are not available: the model could not be loaded ({exc})."
    estimator = getattr(built, "best_estimator_", built)
    final = estimator.steps[-1][1] if hasattr(estimator, "steps") else estimator
    values = getattr(final, "feature_importances_", None)
    if values is None or len(values) != len(model.feature_names):
        return (
            f"Feature importances are not available for {type(final).__name__}: it has no built-in "
            "importances, and permutation importance would need the feature table, which the run "
            "directory does not keep."
        )
    return list(model.feature_names), np.asarray(values, dtype=np.float64)
