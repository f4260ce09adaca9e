"""``[report]``: the published systems and the systems a run is tested against; its rule and its typed
view."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from qe.config.document import SHOWN, ReadOnlyTable
from qe.config.features import FEATURES
from qe.config.rules import (
    Bool,
    Fields,
    List,
    Mistake,
    Str,
    first_repeated,
)


def _against_source(entry: dict[str, Any]) -> Mistake:
    """A ``[[report.against]]`` system takes another config's, or this config's with other features."""
    if ("config" in entry) == ("features" in entry):
        return "config", entry.get("config"), "exactly one of config = FILE or features = {...}"
    return None


def _against_once(report: dict[str, Any]) -> Mistake:
    twice = first_repeated([entry["name"] for entry in report.get("against", [])])
    return None if twice is None else ("against", twice, "each name once (the second would hide the first)")


REPORT = Fields(
    {
        "published": Bool(),
        "against": List(
            Fields(
                {"name": Str(), "config": Str(), "features": FEATURES},
                ("name",),
                rules=(_against_source,),
            )
        ),
    },
    rules=(_against_once,),
)


@dataclass(frozen=True, kw_only=True)
class AgainstEntry:
    """One ``[[report.against]]`` system: another config (``config``, a resolved path), or this config
    with other features (``features``: a ``[features]`` table whose sets and families replace ours)."""

    name: str
    config: str | None = None
    features: ReadOnlyTable | None = None


@dataclass(frozen=True, kw_only=True)
class ReportConfig:
    """``[report]``: whether the published systems are shown, and the systems to test ours against."""

    published: bool = field(default=True, metadata=SHOWN)
    against: tuple[AgainstEntry, ...] = field(default=(), metadata=SHOWN)
