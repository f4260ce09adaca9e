"""The registry of bundle-member kinds: one ``MemberKind`` record per kind of member file.

A record says which config table it is built from (and that table's rule, handed to the schema),
which member files it writes, how it builds them from the corpora, what it checks in the config
beyond the rule, and how a built file is loaded. A module of ``qe.bundle.kinds`` registers
its record with :func:`register_member` when it is imported; :func:`member_kinds` imports them all
(in module-name order), so adding a member kind is adding one file there.
"""

from __future__ import annotations

import importlib
import pkgutil
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from qe.bundle.corpora import Corpus, resolve
from qe.bundle.sections import SIDES, BundleConfig
from qe.config.rules import List, Mistake, Rule, Str, TablesOf, register_tables
from qe.infra.errors import QEInputError
from qe.infra.io import sha256_file
from qe.text.processing import TextConfig, TextProcessor, tokenize_corpus

ConfigTable = Mapping[str, Any]
"""A member kind's table as the config holds it: read-only (``qe.config.document.freeze``: its arrays are
tuples); the kind reads it, its rule the one description of its keys."""

SIDE = Str(list(SIDES))
CORPUS_LIST = List(Str())
"""Rule pieces of member tables: ``side = "src"``, ``corpora = ["NAME", ...]``."""


@dataclass
class BuildContext:
    """What a member kind's ``build`` works with: the checked config, the corpora (read, leakage-checked,
    for a cross-fitting fold without that fold's lines), the text settings per side, the folder the
    member files go into, and each corpus side tokenized once for all members."""

    config_path: Path
    root: Path  # the data directory: config paths are relative to it
    corpora: dict[str, Corpus]
    text: dict[str, TextConfig]
    work: Path
    n_jobs: int
    progress: bool
    token_cache_dir: str | Path | None
    edits: tuple[Any, np.ndarray | None] | None = None  # the [edits] pairs and which rows to learn from
    started: float = 0.0  # when the current member's build began (its manifest's build_seconds)
    processors: dict[str, TextProcessor] = field(init=False)

    def __post_init__(self) -> None:
        self.processors = {side: TextProcessor(self.text[side]) for side in SIDES}

    def say(self, line: str) -> None:
        """A line of a member's progress, when the build shows progress (written past the bars)."""
        if self.progress:
            from tqdm.auto import tqdm

            tqdm.write(line)

    def path(self, value: str) -> Path:
        """A path of the config, resolved against the data directory."""
        return resolve(self.root, value)

    def tokens(self, name: str, side: str) -> list[list[str]]:
        """One side of a corpus, tokenized with the bundle's text settings (once, then kept)."""
        corpus = self.corpora[name]
        if side not in corpus.tokens:
            corpus.tokens[side] = tokenize_corpus(
                corpus.lines[side],
                self.text[side],
                cache_dir=self.token_cache_dir,
                n_jobs=self.n_jobs,
                progress=self.progress,
                processor=self.processors[side],
            )
        return corpus.tokens[side]

    def corpus_names(self, table: ConfigTable, sides: tuple[str, ...]) -> list[str]:
        """The corpora a member table reads (its ``corpora``, default all that have ``sides``)."""
        names = table.get("corpora") or [
            n for n, c in self.corpora.items() if all(s in c.files for s in sides)
        ]
        for name in names:
            missing = [s for s in sides if s not in self.corpora[name].files]
            if missing:
                raise QEInputError(f"corpus {name!r} has no {'/'.join(missing)} side")
        return list(names)

    def side_corpora(self, key: str, table: ConfigTable) -> tuple[str, list[str]]:
        """The side a ``[section.KEY]`` table builds from (its ``side``, default the key) and the
        corpora it reads of that side."""
        side = table.get("side", key)
        return side, self.corpus_names(table, (side,))

    def entry(
        self, kind: str, path: Path, side: str | None, corpora: list[str], settings: dict[str, Any]
    ) -> dict[str, Any]:
        """The manifest entry of a member file just written (size, sha256, build time)."""
        entry = {
            "kind": kind,
            "file": path.relative_to(self.work).as_posix(),
            "corpora": corpora,
            "settings": settings,
            "bytes": path.stat().st_size,
            "sha256": sha256_file(path),
            "build_seconds": round(time.perf_counter() - self.started, 3),
        }
        if side is not None:
            entry["side"] = side
        return entry

    def fold_file(
        self, path: Path, excluded_lines: dict[str, int], summary: dict[str, Any]
    ) -> dict[str, Any]:
        """The manifest record of one fold's model file of a cross-fitted member (``[finetuned]``,
        ``[crossencoder]``, ``[wordtags]``): its name, size and sha256, what it left out, its summary."""
        return {
            "file": path.name,
            "bytes": path.stat().st_size,
            "sha256": sha256_file(path),
            "excluded_lines": excluded_lines,
            "summary": summary,
        }

    def cross_fitted_entry(
        self,
        kind: str,
        path: Path,
        corpus: str,
        settings: dict[str, Any],
        summary: dict[str, Any],
        folds: list[dict[str, Any]],
    ) -> dict[str, Any]:
        """The manifest entry of a cross-fitted member: the model of all data (``path``, trained on
        ``corpus``) with its summary, and its folds' records (:meth:`fold_file`)."""
        return {**self.entry(kind, path, None, [corpus], settings), "summary": summary, "folds": folds}


