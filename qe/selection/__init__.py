"""Feature selection: correlation ranking, CFS (Weka-style search) and greedy CV selection.

All selectors are scikit-learn estimators (``fit`` / ``get_support`` / ``transform``) with a
``path_`` recording the search; :func:`make_selector` builds one by name from a config.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sklearn.utils.validation import check_is_fitted

from qe.errors import QEInputError
from qe.io import atomic_write
from qe.selection.backend import parallel_backend_context
from qe.selection.base import PathSelector
from qe.selection.cfs import CFSSelector, cfs_merit, hall_merit
from qe.selection.correlation import CorrelationSelector, correlations
from qe.selection.sequential import SequentialSelector, cv_score

__all__ = [
    "SELECTORS",
    "CFSSelector",
    "CorrelationSelector",
    "PathSelector",
    "SequentialSelector",
    "cfs_merit",
    "correlations",
    "cv_score",
    "hall_merit",
    "make_selector",
    "parallel_backend_context",
    "selection_report",
    "write_selection_path",
]

SELECTORS: dict[str, tuple[type[PathSelector], dict[str, Any]]] = {
    "correlation": (CorrelationSelector, {}),
    "cfs": (CFSSelector, {}),
    "forward": (SequentialSelector, {"direction": "forward"}),
    "backward": (SequentialSelector, {"direction": "backward"}),
}


def make_selector(name: str, **params: Any) -> PathSelector:
    """A selector by config name (correlation, cfs, forward, backward) with keyword parameters."""
    if name not in SELECTORS:
        raise QEInputError(f"unknown selector {name!r} (known: {', '.join(SELECTORS)})")
    cls, fixed = SELECTORS[name]
    clash = sorted(set(params) & set(fixed))
    if clash:
        raise QEInputError(f"selector {name!r} fixes parameter(s) {', '.join(clash)}")
    known = set(cls().get_params())
    unknown = sorted(set(params) - known)
    if unknown:
        raise QEInputError(
            f"unknown parameter(s) for selector {name!r}: {', '.join(unknown)} "
            f"(known: {', '.join(sorted(known - set(fixed)))})"
        )
    return cls(**fixed, **params)


def selection_report(selector: PathSelector) -> dict[str, Any]:
    """A JSON-ready summary of a fitted selector: its parameters, the path and the selection."""
    check_is_fitted(selector, "support_")
    params = {
        key: value if isinstance(value, str | int | float | bool | type(None)) else repr(value)
        for key, value in selector.get_params(deep=False).items()
    }
    return {
        "selector": type(selector).__name__,
        "params": params,
        "path": selector.path_,
        "selected": selector.selected_features(),
        "n_selected": int(selector.support_.sum()),
        "n_features": int(selector.n_features_in_),
    }


def write_selection_path(selector: PathSelector, path: str | Path) -> None:
    """Write :func:`selection_report` of a fitted selector as JSON (atomically)."""
    with atomic_write(path) as handle:
        json.dump(selection_report(selector), handle, indent=2)
        handle.write("\n")
