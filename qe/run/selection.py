"""The selection stage: the configured feature selector, fitted on the training features only."""

from __future__ import annotations

from typing import Any

from qe.errors import QEInputError
from qe.run.context import RunContext
from qe.run.features import SplitData
from qe.run.fit import check_folds


def select_features(ctx: RunContext, train: SplitData) -> tuple[list[str], dict[str, Any]]:
    """Fit the configured selector on the training features only; the chosen columns and its report."""
    from qe.selection import make_selector, selection_report

    config = ctx.config
    check_folds(config, len(train.dataset))
    spec = config["selection"]
    params = dict(spec.get("params", {}))
    if spec["name"] in ("forward", "backward"):
        params.setdefault("random_state", config["seed"])
        params.setdefault("cv", config["cv"]["folds"])
        params.setdefault("n_jobs", config["cv"]["n_jobs"])
    selector = make_selector(spec["name"], **params)
    try:
        selector.fit(train.features, train.dataset.labels)
    except ValueError as exc:  # the selector's own reasons (nothing selected, a constant label ...)
        raise QEInputError(f"[selection] {' '.join(str(exc).split())}") from None
    report = selection_report(selector)
    return [str(name) for name in report["selected"]], report
