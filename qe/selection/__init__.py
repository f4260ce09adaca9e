"""Feature selection: correlation ranking, CFS (Weka-style search) and greedy CV selection.

All selectors are scikit-learn estimators (``fit`` / ``get_support`` / ``transform``) with a
``path_`` recording the search. Each module of this package that defines one registers a
:class:`SelectorRecord` per name a config can give it (``register_selector``), so adding a selector is
adding one file; :func:`make_selector` builds one by name from a config.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from qe.config.rules import register_names
from qe.infra.errors import QEInputError
from qe.infra.io import atomic_write
from qe.infra.parallel import parallel_backend_context

if TYPE_CHECKING:
    from qe.selection.base import PathSelector

__all__ = [
    "CFSSelector",
    "CorrelationSelector",
    "PathSelector",
    "SelectorRecord",
    "SequentialSelector",
    "cfs_merit",
    "correlations",
    "cv_score",
    "hall_merit",
    "make_selector",
    "parallel_backend_context",
    "register_selector",
    "registered_selectors",
    "selection_report",
    "write_selection_path",
]

# The selectors (scikit-learn estimators) are imported on first use, so that importing
# ``qe.infra.parallel`` (the streaming commands do) does not import scikit-learn.
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
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# ====================================================================== the registry

RUN_VALUES = ("random_state", "cv", "n_jobs")
"""The selector parameters a run can fill in (``SelectorRecord.from_run``): its seed, its number of CV
folds, its parallel jobs."""


@dataclass(frozen=True)
class SelectorRecord:
    """One selector a config can name (``[selection] name``): its class (a ``PathSelector``, whose
    scikit-learn ``_parameter_constraints`` check the config's ``selection.params``), the parameters
    the name fixes (``forward`` and ``backward`` are one class searching in two directions), and
    ``from_run``: the parameters (among :data:`RUN_VALUES`) it takes from the run when the config
    leaves them unset, so that a selector with a learner in the loop is seeded, cross-validated and
    parallel as the run is; ``path_score``: what the ``score`` of a step of its ``path_`` means (a
    report's axis label), a template filled in with the selector's parameters."""

    name: str
    cls: type[PathSelector]
    fixed: Mapping[str, Any] = field(default_factory=dict)
    from_run: tuple[str, ...] = ()
    path_score: str = "score"

    def __post_init__(self) -> None:
        unknown = sorted(set(self.from_run) - set(RUN_VALUES))
        if unknown:
            raise ValueError(f"selector {self.name!r}: a run has no value for {', '.join(unknown)}")

    def run_defaults(self, seed: int, folds: int, n_jobs: int | None) -> dict[str, Any]:
        """The parameters this selector takes from a run with this seed, CV folds and jobs."""
        values = {"random_state": seed, "cv": folds, "n_jobs": n_jobs}
        return {param: values[param] for param in self.from_run}

    def score_name(self, params: Mapping[str, Any]) -> str:
        """:attr:`path_score` for a selector with these parameters (its defaults for those not given)."""
        return self.path_score.format_map({**self.cls().get_params(), **self.fixed, **params})


_REGISTRY: dict[str, SelectorRecord] = {}
_INFRASTRUCTURE = {"base", "backend"}
_loaded = False


def register_selector(record: SelectorRecord) -> SelectorRecord:
    """Add a selector to the registry (its module calls this once per name, on import)."""
    if _REGISTRY.get(record.name, record) != record:
        raise ValueError(f"selector {record.name!r} registered twice")
    _REGISTRY[record.name] = record
    return record


def registered_selectors() -> dict[str, SelectorRecord]:
    """Every selector by name: the modules of ``qe.selection`` are imported (once) to register theirs."""
    global _loaded
    if not _loaded:
        for module in pkgutil.iter_modules(__path__):
            if module.name not in _INFRASTRUCTURE and not module.name.startswith("_"):
                importlib.import_module(f"{__name__}.{module.name}")
        _loaded = True
    return dict(sorted(_REGISTRY.items()))


register_names("selector", lambda: list(registered_selectors()))


def make_selector(name: str, **params: Any) -> PathSelector:
    """A selector by config name (``registered_selectors``) with keyword parameters, checked against
    its constraints: a bad one is a ``QEInputError`` naming ``selection.params.NAME``."""
    from qe.learners.factory import check_params

    selectors = registered_selectors()
    if name not in selectors:
        raise QEInputError(f"unknown selector {name!r} (known: {', '.join(selectors)})")
    cls, fixed = selectors[name].cls, dict(selectors[name].fixed)
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
