"""``[learner]``: the learner, its parameters or grid, scaling, scoring and clipping; its rule and its
typed view."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from qe.config.document import SHOWN, ReadOnlyTable, no_table
from qe.config.rules import (
    Bool,
    Either,
    Fields,
    Finite,
    Int,
    List,
    Mistake,
    Str,
    TablesOf,
    registered,
)


def _params_not_in_grid(learner: dict[str, Any]) -> Mistake:
    grid = learner.get("grid")
    both = sorted(set(grid if isinstance(grid, dict) else {}) & set(learner.get("params", {})))
    if both:
        return f"params.{both[0]}", learner["params"][both[0]], "no value: learner.grid gives it (once)"
    return None


LEARNER = Fields(
    {
        "name": Str(registered("learner"), noun="learner"),
        "params": TablesOf(Finite()),  # checked when the learner is built
        # a value is a number or a list of numbers (an ensemble's weights)
        "grid": Either(
            Str(["default"]), TablesOf(List(Either(Finite(), List(Finite(), min_len=1)), min_len=1))
        ),
        "scale": Bool(),
        "scoring": Str(registered("scoring"), noun="scoring"),
        "clip": Bool(),
        "aux_targets": List(Str(registered("aux target"), noun="aux target")),
        "fast_above": Int(1),  # name = "auto": the exact SVR up to this many training rows
    },
    required=("name",),
    rules=(_params_not_in_grid,),
)


@dataclass(frozen=True, kw_only=True)
class LearnerConfig:
    """``[learner]``: a registered learner, its parameters or grid, and how it is fitted and scored."""

    name: str
    # checked against scikit-learn's parameter constraints when the learner is built
    params: ReadOnlyTable = field(default_factory=no_table, metadata=SHOWN)
    scoring: str = field(default="MAE", metadata=SHOWN)
    clip: bool = field(default=True, metadata=SHOWN)
    grid: str | ReadOnlyTable | None = None  # "default", or parameter -> values
    scale: bool | None = None
    aux_targets: tuple[str, ...] | None = None
    fast_above: int | None = None  # name = "auto": the exact SVR up to this many training rows
