"""The selection stage: the configured feature selector, fitted on the training features only."""

from __future__ import annotations

from typing import Any

from qe.infra.errors import QEInputError
from qe.run.context import RunContext
from qe.run.extraction import SplitData
from qe.run.fit import check_folds


def select_features(ctx: RunContext, train: SplitData) -> tuple[list[str], dict[str, Any]]:
    """Fit the configured selector (the context's) on the training features only; the chosen columns
    and its report."""
    from qe.selection import selection_report

    check_folds(ctx.config, len(train.dataset))
    selector = ctx.selector()
    try:
        selector.fit(train.features, train.dataset.labels)
    except ValueError as exc:  # the selector's own reasons (nothing selected, a constant label ...)
        raise QEInputError(f"[selection] {' '.join(str(exc).split())}") from None
    report = selection_report(selector)
    return [str(name) for name in report["selected"]], report
