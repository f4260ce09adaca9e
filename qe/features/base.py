"""The feature-family plug-in contract: a named set of documented features computed over batches of pairs.

A family is one module in ``qe/features/`` (or an installed package's ``qe.feature_families`` entry
point) holding one ``FeatureFamily`` subclass decorated with ``@register_family``. The class declares:

- ``setting_specs``: every setting with its default and allowed values (``Setting``); the base class
  fills defaults, refuses unknown keys and bad values with one line naming the family, the key and
  what is allowed, and builds ``signature()`` from the settings that change values;
- ``inputs``: per-pair inputs beyond source and MT (``PairInput``, e.g. a pseudo-reference or a
  decoder log), which ``qe features``, ``qe run`` (``[data.<split>]``) and ``qe predict`` all accept
  under the same names;
- ``member_settings``: settings whose values name the resource-bundle members it reads, so a bundle
  that lacks one is refused by ``bind`` before any work;
- ``annotations``: the shared annotations of a batch it reads (``qe.features.annotations``: tokens,
  UPOS tags), so that families extracted together compute them once;
- ``fresh_state()``: per-process caches, left out when the family is pickled for a worker;
- what it needs installed (``requires``, ``missing_pieces``) and what it loses for a language no
  POS tagger covers (``tagger_loss``, ``word_classes``, ``asks_tagger``, ``bundle_losses``), which
  ``qe.doctor.pieces`` and ``qe.doctor.tagless`` ask every family for;
- ``example``: the small case the family contract test runs it on (``FamilyExample``).
"""

from __future__ import annotations

import importlib.util
import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np

from qe.config.rules import (
    AnyTable,
    Anything,
    Bool,
    Choice,
    Either,
    Int,
    Language,
    Number,
    Rule,
    Str,
    Text,
    Unset,
)
from qe.features.annotations import Annotations
from qe.infra.errors import QEInputError


@dataclass(frozen=True)
class FeatureSpec:
    """One feature: its short name (unique in its family), a one-line definition, the resource it needs."""

    name: str
    description: str
    resource: str | None = None


@dataclass
class Pairs:
    """Sentence pairs on their way to the features: what a scorer is given, what the extractor cuts into
    batches and what a family is handed, one object all the way down.

    ``ids`` are the dataset's sentence ids (used to match external logs such as Moses n-best
    lists); ``src`` / ``mt`` are the raw sentences; ``extra`` carries the per-pair inputs the
    families declare (e.g. ``pseudo_ref``) keyed by name, each a list aligned with ``ids``;
    ``origins`` says, when known, where ``src``, ``mt`` and each extra input were read: ``(file,
    line of the first pair)``, so a family can name the file and line of a bad value; a fold's share
    of a batch keeps them, with ``positions`` (each pair's row in the batch they count from).
    ``start`` is the 0-based position of the first pair in a longer input (messages count lines from
    it). ``annotations`` holds the tokens and tags the families compute once and share
    (``qe.features.annotations``).
    """

    ids: list[str]
    src: list[str]
    mt: list[str]
    extra: dict[str, list[Any]] = field(default_factory=dict)
    origins: dict[str, tuple[str, int]] = field(default_factory=dict)
    positions: list[int] | None = None
    start: int = 0
    annotations: Annotations = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.annotations = Annotations(self.src, self.mt)

    def __len__(self) -> int:
        return len(self.ids)

    @classmethod
    def of(
        cls,
        src: Any,
        mt: Any,
        *,
        extra: Mapping[str, Any] | None = None,
        origins: Mapping[str, tuple[str, int]] | None = None,
        ids: Any = None,
        start: int = 0,
    ) -> Pairs:
        """Pairs from aligned texts (any sequences), refused in one line when they are not aligned;
        ``ids`` default to the pairs' positions counted from ``start``."""
        src, mt = list(src), list(mt)
        extra = {name: list(lines) for name, lines in (extra or {}).items()}
        for name, lines in {"mt": mt, **extra}.items():
            if len(lines) != len(src):
                raise QEInputError(f"{len(src)} source sentences but {len(lines)} lines of {name}")
        ids = [str(start + k) for k in range(len(src))] if ids is None else [str(i) for i in ids]
        if len(ids) != len(src):
            raise QEInputError(f"{len(ids)} ids for {len(src)} sentence pairs")
        return cls(ids, src, mt, extra, dict(origins or {}), start=start)

    def slice(self, begin: int, end: int) -> Pairs:
        """The pairs ``begin`` to ``end`` (their origins and start moved along)."""
        return Pairs(
            ids=self.ids[begin:end],
            src=self.src[begin:end],
            mt=self.mt[begin:end],
            extra={key: values[begin:end] for key, values in self.extra.items()},
            origins={key: (path, line + begin) for key, (path, line) in self.origins.items()},
            start=self.start + begin,
        )

    def line(self, row: int) -> int:
        """The 1-based line of pair ``row`` in the input it came from."""
        return self.start + row + 1

    def where(self, name: str, row: int) -> tuple[str | None, int | None]:
        """The file and line of input ``name``'s value for pair ``row``; ``(None, None)`` if unknown."""
        if name not in self.origins:
            return None, None
        path, first = self.origins[name]
        return path, first + (row if self.positions is None else self.positions[row])


