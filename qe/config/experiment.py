"""An experiment config (``qe run`` / ``qe ablate``): its sections composed, the checks across them, and
its typed view ``ExperimentConfig``."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from qe.config.cv import CV, CvConfig
from qe.config.data import DATA, DataConfig
from qe.config.document import SHOWN, ReadOnlyTable, as_document, freeze, from_table, no_table
from qe.config.features import FEATURES, POOLED_FAMILIES, FeaturesConfig
from qe.config.learner import LEARNER, LearnerConfig
from qe.config.report import REPORT, AgainstEntry, ReportConfig
from qe.config.rules import (
    MT2,
    SEED,
    Fields,
    Mistake,
    Str,
)
from qe.config.selection import SELECTION, SelectionConfig


def _feature_tables(config: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The config's ``[features]`` and each ``[[report.against]]`` entry's, with the key naming each."""
    tables = [("features", config.get("features", {}))]
    tables += [
        (f"report.against[{index}].features", entry.get("features") or {})
        for index, entry in enumerate(config.get("report", {}).get("against", []))
    ]
    return tables


def _pooled_features(config: dict[str, Any]) -> Mistake:
    """A pooled config's families (its own and each ``[[report.against]]`` one's) are language-agnostic."""
    if "datasets" not in config.get("data", {}):
        return None
    for where, features in _feature_tables(config):
        per_pair = [name for name in features.get("families", []) if name not in POOLED_FAMILIES]
        if per_pair:
            return (
                f"{where}.families",
                per_pair[0],
                f"a language-agnostic family with data.datasets ({', '.join(POOLED_FAMILIES)}): "
                f"{per_pair[0]!r} reads resources or tools of one language pair",
            )
    return None


def _has_data(config: dict[str, Any]) -> Mistake:
    data = config.get("data", {})
    if "dataset" not in data and "datasets" not in data and not ("train" in data and "test" in data):
        return "data.dataset", None, "a registered dataset, or both [data.train] and [data.test] files"
    return None


def _has_features(config: dict[str, Any]) -> Mistake:
    """Features come from sets or families, or from feature tables (for this system and each
    ``[[report.against]]`` one that replaces them)."""
    data = config.get("data", {})
    if all("features" in data.get(split, {}) for split in ("train", "test")):
        return None
    features = config.get("features", {})
    if not features.get("sets") and not features.get("families"):
        return "features.families", None, "feature sets or families (or data.*.features tables)"
    for index, entry in enumerate(config.get("report", {}).get("against", [])):
        other = entry.get("features")
        if other is not None and not other.get("sets") and not other.get("families"):
            where = f"report.against[{index}].features"
            return where, other, "a table naming feature sets or families (the data has no feature tables)"
    return None


def _sets_need_a_dataset(config: dict[str, Any]) -> Mistake:
    """Registered feature sets are a registered dataset's (for this system and each ``[[report.against]]``
    one that replaces its features)."""
    if "dataset" in config.get("data", {}):
        return None
    for where, features in _feature_tables(config):
        if features.get("sets"):
            return (
                f"{where}.sets",
                features["sets"],
                "no feature sets without data.dataset (they are a dataset's)",
            )
    return None


EXPERIMENT = Fields(
    {
        "name": Str(),
        "description": Str(),
        "config_file": Str(),  # set by qe.run.config.load_config: where the config was read from
        "seed": SEED,
        "data": DATA,
        "features": FEATURES,
        "learner": LEARNER,
        "selection": SELECTION,
        "cv": CV,
        "report": REPORT,
        "mt2": MT2,
    },
    ("learner",),
    rules=(_has_data, _has_features, _sets_need_a_dataset, _pooled_features),
)
"""An experiment config (``qe run`` / ``qe ablate``); its table-level rules are the checks across sections."""


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
    mt2: ReadOnlyTable | None = None  # a second MT system: engine, pair
    config_file: str | None = None  # where the config was read from
    document: ReadOnlyTable = field(default_factory=no_table, repr=False, compare=False)

    @classmethod
    def from_document(cls, document: Mapping[str, Any]) -> ExperimentConfig:
        """The typed view of a checked document (``qe.config.experiment.EXPERIMENT``, paths resolved), which
        it keeps for its key order."""
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
        return as_document(self, self.document)

    def replace(self, **changes: Any) -> ExperimentConfig:
        """A copy with some fields changed (``dataclasses.replace``), e.g. another system of a run."""
        return dataclasses.replace(self, **changes)