Build = Callable[[BuildContext, str, ConfigTable, dict[str, Path]], dict[str, dict[str, Any]]]
"""``build(context, key, table, outputs)``: write each member file of ``outputs`` (member name -> path),
return each member's manifest entry."""
Load = Callable[[Path, dict[str, Any], dict[str, Any]], Any]
"""``load(path, options, manifest)``: the object a member file holds (``options`` from ``bundle.get``)."""


@dataclass(frozen=True)
class MemberKind:
    """One kind of bundle member.

    ``kind`` is what the manifest records and ``load`` reads. A kind built from the config has a
    ``section``: with ``per_side``, ``[section.KEY]`` tables each build one member for one side
    (``side``, default the key), else one ``[section]`` table; ``rule`` checks a table, ``check``
    (optional) what the rule cannot (cross-references), returning the table with its defaults filled in
    (None: unchanged); tables are read-only mappings (``ConfigTable``); ``files(key, table)`` names the
    members and files it writes and ``build`` writes them. ``reads_corpora``: built from ``[corpora]``,
    so rebuilt per cross-fitting fold when a corpus it read is masked. ``pooled``: it may learn from a
    QE corpus that pools several language pairs' datasets (``[corpora.NAME] datasets``; the others are
    built for one pair). ``inputs(table)``: files it reads besides the corpora (never inside the
    bundle). A kind without a section is written by the bundle itself (the cross-fitting fold map).
    """

    kind: str
    load: Load
    section: str | None = None
    rule: Rule | None = None
    per_side: bool = False
    reads_corpora: bool = False
    pooled: bool = False
    files: Callable[[str, ConfigTable], dict[str, str]] | None = None
    build: Build | None = None
    check: Callable[[BundleConfig, str, ConfigTable, Path], Mapping[str, Any] | None] | None = None
    inputs: Callable[[ConfigTable], list[str]] | None = None

    def tables(self, config: BundleConfig) -> list[tuple[str, ConfigTable]]:
        """``(key, table)`` of each member table of this kind in a config (key "" for a single table)."""
        if self.section is None or self.section not in config.members:
            return []
        tables = config.members[self.section]
        return list(tables.items()) if self.per_side else [("", tables)]

    def label(self, key: str) -> str:
        """How messages name one of its tables: ``[lm.src]``, ``[ibm1]``."""
        return f"[{self.section}.{key}]" if self.per_side else f"[{self.section}]"

    def wanted(self, config: BundleConfig) -> bool:
        """Whether a config asks for members of this kind (a table of tables or a reader of corpora
        counts when it is not empty)."""
        if self.per_side or self.reads_corpora:
            return bool(config.members.get(self.section or ""))
        return self.section in config.members


_KINDS: dict[str, MemberKind] = {}  # by section, or by kind for those the bundle writes itself
_loaded = False


def register_member(record: MemberKind) -> MemberKind:
    """Add a member kind to the registry (its table's rule goes to the schema); returns it."""
    name = record.section or record.kind
    if name in _KINDS and _KINDS[name] != record:
        raise ValueError(f"bundle member kind {name!r} registered twice")
    if any(other.kind == record.kind and other.load != record.load for other in _KINDS.values()):
        raise ValueError(f"bundle member kind {record.kind!r} registered with two loaders")
    _KINDS[name] = record
    if record.section is not None and record.rule is not None:
        rule = TablesOf(record.rule, rules=(_each_side,)) if record.per_side else record.rule
        register_tables("bundle member", {record.section: rule})
    return record


def _each_side(tables: dict[str, Any]) -> Mistake:
    """Each ``[section.KEY]`` table of a per-side kind builds one side: ``side``, or a key naming one."""
    for key, table in tables.items():
        side = table.get("side", key if key in SIDES else None)
        if side not in SIDES:
            return f"{key}.side", side, '"src" or "tgt" (the key names no side)'
    return None


def member_kinds() -> list[MemberKind]:
    """Every member kind: the modules of ``qe.bundle.kinds``, imported once."""
    global _loaded
    if not _loaded:
        import qe.bundle.kinds as package

        for module in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
            importlib.import_module(f"{package.__name__}.{module.name}")
        _loaded = True
    return list(_KINDS.values())


def member_loader(kind: str) -> Load | None:
    """The loader of the members a manifest records as ``kind`` (None for an unknown kind)."""
    return next((record.load for record in member_kinds() if record.kind == kind), None)


def build_members(config: BundleConfig, context: BuildContext) -> dict[str, dict[str, Any]]:
    """Build every member table of ``config`` into ``context.work``; returns the manifest entries (each
    kind writes exactly the files its ``files`` names)."""
    from tqdm.auto import tqdm

    steps = [
        (kind, key, table) for kind in member_kinds() if kind.build for key, table in kind.tables(config)
    ]
    members: dict[str, dict[str, Any]] = {}
    bar = tqdm(steps, desc="resources", unit="member", disable=not context.progress)
    for kind, key, table in bar:
        bar.set_postfix_str(kind.label(key).strip("[]"))
        assert kind.files is not None and kind.build is not None
        outputs = {member: context.work / file for member, file in kind.files(key, table).items()}
        context.started = time.perf_counter()
        entries = kind.build(context, key, table, outputs)
        if set(entries) != set(outputs):  # a programming error in the kind's record
            raise RuntimeError(f"{kind.label(key)} built {sorted(entries)}, not {sorted(outputs)}")
        members.update(entries)
    return members