MAX_CHARS = 20_000
"""The longest text of one pair (source, MT or a line input) a family reads unless it declares less:
25 times the longest sentence of WMT12, MLQE-PE and newstest (about 800 characters), 12 times the
longest MLQE-PE log-probability line. See docs/length-limits.md."""

ROLES = {"src": "source", "mt": "MT"}


@dataclass(frozen=True)
class TextLimits:
    """The longest text of one pair a family reads (docs/length-limits.md): ``chars`` characters of
    the source, the MT and each line input it reads, checked before any family runs; ``tokens``
    tokens of one text as the family splits it, for the families whose time or memory grows with the
    product of two lengths, checked by the family before that work (``FeatureFamily.check_tokens``)."""

    chars: int = MAX_CHARS
    tokens: int | None = None


# ====================================================================== settings


@dataclass(frozen=True)
class Setting:
    """One family setting: default, a one-line doc, and the rule its values follow (``qe.config.rules``).

    ``affects_values=False`` marks speed knobs (worker counts, batch sizes) left out of signatures.
    """

    default: Any
    doc: str
    rule: Rule = field(default_factory=Anything)
    affects_values: bool = True

    @property
    def options(self) -> tuple[Any, ...]:
        """The allowed values, for a setting that is a choice (else empty)."""
        return getattr(self.rule, "options", ())

    def check(self, value: Any, key: str, path: str | Path | None = None) -> Any:
        """The value, or one line naming ``key`` and what is allowed (the default always passes)."""
        if value is self.default or (value == self.default and type(value) is type(self.default)):
            return value
        return self.rule.check(value, key, None if path is None else Path(path))


def choice(default: Any, options: tuple[Any, ...], doc: str) -> Setting:
    """One of ``options`` (compared by value and type: booleans are not numbers)."""
    return Setting(default, doc, Choice(options))


def flag(default: bool, doc: str) -> Setting:
    """true or false."""
    return Setting(default, doc, Bool())


def integer(
    default: Any,
    doc: str,
    low: int | None = None,
    high: int | None = None,
    *,
    also: tuple[str, ...] = (),
    affects_values: bool = True,
) -> Setting:
    """An integer in [low, high] (either bound optional), or one of the words in ``also``."""
    rule: Rule = Int(low, high)
    if also:
        rule = Either(rule, Str(also))
    return Setting(default, doc, rule, affects_values)


def number(default: Any, doc: str, low: float, high: float, *, high_open: bool = False) -> Setting:
    """A finite number in [low, high] (or [low, high) with ``high_open``)."""
    return Setting(default, doc, Number(low, high, open_high=high_open))


def string(default: str | None, doc: str, *, optional: bool = False) -> Setting:
    """A non-blank string (or unset with ``optional``): names, language codes."""
    return Setting(default, doc, Either(Text(), Unset()) if optional else Text())


def language(doc: str) -> Setting:
    """A language code (en, pt-BR), or unset."""
    return Setting(None, doc, Either(Language(), Unset()))


def path(default: str | None, doc: str) -> Setting:
    """A file or directory path (a string or path object), or unset."""
    return Setting(default, doc, Either(Text(path_like=True), Unset()))


def toml_table(default: dict | None, doc: str) -> Setting:
    """A TOML table (checked further by the family), or unset."""
    return Setting(default, doc, Either(AnyTable(), Unset()))


# ====================================================================== per-pair inputs


