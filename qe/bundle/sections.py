"""A resource-bundle config's sections (``qe resources build``): each one's rule beside its frozen dataclass.

``BUNDLE`` checks a bundle config: languages, text, leakage, corpora (its table-level rules check corpus
kinds, the cross-fitting folds and the corpora a member names), and the member tables (``[lm.KEY]``,
``[edits]``, ``[mt2]``, ...) whose rules the bundle-member kinds hand in (``register_tables``).
``BundleConfig`` is the typed view ``qe.bundle.config.read_bundle_config`` builds from the
checked, completed document. A member kind's own table stays a read-only mapping that its kind reads:
the kinds are registered records, a plug-in's among them, and their rule (``MemberKind.rule``) is the
one description of their keys.

A section remembers which of its keys the document held (``given``: the user's and the ones the reader
filled in); ``to_document()`` gives those back, so the manifest's ``config`` is the completed document.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any, Self

from qe.config.document import EMPTY, ReadOnlyTable, freeze, thaw
from qe.config.rules import (
    SEED,
    Bool,
    Either,
    Fields,
    FieldsAndTables,
    Int,
    Language,
    List,
    Mistake,
    Number,
    Off,
    Rule,
    Str,
    TablesOf,
    registered,
    registered_tables,
)

SIDES = ("src", "tgt")
"""The two sides of a bundle: source and target language."""


def is_qe_corpus(table: dict[str, Any]) -> bool:
    """Whether a ``[corpora.NAME]`` table is a QE training split (a dataset, several pooled, or src / mt
    files)."""
    return "dataset" in table or "datasets" in table or "mt" in table


PLAIN_CORPUS_KEYS = (*SIDES, "cross_fit")
"""The keys of a plain (parallel or monolingual) corpus; the others belong to a QE training split."""


def _corpus_kind(table: dict[str, Any]) -> Mistake:
    """A ``[corpora.NAME]`` is a plain corpus (src and/or tgt) or a QE training split (a dataset, or
    src / mt / post_edits files), never a mixture."""
    if not is_qe_corpus(table):
        if not any(side in table for side in SIDES):
            return "src", None, "src and/or tgt files (or dataset / mt for a QE training split)"
        extra = sorted(set(table) - set(PLAIN_CORPUS_KEYS))
        if extra:
            return extra[0], table[extra[0]], "nothing on a plain corpus: it belongs to a QE training split"
        if not isinstance(table.get("cross_fit", False), bool):
            return (
                "cross_fit",
                table["cross_fit"],
                "true or false on a plain corpus (the folds come from the QE training corpus)",
            )
        if "src" in table and table.get("src") == table.get("tgt"):
            return "tgt", table["tgt"], "another file than src: a parallel corpus pairs two languages"
        return None
    if "tgt" in table:
        return (
            "tgt",
            table["tgt"],
            'nothing on a QE training split: its target side is target = "post_edits" or "mt"',
        )
    files = [key for key in ("src", "mt", "post_edits") if key in table]
    if "datasets" in table and ("dataset" in table or files):
        key = "dataset" if "dataset" in table else files[0]
        return key, table[key], "nothing beside datasets: the pooled datasets give the text"
    if "normalise" in table and "datasets" not in table:
        return "normalise", table["normalise"], "nothing without datasets (it scales pooled labels)"
    if "datasets" in table:
        return None
    if "dataset" in table and files:
        return (
            files[0],
            table[files[0]],
            "nothing beside dataset: give dataset or files (src, mt, post_edits)",
        )
    if "dataset" not in table and "src" not in table:
        return "src", None, "src and mt files (a QE training split from files)"
    if "dataset" not in table and "split" in table:
        return "split", table["split"], "nothing without dataset (split goes with dataset)"
    return None


def _folds(table: dict[str, Any]) -> Any:
    """A corpus's ``cross_fit`` as given (a QE training split cross-fits unless it says otherwise)."""
    return table.get("cross_fit", is_qe_corpus(table))


