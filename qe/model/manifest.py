"""A saved model's manifest: what it needs to score raw text again and what it says of itself.

One frozen record, written by a run (``qe.run.persist``) and read by every reader (``QEModel``,
``ScoringContext``, the service, ``qe predict``) by attribute; its rule stands beside it, so that a
damaged or crafted model file is refused in one line (``model.skops: manifest.label_range = [5, 1]:
expected ...``) instead of failing half-way. The checked document is kept and written back as it was
read, so a model saved again holds the same manifest bytes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from qe.config.document import ReadOnlyTable, freeze, no_table, thaw
from qe.config.rules import AnyTable, Anything, Bool, Fields, LabelRange, List, Optional, Str, TablesOf, check
from qe.infra.errors import QEInputError
from qe.infra.io import parse_bounded

MANIFEST = Fields(
    {
        "signature": Optional(Str()),
        "qe_version": Str(),
        "config_name": Optional(Str()),
        "languages": Optional(TablesOf(Optional(Str()))),
        "families": List(Str()),
        "family_settings": TablesOf(AnyTable()),
        "feature_sets": List(Str()),
        "resources": Optional(Fields({"path": Str(), "signature": Str()}, ("path", "signature"))),
        "mt2": Optional(Fields({"engine": Str(), "pair": Str()}, ("pair",), others=Str())),
        "training_data": Optional(Str()),
        "fit_on": Optional(Str()),
        "label_range": Optional(LabelRange()),
        "pooled": Optional(AnyTable()),
        "cv": TablesOf(Anything()),
        "label_kind": Optional(Str()),
        "higher_is_better": Optional(Bool()),
    }
)
"""The manifest's keys and what each may hold; a key it does not name is refused."""


@dataclass(frozen=True)
class BundleReference:
    """The resource bundle a model was trained with: where it was and its signature."""

    path: str
    signature: str


@dataclass(frozen=True, kw_only=True)
class ModelManifest:
    """A model's manifest (see the module docstring); ``document``: the checked JSON document."""

    signature: str | None = None
    qe_version: str | None = None
    config_name: str | None = None
    languages: ReadOnlyTable | None = None
    families: tuple[str, ...] = ()
    family_settings: ReadOnlyTable = field(default_factory=no_table)
    feature_sets: tuple[str, ...] = ()
    resources: BundleReference | None = None
    mt2: ReadOnlyTable | None = None
    training_data: str | None = None
    fit_on: str | None = None
    label_range: tuple[float, float] | None = None
    pooled: ReadOnlyTable | None = None
    cv: ReadOnlyTable = field(default_factory=no_table)
    label_kind: str | None = None
    higher_is_better: bool | None = None
    document: ReadOnlyTable = field(default_factory=no_table, repr=False, compare=False)

    @classmethod
    def from_document(cls, document: Mapping[str, Any], path: str | Path | None = None) -> ModelManifest:
        """The manifest of a document (a dict as a run writes it), checked against ``MANIFEST``."""
        checked = check(MANIFEST, thaw(document), path, "manifest")
        values = {key: freeze(value) for key, value in checked.items()}
        if values.get("resources") is not None:
            values["resources"] = BundleReference(**values["resources"])
        if values.get("label_range") is not None:
            values["label_range"] = tuple(float(bound) for bound in values["label_range"])
        return cls(**values, document=freeze(checked))

    @classmethod
    def from_json(cls, text: Any, path: str | Path | None = None) -> ModelManifest:
        """The manifest a model file holds (its JSON text), checked; one line naming ``path`` if not."""
        try:
            document = parse_bounded(json.loads, text, path, "the model's manifest")
        except (TypeError, json.JSONDecodeError):
            raise QEInputError("not a qe model file (unreadable manifest)", path) from None
        if not isinstance(document, dict):
            raise QEInputError("not a qe model file (its manifest is not a table)", path)
        return cls.from_document(document, path)

    def to_json(self) -> str:
        """The manifest as the model file holds it: the document as it was given."""
        return json.dumps(thaw(self.document))

    def with_changes(self, **changes: Any) -> ModelManifest:
        """A copy with some keys set (checked like a read manifest)."""
        return ModelManifest.from_document({**thaw(self.document), **changes})

    @property
    def major_version(self) -> str:
        """The major version of the qe that wrote the model (``"0"`` when it does not say)."""
        return str(self.qe_version or "0").split(".")[0]