@dataclass(frozen=True)
class PairInput:
    """An input a family needs besides source and MT, under one name everywhere.

    ``kind="lines"``: a text file with one line per pair (``batch.extra[name]``); ``kind="file"``:
    a log matched by sentence id, handed to the family as the setting ``setting`` (default ``name``)
    of the split it belongs to. ``provider`` names a bundle member that can supply the input when no
    file is given (e.g. ``mt2`` translates the source into a pseudo-reference). ``option`` is the
    command-line flag of ``qe features`` and ``qe predict``.
    """

    name: str
    help: str
    kind: Literal["lines", "file"] = "lines"
    provider: str | None = None
    setting: str | None = None
    option: str | None = None

    @property
    def flag(self) -> str:
        """The command-line option, e.g. ``--pseudo-ref``."""
        return self.option or "--" + self.name.replace("_", "-")

    @property
    def setting_name(self) -> str:
        """For ``kind="file"``: the family setting the path goes to."""
        return self.setting or self.name


# ====================================================================== the contract's example


@dataclass(frozen=True)
class FamilyExample:
    """The small case the family contract (``tests/test_family_contract.py``) runs a family on, so that
    every registered family, an installed plug-in's too, is checked on its own declared terms.

    ``settings``: the family's settings. ``bundle``: bind it to the contract's toy resource bundle
    (English-Spanish, Moses-tokenized; members ``lm.src``, ``lm.tgt``, ``ngrams.src``, ``ibm1.s2t``,
    ``ibm1.t2s``, ``edits``), else to none. ``inputs(src, mt)``: its per-pair inputs for the
    contract's source and MT sentences (each a list of one line per pair). ``files``: file name ->
    text, written into a scratch folder that is the working directory while the contract runs (for
    settings naming a log). ``requires``: Python modules without which the case is skipped.
    """

    settings: Mapping[str, Any] = field(default_factory=dict)
    bundle: bool = False
    inputs: Callable[[list[str], list[str]], dict[str, list[str]]] | None = None
    files: Mapping[str, str] = field(default_factory=dict)
    requires: tuple[str, ...] = ()


# ====================================================================== the family


def _render(value: Any) -> str:
    """A compact, stable text form of a setting value for signatures."""
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, dict | list):
        return json.dumps(value, sort_keys=True, separators=(",", ":"))
    return str(value)


