"""Feature selection: correlation ranking, CFS (Weka-style search) and greedy CV selection.

All selectors are scikit-learn estimators (``fit`` / ``get_support`` / ``transform``) with a
``path_`` recording the search; :func:`make_selector` builds one by name from a config.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from qe.errors import QEInputError
from qe.io import atomic_write
from qe.schema import register_names
from qe.selection.backend import parallel_backend_context

if TYPE_CHECKING:
    from qe.selection.base import PathSelector

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

# The selectors (scikit-learn estimators) are imported on first use, so that importing
# ``qe.selection.backend`` (the streaming commands do) does not import scikit-learn.
_LAZY = {
    "PathSelector": "qe.selection.base",
    "CFSSelector": "qe.selection.cfs",
    "cfs_merit": "qe.selection.cfs",
    "hall_merit": "qe.selection.cfs",
    "CorrelationSelector": "qe.selection.correlation",
    "correlations": "qe.selection.correlation",
    "SequentialSelector": "qe.selection.sequential",
    "cv_score": "qe.selection.sequential",
}


def __getattr__(name: str) -> Any:
    if name == "SELECTORS":
        return _selectors()
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _selectors() -> dict[str, tuple[type[PathSelector], dict[str, Any]]]:
    """Config name -> (selector class, fixed parameters)."""
    from qe.selection.cfs import CFSSelector
    from qe.selection.correlation import CorrelationSelector
    from qe.selection.sequential import SequentialSelector

    return {
        "correlation": (CorrelationSelector, {}),
        "cfs": (CFSSelector, {}),
        "forward": (SequentialSelector, {"direction": "forward"}),
        "backward": (SequentialSelector, {"direction": "backward"}),
    }


register_names("selector", lambda: list(_selectors()))


def make_selector(name: str, **params: Any) -> PathSelector:
    """A selector by config name (correlation, cfs, forward, backward) with keyword parameters, checked
    against its constraints: a bad one is a ``QEInputError`` naming ``selection.params.NAME``."""
    from qe.learners.factory import check_params

    selectors = _selectors()
    if name not in selectors:
        raise QEInputError(f"unknown selector {name!r} (known: {', '.join(selectors)})")
    cls, fixed = selectors[name]
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
    selector = cls(**fixed, **params)
    check_params(selector, params, "selection.params")
    try:
        selector.check_params()
    except ValueError as exc:
        raise QEInputError(f"selection.params.{exc}") from None
    return selector


def selection_report(selector: PathSelector) -> dict[str, Any]:
    """A JSON-ready summary of a fitted selector: its parameters, the path and the selection."""
    from sklearn.utils.validation import check_is_fitted

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
