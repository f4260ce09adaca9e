"""The feature-family contract: a named set of documented features computed over batches of pairs."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np


@dataclass(frozen=True)
class FeatureSpec:
    """One feature: its short name (unique in its family), a one-line definition, the resource it needs."""

    name: str
    description: str
    resource: str | None = None


@dataclass
class PairBatch:
    """A batch of sentence pairs handed to a family.

    ``ids`` are the dataset's sentence ids (used to match external logs such as Moses n-best
    lists); ``src`` / ``mt`` are the raw sentences; ``extra`` carries optional per-dataset
    material (e.g. a pseudo-reference) keyed by name, each a list aligned with ``ids``.
    """

    ids: list[str]
    src: list[str]
    mt: list[str]
    extra: dict[str, list[Any]] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.ids)


class FeatureFamily(ABC):
    """Base class of every family; subclasses set ``name`` and implement ``specs`` and ``extract``."""

    name: ClassVar[str]

    def __init__(self, **settings: Any) -> None:
        self.settings = settings

    @abstractmethod
    def specs(self) -> list[FeatureSpec]:
        """The features this family produces, in column order."""

    @abstractmethod
    def extract(self, batch: PairBatch, resources: Any = None) -> np.ndarray:
        """Return an array of shape ``(len(batch), len(self.specs()))`` of floats."""

    def bind(self, resources: Any) -> FeatureFamily:
        """Resolve settings that depend on the resource bundle (e.g. ``pos="auto"``); a no-op here."""
        return self

    def check_ids(self, ids: list[str]) -> None:
        """Refuse a dataset that the family's external inputs (e.g. decoder logs) do not match."""
        return None

    @classmethod
    def catalogue(cls) -> list[FeatureSpec]:
        """Every feature the family can produce (for ``qe features --list``); override when
        ``specs()`` depends on settings."""
        return cls().specs()

    def column_names(self) -> list[str]:
        """Column names as they appear in feature tables: ``family.feature``."""
        return [f"{self.name}.{spec.name}" for spec in self.specs()]


_REGISTRY: dict[str, type[FeatureFamily]] = {}


def register_family(cls: type[FeatureFamily]) -> type[FeatureFamily]:
    """Class decorator adding a family to the registry under its ``name``."""
    if cls.name in _REGISTRY and _REGISTRY[cls.name] is not cls:
        raise ValueError(f"feature family {cls.name!r} registered twice")
    _REGISTRY[cls.name] = cls
    return cls


def registered_families() -> dict[str, type[FeatureFamily]]:
    """All registered families by name (importing qe.features registers the built-in ones)."""
    return dict(_REGISTRY)