class FeatureFamily(ABC):
    """Base class of every family: settings, inputs, resources and pickling are handled here.

    Subclasses set ``name`` and ``setting_specs`` and implement ``specs`` and ``extract``; they may
    override ``__init__`` (derived state: call ``super().__init__``), ``bind`` (resolve settings
    against the bundle: call ``super().bind``), ``check_ids``, ``fresh_state`` and
    ``signature_details`` (values that change features but are not settings, e.g. library versions).
    """

    name: ClassVar[str]
    setting_specs: ClassVar[dict[str, Setting]] = {}
    inputs: ClassVar[tuple[PairInput, ...]] = ()
    annotations: ClassVar[tuple[str, ...]] = ()
    member_settings: ClassVar[tuple[str, ...]] = ()
    member_kinds: ClassVar[dict[str, tuple[str, ...]]] = {}
    """Setting -> the bundle member kinds it may name (``{"src_lm": ("kenlm",)}``), checked by ``bind``."""
    needs_bundle: ClassVar[bool] = False
    limits: ClassVar[TextLimits] = TextLimits()
    """The longest text of one pair the family reads (every family declares its own)."""
    requires: ClassVar[dict[str, str]] = {}
    """Python modules the family needs that qe does not install, each with how to install it
    (``{"kenlm": "pip install 'qe[lm]'"}``): ``missing_pieces`` names a missing one."""
    tagger_loss: ClassVar[str | None] = None
    """What the family loses for a language no installed POS tagger covers (None: it tags nothing);
    ``qe.doctor.tagless`` says it once per config, with what would bring the tags back."""
    word_classes: ClassVar[bool] = False
    """Whether Hunspell word classes (``qe.resources.wordclass``) stand in for spaCy's tags."""
    example: ClassVar[FamilyExample | None] = None
    """The case the family contract runs the family on (every family declares one)."""

    def __init__(self, **settings: Any) -> None:
        self.settings = self.validate_settings(settings)
        self.__dict__.update(self.fresh_state())

    # ------------------------------------------------------------------ settings

    @classmethod
    def validate_settings(
        cls, settings: dict[str, Any], where: str | None = None, path: str | Path | None = None
    ) -> dict[str, Any]:
        """Defaults filled in; unknown keys and bad values refused in one line naming the key (as
        ``where.key``, default ``<family>.key``), what is allowed and, from a config, its file."""
        where = where or cls.name
        schema = cls.setting_specs
        unknown = sorted(set(settings) - set(schema))
        if unknown:
            known = ", ".join(sorted(schema)) or "none"
            raise QEInputError(f"{where}: unknown setting(s) {', '.join(unknown)} (known: {known})", path)
        merged = {key: spec.default for key, spec in schema.items()}
        for key, value in settings.items():
            merged[key] = schema[key].check(value, f"{where}.{key}", path)
        return merged

    def warm(self) -> None:  # noqa: B027 - an optional hook, not an abstract method
        """Do now the work that the first batches would otherwise do and keep (fill bounded caches),
        so that a long-running service takes its memory and time at start (``qe serve``); no values
        change. Most families have nothing to do."""

    def fresh_state(self) -> dict[str, Any]:
        """Per-process attributes (caches, loaded models) with their empty values; not pickled."""
        return {}

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, **self.fresh_state()}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    # ------------------------------------------------------------------ resources and inputs

    def bind(self, resources: Any) -> FeatureFamily:
        """Check the bundle has the members this family reads (and resolve bundle-dependent settings
        in subclasses); returns self. Called once, before column names are taken."""
        if resources is None:
            if self.needs_bundle:
                members = ", ".join(self.required_members()) or "its members"
                raise QEInputError(f"{self.name} needs a resource bundle ({members})")
            return self
        if hasattr(resources, "names"):
            missing = [m for m in self.required_members() if m not in resources]
            if missing:
                known = ", ".join(resources.names()) or "none"
                raise QEInputError(
                    f"{self.name} needs bundle member(s) {', '.join(missing)} that the bundle lacks "
                    f"(has: {known})",
                    getattr(resources, "path", None),
                )
            for setting, kinds in self.member_kinds.items():
                member = self.settings.get(setting)
                if member and member in resources:
                    kind = resources.info(member).get("kind")
                    if kind not in kinds and kind != "object":  # "object": built in memory (tests)
                        raise QEInputError(
                            f"{self.name}.{setting} = {member!r} names a {kind} member; "
                            f"it needs a {' or '.join(kinds)} one"
                        )
        return self

    def bundle_member(self, resources: Any, member: str) -> Any:
        """The bundle's ``member`` this family reads; one clear line when there is no such bundle or
        member (a family used without ``bind``)."""
        if resources is None or member not in resources:
            raise QEInputError(
                f"{self.name} needs a resource bundle with the member {member!r} "
                f"([{member}] in the bundle config)"
            )
        return resources.get(member)

    def needed_inputs(self) -> tuple[PairInput, ...]:
        """The declared inputs these settings use (all of them unless a family says otherwise)."""
        return self.inputs

    def read_inputs(self) -> tuple[PairInput, ...]:
        """The inputs these settings read when given: the needed ones and any optional ones."""
        return self.needed_inputs()

    def needed_annotations(self) -> tuple[str, ...]:
        """The declared annotations these settings read (all of them unless a family says otherwise)."""
        return self.annotations

    def required_members(self) -> list[str]:
        """Bundle members this family reads, from its ``member_settings``."""
        return [self.settings[key] for key in self.member_settings if self.settings.get(key)]

    def check_ids(self, ids: list[str]) -> None:
        """Refuse a dataset that the family's external inputs (e.g. decoder logs) do not match."""
        return None

    def input_lines(self, batch: Pairs, name: str, resources: Any = None) -> list[str]:
        """The batch's lines of a declared input, checked (one string per pair); from the input's
        provider member when no file was given."""
        spec = next((i for i in self.inputs if i.name == name), None)
        if name not in batch.extra:
            if spec is not None and spec.provider and resources is not None and spec.provider in resources:
                return resources.get(spec.provider).provide(name, batch)
            hint = f"pass {spec.flag} FILE" if spec else "it was not given"
            if spec is not None and spec.provider:
                hint += f" or give the resource bundle a {spec.provider!r} member"
            raise QEInputError(f"{self.name}: no {name} input given ({hint})")
        values = list(batch.extra[name])
        if len(values) != len(batch):
            raise QEInputError(
                f"{self.name}: {len(values)} {name} lines for {len(batch)} pairs "
                "(the files must have the same number of lines)"
            )
        for i, value in enumerate(values):
            if not isinstance(value, str):
                raise QEInputError(
                    f"{self.name}: {name} for sentence {batch.ids[i]!r} is not text ({type(value).__name__})"
                )
        return values

    # ------------------------------------------------------------------ installed pieces

    def pair_languages(self, pair: Mapping[str, str]) -> dict[str, str | None]:
        """Each side's language: the family's ``src_lang`` / ``tgt_lang`` setting, else ``pair``'s."""
        return {side: self.settings.get(f"{side}_lang") or pair.get(side) for side in ("src", "tgt")}

    def missing_pieces(self, pair: Mapping[str, str], resources: Any = None) -> list[str]:
        """What the family, with these settings, needs for the language ``pair`` (side -> language)
        and this machine or ``resources`` lacks: one line each, ``"who: what is missing, and how to
        get it"``, nothing loaded (``qe resources check``, ``qe run`` before any work). Here: the
        ``requires`` modules; families needing more (spaCy pipelines, dictionaries, taggers) add it.
        The bundle members are ``bind``'s to check."""
        return [
            f"{self.name}: the {module} Python module ({how})"
            for module, how in self.requires.items()
            if importlib.util.find_spec(module) is None
        ]

    def tagger_pieces(
        self, pair: Mapping[str, str], resources: Any, members: tuple[str, ...] = ()
    ) -> list[str]:
        """What POS tags of both sides need and lack (for ``missing_pieces`` with ``pos = true``):
        with a bundle, its taggers and the bundle ``members`` the POS features read; without one, a
        tagger for each side whose language is known."""
        from qe.resources import pos

        if resources is not None:
            return pos.pos_pieces(resources, members)
        return [
            problem
            for side, lang in self.pair_languages(pair).items()
            if lang and (problem := pos.missing_language_tagger(lang, pos.SIDE_NAMES[side]))
        ]

    def asks_tagger(self, resources: Any) -> bool:
        """Whether, bound to ``resources``, the family's POS features depend on the installed taggers
        (used where one is, silently left out elsewhere: ``tagger_loss`` says so once)."""
        return False

    def bundle_losses(self, resources: Any) -> list[str]:
        """What the family, asking for a tagger, loses to a member ``resources`` lacks (one line each)."""
        return []

    # ------------------------------------------------------------------ length limits

    def check_lengths(self, batch: Pairs) -> None:
        """Refuse the first source, MT or line-input text of ``batch`` this family reads that is
        longer than ``limits.chars`` characters, naming its file and line (before any work)."""
        roles = [("src", batch.src), ("mt", batch.mt)]
        roles += [(i.name, batch.extra[i.name]) for i in self.read_inputs() if i.name in batch.extra]
        limit = self.limits.chars
        for role, texts in roles:
            for row, text in enumerate(texts):
                if isinstance(text, str) and len(text) > limit:
                    raise self._too_long(batch, role, row, len(text), limit, "characters")

    def check_tokens(self, batch: Pairs, role: str, tokens: list[list[str]] | list[int]) -> None:
        """Refuse the first text of ``role`` (``src``, ``mt`` or an input name) with more than
        ``limits.tokens`` tokens (``tokens``: each pair's tokens, or their counts)."""
        limit = self.limits.tokens
        if limit is None:
            return
        for row, item in enumerate(tokens):
            count = item if isinstance(item, int) else len(item)
            if count > limit:
                raise self._too_long(batch, role, row, count, limit, "tokens")

    def _too_long(self, batch: Pairs, role: str, row: int, count: int, limit: int, unit: str) -> QEInputError:
        """One line naming the file and line of the text (or its pair, when not read from a file)."""
        path, line = batch.where(role, row)
        what = "this line" if path else f"the {ROLES.get(role, role)} of pair {batch.ids[row]!r}"
        return QEInputError(
            f"{self.name}: {what} has {count:,} {unit}, and {self.name} reads at most {limit:,} "
            "(docs/length-limits.md): split such text into sentences",
            path,
            line,
        )

    # ------------------------------------------------------------------ features

    @abstractmethod
    def specs(self) -> list[FeatureSpec]:
        """The features this family produces, in column order (after ``bind`` where it matters)."""

    @abstractmethod
    def extract(self, batch: Pairs, resources: Any = None) -> np.ndarray:
        """Return an array of shape ``(len(batch), len(self.specs()))`` of floats."""

    @classmethod
    def catalogue(cls) -> list[FeatureSpec]:
        """Every feature the family can produce (for ``qe features --list``); override when
        ``specs()`` depends on settings."""
        return cls().specs()

    def column_names(self) -> list[str]:
        """Column names as they appear in feature tables: ``family.feature``."""
        return [f"{self.name}.{spec.name}" for spec in self.specs()]

    def signature(self) -> str:
        """``name(key=value,...)`` over the settings that change values, plus ``signature_details``."""
        parts = [
            f"{key}={_render(self.settings[key])}"
            for key, spec in sorted(self.setting_specs.items())
            if spec.affects_values
        ]
        return f"{self.name}({','.join(parts + self.signature_details())})"

    def signature_details(self) -> list[str]:
        """Extra ``key=value`` parts for the signature (resolved settings, library versions)."""
        return []
