"""The typed view of a checked bundle config: ``BundleConfig`` and its sections, frozen dataclasses
(``qe.resources.bundle.config.read_bundle_config`` builds it from the document ``qe.schema.BUNDLE``
checked, completed). A member kind's own table (``[lm.KEY]``, ``[edits]``, ``[mt2]``, ...) stays a
read-only mapping that its kind reads: the kinds are registered records, a plug-in's among them, and
their rule (``MemberKind.rule``) is the one description of their keys.

A section remembers which of its keys the document held (``given``: the user's and the ones the reader
filled in); ``to_document()`` gives those back, so the manifest's ``config`` is the completed document.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any, Self

from qe.configtypes import EMPTY, Table, freeze, thaw


@dataclass(frozen=True, kw_only=True)
class Section:
    """A table of a bundle config whose keys are fields; ``given``: the keys its document held."""

    given: frozenset[str] = field(default=frozenset(), repr=False)

    @classmethod
    def of(cls, table: Mapping[str, Any], **sections: Any) -> Self:
        """The section of a checked table: its values frozen, its sub-sections given."""
        values = {key: freeze(value) for key, value in table.items() if key not in sections}
        return cls(**values, **sections, given=frozenset(table))

    def completed(self, **values: Any) -> Self:
        """A copy with keys filled in by the reader (they are written back as the user's are)."""
        return dataclasses.replace(self, **values, given=self.given | set(values))

    def to_document(self) -> dict[str, Any]:
        """The section as a plain table: the keys its document held, in field order."""
        return {f.name: _plain(getattr(self, f.name)) for f in fields(self) if f.name in self.given}


def _plain(value: Any) -> Any:
    """A field's value as plain Python (a section as its document, a table of sections as a dict)."""
    if isinstance(value, Section):
        return value.to_document()
    if isinstance(value, Mapping) and any(isinstance(item, Section) for item in value.values()):
        return {key: _plain(item) for key, item in value.items()}
    return thaw(value)


@dataclass(frozen=True, kw_only=True)
class Languages(Section):
    """``[languages]``: the bundle's source and target language codes."""

    src: str
    tgt: str

    @property
    def pair(self) -> str:
        """``en-es``."""
        return f"{self.src}-{self.tgt}"


@dataclass(frozen=True, kw_only=True)
class TextSide(Section):
    """Text settings (``[text]``, ``[text.src]``, ``[text.tgt]``); unset keys are the text defaults
    (``qe.text.TextConfig``)."""

    style: str | None = None
    case: str | None = None
    normalize: bool | None = None
    truecase_model: str | None = None
    segmenter: str | None = None


@dataclass(frozen=True, kw_only=True)
class TextSettings(TextSide):
    """``[text]``: the settings of both sides, overridden per side by ``[text.src]`` / ``[text.tgt]``."""

    src: TextSide = field(default_factory=TextSide)
    tgt: TextSide = field(default_factory=TextSide)

    def side(self, side: str) -> dict[str, Any]:
        """The settings given for one side: the shared ones, then the side's own."""
        shared = {key: value for key, value in self.to_document().items() if key not in ("src", "tgt")}
        return {**shared, **getattr(self, side).to_document()}


@dataclass(frozen=True, kw_only=True)
class Leakage(Section):
    """``[leakage]``: the evaluation files corpora are checked against, the near-duplicate threshold
    (None: ``qe.resources.leakage``'s default; 0.0: off), and whether overlapping lines are dropped."""

    eval_files: tuple[str, ...] = ()
    near_duplicate_chrf: float | None = None
    drop_overlap: bool = False


@dataclass(frozen=True, kw_only=True)
class CorpusConfig(Section):
    """``[corpora.NAME]``: a plain corpus (``src`` and / or ``tgt`` files) or a QE training split (a
    registered ``dataset`` and its ``split``, or ``src`` / ``mt`` / ``post_edits`` files) whose target
    side is ``target``. ``cross_fit``: on a QE corpus the number of folds (0: in-sample), on a plain
    one whether its lines repeating a training sentence are masked per fold."""

    src: str | None = None
    tgt: str | None = None
    dataset: str | None = None
    datasets: tuple[str, ...] | None = None  # several registered datasets pooled (``[finetuned]`` only)
    normalise: str = "none"  # "pair": each pooled pair's labels z-scored on its training labels
    split: str | None = None
    mt: str | None = None
    post_edits: str | None = None
    target: str | None = None  # "post_edits" or "mt", resolved when the corpus is read
    cross_fit: bool | int = False
    seed: int = 0

    @property
    def is_qe(self) -> bool:
        """Whether the corpus is a QE training split (``qe.schema.is_qe_corpus``)."""
        return self.dataset is not None or self.datasets is not None or self.mt is not None

    @property
    def dataset_names(self) -> tuple[str, ...]:
        """The registered datasets the corpus reads: its ``dataset``, or the pooled ``datasets``."""
        return self.datasets or ((self.dataset,) if self.dataset is not None else ())


@dataclass(frozen=True, kw_only=True)
class BundleConfig(Section):
    """A checked, completed bundle config (``qe resources build``). ``members``: each member kind's
    config section (``lm``, ``edits``, ...) -> its table, or for a per-side kind key -> table; read-only
    mappings that the kind reads (``MemberKind.tables``)."""

    name: str
    description: str = ""
    languages: Languages
    text: TextSettings = field(default_factory=TextSettings)
    leakage: Leakage = field(default_factory=Leakage)
    corpora: Mapping[str, CorpusConfig] = field(default_factory=lambda: EMPTY)
    members: Mapping[str, Table] = field(default_factory=lambda: EMPTY)

    @classmethod
    def from_document(cls, document: Mapping[str, Any]) -> BundleConfig:
        """The typed view of a checked document (``qe.schema.BUNDLE``); a key that is not a field of
        its own is a member kind's section."""
        own = {f.name for f in fields(cls)} - {"given", "members"}
        text = document.get("text", {})
        sections: dict[str, Any] = {
            "languages": Languages.of(document["languages"]),
            "corpora": MappingProxyType(
                {name: CorpusConfig.of(table) for name, table in document.get("corpora", {}).items()}
            ),
        }
        if "text" in document:
            sides = {side: TextSide.of(text[side]) for side in ("src", "tgt") if side in text}
            sections["text"] = TextSettings.of(text, **sides)
        if "leakage" in document:
            sections["leakage"] = Leakage.of(document["leakage"])
        members = {key: value for key, value in document.items() if key not in own}
        values = {key: value for key, value in document.items() if key in own}
        config = cls.of(values, **sections)
        return dataclasses.replace(config, members=freeze(members))

    def to_document(self) -> dict[str, Any]:
        """The config as a plain document (the manifest's ``config``): its own keys, then each member
        kind's section."""
        return {**super().to_document(), **thaw(self.members)}

    def with_table(self, section: str, key: str, table: Mapping[str, Any]) -> BundleConfig:
        """A copy with one member table replaced (``key`` "" for a single ``[section]`` table)."""
        value = freeze(table)
        if key:
            value = MappingProxyType({**self.members[section], key: value})
        return dataclasses.replace(self, members=MappingProxyType({**self.members, section: value}))

    def with_corpora(self, corpora: Mapping[str, CorpusConfig]) -> BundleConfig:
        """A copy with some corpora replaced (e.g. their ``target`` resolved)."""
        return dataclasses.replace(self, corpora=MappingProxyType({**self.corpora, **corpora}))
