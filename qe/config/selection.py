"""``[selection]``: a feature selector and its parameters; its rule and its typed view."""

from __future__ import annotations

from dataclasses import dataclass, field

from qe.config.document import ReadOnlyTable, no_table
from qe.config.rules import (
    Fields,
    Finite,
    Str,
    TablesOf,
    registered,
)

SELECTION = Fields(
    {"name": Str(registered("selector"), noun="selector"), "params": TablesOf(Finite())}, ("name",)
)


@dataclass(frozen=True, kw_only=True)
class SelectionConfig:
    """``[selection]``: a registered feature selector and its parameters."""

    name: str
    params: ReadOnlyTable = field(default_factory=no_table)
