"""The registry of known datasets: one ``RegisteredDataset`` record per dataset, by name.

A module of ``qe.data.sets`` registers its records with :func:`register_dataset` when it is imported;
importing this module imports them all (in module-name order, the order error messages list them),
so adding a dataset is adding one file there. The names go to the schema (``register_names``), so
configs are checked against them without the schema importing this registry.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass, field

from qe.config.rules import register_names
from qe.infra.errors import QEInputError


@dataclass(frozen=True)
class RegisteredFile:
    """One file of a registered dataset: where it lives under the data dir, its checksum, its origin."""

    path: str
    sha256: str
    url: str  # a plain file, or "ARCHIVE_URL#member-basename" for files inside a .tar.gz


@dataclass(frozen=True)
class RegisteredDataset:
    """A known dataset: its splits (role -> file), label, languages and named feature sets.

    ``label_range`` is None for an unbounded label (z-scores): no range check, no clipping.
    ``split_aliases`` maps a config's split name to the real one (``test`` -> ``test20``).
    """

    name: str
    languages: tuple[str, str]
    label_range: tuple[float, float] | None
    splits: dict[str, dict[str, RegisteredFile]]
    feature_sets: dict[str, dict[str, RegisteredFile]] = field(default_factory=dict)
    feature_names: dict[str, list[str]] = field(default_factory=dict)
    folder: str = ""
    split_aliases: dict[str, str] = field(default_factory=dict)

    def split_name(self, split: str) -> str:
        """The real split a config's split name stands for (``test`` -> ``test20``), checked."""
        real = self.split_aliases.get(split, split)
        if real not in self.splits:
            known = ", ".join([*self.splits, *(f"{a} (= {b})" for a, b in self.split_aliases.items())])
            raise QEInputError(f"dataset {self.name} has no split {split!r} (known: {known})")
        return real

    @property
    def test_split(self) -> str:
        """The split holding the evaluation data (never used to build resources)."""
        return self.split_name("test")


DATASETS: dict[str, RegisteredDataset] = {}
"""Every registered dataset by name, complete once this module is imported."""
register_names("dataset", DATASETS)


def register_dataset(dataset: RegisteredDataset) -> RegisteredDataset:
    """Add a dataset record to the registry under its name (a name taken twice is a programming error)."""
    if dataset.name in DATASETS and DATASETS[dataset.name] != dataset:
        raise ValueError(f"dataset {dataset.name!r} registered twice")
    DATASETS[dataset.name] = dataset
    return dataset


def registered_dataset(name: str) -> RegisteredDataset:
    """The record of a dataset, or one clear error listing the known ones."""
    if name not in DATASETS:
        raise QEInputError(f"unknown dataset {name!r} (known: {', '.join(DATASETS)})")
    return DATASETS[name]


def _load_records() -> None:
    """Import every module of ``qe.data.sets`` (each registers its datasets)."""
    import qe.data.sets as package

    for module in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        importlib.import_module(f"{package.__name__}.{module.name}")


_load_records()