def _one_fold_source(corpora: dict[str, Any]) -> Mistake:
    """At most one QE training corpus defines the cross-fitting folds, and a plain corpus masked by
    them (``cross_fit = true``) needs one."""
    fitted = [name for name, table in corpora.items() if is_qe_corpus(table) and _folds(table)]
    if len(fitted) > 1:
        where = f"only one QE training corpus defines the folds (corpora.{fitted[0]} does)"
        return f"{fitted[1]}.cross_fit", _folds(corpora[fitted[1]]), f"false: {where}"
    asked = [name for name, table in corpora.items() if not is_qe_corpus(table) and _folds(table)]
    if asked and not fitted:
        return (
            f"{asked[0]}.cross_fit",
            True,
            "false without a QE training corpus to take the folds from (a [corpora.NAME] with "
            'dataset = "..." or src / mt files)',
        )
    return None


def _known_corpora(config: dict[str, Any]) -> Mistake:
    """The corpora a member table names are ``[corpora]`` entries."""
    known = config.get("corpora", {})
    for section, rule in registered_tables("bundle member").items():
        tables = config.get(section)
        if not isinstance(tables, dict):
            continue
        keyed = tables.items() if isinstance(rule, TablesOf) else [("", tables)]
        for key, table in keyed:
            for index, corpus in enumerate(table.get("corpora", []) if isinstance(table, dict) else []):
                if corpus not in known:
                    where = f"{section}.{key}" if key else section
                    listed = ", ".join(known) or "none"
                    return f"{where}.corpora[{index}]", corpus, f"a corpus of [corpora] ({listed})"
    return None


TEXT_FIELDS: dict[str, Rule] = {
    "style": Str(registered("text style")),
    "case": Str(registered("text case")),
    "normalize": Bool(),
    "truecase_model": Str(),
    "segmenter": Str(registered("segmenter")),
}
BUNDLE = FieldsAndTables(
    {
        "name": Str(),
        "description": Str(),
        "languages": Fields({"src": Language(), "tgt": Language()}, required=("src", "tgt")),
        "text": Fields({**TEXT_FIELDS, "src": Fields(TEXT_FIELDS), "tgt": Fields(TEXT_FIELDS)}),
        "leakage": Fields(
            {
                "eval_files": List(Str()),
                # 0 or false: no near-duplicate search; below 0.5 unrelated sentences would match
                "near_duplicate_chrf": Either(Off(), Number(0.5, 1.0)),
                "drop_overlap": Bool(),  # leave the overlapping lines out instead of refusing
            }
        ),
        "corpora": TablesOf(
            Fields(
                {
                    "src": Str(),
                    "tgt": Str(),
                    # a QE training split (qe.resources.crossfit): a registered dataset or files
                    "dataset": Str(registered("dataset"), noun="dataset"),
                    # several pooled (qe.data.pooled): read by [finetuned] and [crossencoder] alone
                    "datasets": List(Str(registered("dataset"), noun="dataset"), min_len=1),
                    "normalise": Str(["none", "pair"]),
                    "split": Str(),
                    "mt": Str(),
                    "post_edits": Str(),
                    "target": Str(["post_edits", "mt"]),
                    "cross_fit": Either(Bool(), Int(2, 50)),
                    "seed": SEED,
                },
                rules=(_corpus_kind,),
            ),
            rules=(_one_fold_source,),
        ),
    },
    "bundle member",  # the member tables ([lm.KEY], [ibm1], [edits], ...): qe.bundle.kinds
    ("languages",),
    rules=(_known_corpora,),
)


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
    (``qe.text.processing.TextConfig``)."""

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
    datasets: tuple[str, ...] | None = None  # several registered datasets pooled (``MemberKind.pooled``)
    normalise: str = "none"  # "pair": each pooled pair's labels z-scored on its training labels
    split: str | None = None
    mt: str | None = None
    post_edits: str | None = None
    target: str | None = None  # "post_edits" or "mt", resolved when the corpus is read
    cross_fit: bool | int = False
    seed: int = 0

    @property
    def is_qe(self) -> bool:
        """Whether the corpus is a QE training split (``is_qe_corpus``)."""
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
    members: Mapping[str, ReadOnlyTable] = field(default_factory=lambda: EMPTY)

    @classmethod
    def from_document(cls, document: Mapping[str, Any]) -> BundleConfig:
        """The typed view of a checked document (``qe.bundle.sections.BUNDLE``); a key that is not
        a field of its own is a member kind's section."""
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
