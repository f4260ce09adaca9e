"""The typed view of a checked experiment config: ``ExperimentConfig`` and its sections, frozen dataclasses
whose fields carry the defaults (``qe.config.load_config`` builds it from the document ``qe.schema``
checked). Tables that are open by design (a family's settings, learner or selector parameters, a
split's files and family inputs, ``[mt2]``) stay read-only mappings; ``thaw`` turns them back into plain
dicts and lists where they leave the config (a family, a learner, JSON).

The document the user wrote is kept beside the view: ``to_document()`` writes the config back in the
user's key order, so a run's ``config.toml`` reads as the file it came from, completed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any

Table = Mapping[str, Any]
"""A read-only table of a config (a ``types.MappingProxyType`` whose lists are tuples)."""

EMPTY: Table = MappingProxyType({})


def _empty() -> Table:
    return EMPTY


SHOWN = MappingProxyType({"shown": True})
"""Field metadata: a written-back config always shows the key, first and in field order (``seed = 42``,
``[cv] folds = 5``), even when the user left it out."""


def freeze(value: Any) -> Any:
    """A parsed document's value made read-only: tables become mappings that cannot be changed,
    arrays tuples (at any depth)."""
    if isinstance(value, Mapping):
        return MappingProxyType({key: freeze(item) for key, item in value.items()})
    if isinstance(value, list | tuple):
        return tuple(freeze(item) for item in value)
    return value


def thaw(value: Any) -> Any:
    """A config value as plain Python (dicts and lists, a section as the dict of its fields): what a
    family, a learner, ``json`` or ``tomli_w`` takes."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: thaw(getattr(value, f.name)) for f in fields(value) if f.name != "document"}
    if isinstance(value, Mapping):
        return {key: thaw(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [thaw(item) for item in value]
    return value


def from_table(cls: type, table: Mapping[str, Any], **sections: Any) -> Any:
    """A section of ``cls`` from its checked table: its values frozen, its sub-sections given."""
    return cls(**{key: freeze(value) for key, value in table.items() if key not in sections}, **sections)


def _written(section: Any, given: Mapping[str, Any]) -> dict[str, Any]:
    """A section as a document: the keys whose defaults are shown, then the user's keys in the user's
    order (``given``), then any other key set to something else than its default."""
    own = {f.name: f for f in fields(section) if f.name != "document"}
    shown = [name for name, f in own.items() if f.metadata.get("shown")]
    order = [*shown, *(key for key in given if key in own and key not in shown)]
    order += [name for name in own if name not in order]
    written: dict[str, Any] = {}
    for name in order:
        value, f = getattr(section, name), own[name]
        default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
        if value is None or (name not in given and name not in shown and value == default):
            continue  # TOML has no null: an unset key is left out
        inner = given.get(name)
        if dataclasses.is_dataclass(value):
            written[name] = _written(value, inner if isinstance(inner, Mapping) else {})
        elif isinstance(value, tuple) and value and dataclasses.is_dataclass(value[0]):
            written[name] = [_written(item, {}) for item in value]
        else:
            written[name] = thaw(value)
    return written


@dataclass(frozen=True, kw_only=True)
class DataConfig:
    """``[data]``: a registered dataset (and its split names), several pooled (``datasets``: one model for
    many language pairs, ``qe.data.pooled``), or the user's files per split."""

    train_split: str = field(default="train", metadata=SHOWN)
    test_split: str = field(default="test", metadata=SHOWN)
    dataset: str | None = None
    datasets: tuple[str, ...] | None = None  # pooled: each one's train (and dev) split, one model
    test_dataset: str | None = None  # pooled: the one dataset tested (unset: each pooled one's test)
    normalise: str = "none"  # pooled labels: "none", or "pair" (z-scored per dataset on its train labels)
    data_dir: str | None = None
    dev_split: str | None = None
    label_range: tuple[float, float] | None = None
    allow_overlap: bool = False
    fit_on: str = "train"  # or "train+dev": the chosen configuration refitted on both
    languages: Table | None = None  # src / tgt codes, when neither the bundle nor the dataset says
    train: Table | None = None  # [data.<split>]: file roles (src, mt, table, ...) and family inputs
    dev: Table | None = None
    test: Table | None = None

    def files(self, split: str) -> Table:
        """The files ``[data.<split>]`` names (none: an empty table)."""
        return getattr(self, split) or EMPTY

    def split_name(self, split: str) -> str | None:
        """The registered dataset's name of ``train`` / ``dev`` / ``test``."""
        return getattr(self, f"{split}_split")

    @property
    def pooled(self) -> bool:
        """Whether several datasets are pooled (``datasets``)."""
        return self.datasets is not None

    @property
    def has_dev(self) -> bool:
        """Whether a dev split is named (``dev_split`` or ``[data.dev]``)."""
        return self.dev is not None or self.dev_split is not None


@dataclass(frozen=True, kw_only=True)
class FeaturesConfig:
    """``[features]``: registered feature sets, feature families, the resource bundle, family settings."""

    sets: tuple[str, ...] = field(default=(), metadata=SHOWN)
    families: tuple[str, ...] = field(default=(), metadata=SHOWN)
    # family -> its settings (and per-split tables)
    settings: Table = field(default_factory=_empty, metadata=SHOWN)
    resources: str | None = None


@dataclass(frozen=True, kw_only=True)
class LearnerConfig:
    """``[learner]``: a registered learner, its parameters or grid, and how it is fitted and scored."""

    name: str
    # checked against scikit-learn's parameter constraints when the learner is built
    params: Table = field(default_factory=_empty, metadata=SHOWN)
    scoring: str = field(default="MAE", metadata=SHOWN)
    clip: bool = field(default=True, metadata=SHOWN)
    grid: str | Table | None = None  # "default", or parameter -> values
    scale: bool | None = None
    aux_targets: tuple[str, ...] | None = None
    fast_above: int | None = None  # name = "auto": the exact SVR up to this many training rows


@dataclass(frozen=True, kw_only=True)
class SelectionConfig:
    """``[selection]``: a registered feature selector and its parameters."""

    name: str
    params: Table = field(default_factory=_empty)


@dataclass(frozen=True, kw_only=True)
class CvConfig:
    """``[cv]``: cross-validation folds and parallel jobs."""

    folds: int = field(default=5, metadata=SHOWN)
    n_jobs: int = field(default=1, metadata=SHOWN)


@dataclass(frozen=True, kw_only=True)
class AgainstEntry:
    """One ``[[report.against]]`` system: another config (``config``, a resolved path), or this config
    with other features (``features``: a ``[features]`` table whose sets and families replace ours)."""

    name: str
    config: str | None = None
    features: Table | None = None


@dataclass(frozen=True, kw_only=True)
class ReportConfig:
    """``[report]``: whether the published systems are shown, and the systems to test ours against."""

    published: bool = field(default=True, metadata=SHOWN)
    against: tuple[AgainstEntry, ...] = field(default=(), metadata=SHOWN)


@dataclass(frozen=True, kw_only=True)
class ExperimentConfig:
    """A checked, completed experiment config (``qe run``, ``qe ablate``); ``document`` is the checked
    document as the user wrote it (its key order is kept by ``to_document``)."""

    seed: int = field(default=42, metadata=SHOWN)
    data: DataConfig = field(default_factory=DataConfig, metadata=SHOWN)
    features: FeaturesConfig = field(default_factory=FeaturesConfig, metadata=SHOWN)
    learner: LearnerConfig = field(metadata=SHOWN)
    cv: CvConfig = field(default_factory=CvConfig, metadata=SHOWN)
    report: ReportConfig = field(default_factory=ReportConfig, metadata=SHOWN)
    name: str
    description: str | None = None
    selection: SelectionConfig | None = None
    mt2: Table | None = None  # a second MT system: engine, pair
    config_file: str | None = None  # where the config was read from
    document: Table = field(default_factory=_empty, repr=False, compare=False)

    @classmethod
    def from_document(cls, document: Mapping[str, Any]) -> ExperimentConfig:
        """The typed view of a checked document (``qe.schema.EXPERIMENT``, paths resolved), which it
        keeps for its key order."""
        report = document.get("report", {})
        sections = {
            "data": from_table(DataConfig, document.get("data", {})),
            "features": from_table(FeaturesConfig, document.get("features", {})),
            "learner": from_table(LearnerConfig, document["learner"]),
            "selection": from_table(SelectionConfig, document["selection"])
            if document.get("selection")
            else None,
            "cv": from_table(CvConfig, document.get("cv", {})),
            "report": from_table(
                ReportConfig,
                report,
                against=tuple(from_table(AgainstEntry, entry) for entry in report.get("against", ())),
            ),
            "document": freeze(document),
        }
        return from_table(cls, document, **sections)

    def to_document(self) -> dict[str, Any]:
        """The config as a plain document (what ``config.toml`` in a run directory holds): the defaults
        shown, then the user's keys in the user's order, unset keys left out."""
        return _written(self, self.document)

    def replace(self, **changes: Any) -> ExperimentConfig:
        """A copy with some fields changed (``dataclasses.replace``), e.g. another system of a run."""
        return dataclasses.replace(self, **changes)
