"""Resource bundles: a directory of language resources plus ``manifest.json``, built from a TOML config.

A bundle holds named members, each one file built from plain-text corpora (or, for unigram
counts, read from a Moses truecase model):

==============  =======================================  ==========================================
kind            member names (config section)            loaded as
==============  =======================================  ==========================================
``kenlm``       ``lm.<key>`` (``[lm.<key>]``)            ``qe.resources.lm.LanguageModel``
``ngrams``      ``ngrams.<key>`` (``[ngrams.<key>]``)    ``qe.resources.ngrams.NgramCounts``
``unigrams``    ``unigrams.<key>`` (``[unigrams.<key>]``) ``NgramCounts`` (order 1, from a truecase model)
``ibm1``        ``ibm1.s2t`` / ``ibm1.t2s`` (``[ibm1]``)  ``qe.resources.ibm1.IBM1Table``
``edits``       ``edits`` (``[edits]``)                  ``qe.resources.edits.EditModel``
``mt2``         ``mt2`` (``[mt2]``)                      ``qe.resources.mt2.SecondMT`` (Apertium)
``folds``       ``cross_fit`` (a QE corpus, below)       ``qe.resources.crossfit.FoldMap``
==============  =======================================  ==========================================

A corpus may be the QE training split itself (``[corpora.NAME] dataset = "mlqe-pe/en-de"``, or the
files ``src``, ``mt`` and optionally ``post_edits``; its target side is the post-edits, or the MT
with ``target = "mt"``). Members built from it (``lm``, ``poslm``, ``ngrams``, ``ibm1``) are
cross-fitted (``cross_fit = 5`` folds by default, see ``qe.resources.crossfit``): the manifest entry
of such a member lists one extra file per fold under ``folds``, and ``bundle.fold_view(k)`` is the
bundle seen by a training pair of fold k. ``cross_fit = true`` on a plain corpus masks its lines
that repeat a training sentence in the same way; ``cross_fit = false`` on a QE corpus builds
in-sample tables (recorded in the manifest as ``in_sample``, and warned about).

The manifest records the corpora (paths, sha256, lines, bytes), the text settings, each
member's settings, file size, build time and summary, and the result of the leakage check.
N-gram counts and IBM1 tables are written as binary ``.npz`` tables (no parsing at load, see
``qe.resources.arrays``); bundles built before, with ``.tsv.gz`` / ``.txt`` tables, still load.
Members are loaded lazily, on first use, and kept; ``bundle.get(name, **options)`` caches one
object per name and options. Building refuses corpora that share a sentence (compared
lower-cased, whitespace collapsed) or a near-duplicate (chrF >= ``near_duplicate_chrf`` after
normalising digits and punctuation, see ``qe.resources.leakage``) with the evaluation files listed
in ``[leakage]``, except the QE training split (the pairs of the QE corpus, or of ``[edits]``):
its repeats of the evaluation data are the data, reported in the manifest's ``leakage.repeats``
and kept (refused only past ``MAX_REPEAT_SHARE`` of an evaluation file: the evaluation data itself).

Config layout (paths relative to the data directory)::

    name = "wmt12-en-es"
    [languages]  src = "en"  tgt = "es"
    [text]       style = "wmt12"  case = "lower"          # optional [text.src] / [text.tgt] overrides
    [leakage]    eval_files = ["wmt12-qe/test_set/source.eng", ...]  near_duplicate_chrf = 0.9  # 0: off
    [corpora.NAME]  src = "..."  tgt = "..."              # either side may be missing
    [lm.src]     side = "src"  order = 3  corpora = [...]  # corpora default: all with that side
    [ngrams.src] side = "src"  max_order = 3
    [unigrams.src]  side = "src"  truecase_model = "..."
    [ibm1]       iterations = 5  directions = ["s2t", "t2s"]  min_prob = 0.001
    [edits]      dataset = "wmt12-en-es"  split = "train"  folds = 5  seed = 0
    [corpora.qe] dataset = "mlqe-pe/en-de"  cross_fit = 5  seed = 0   # the QE training split
    [mt2]        engine = "apertium"  pair = "eng-spa"    # a second MT system (pseudo-references)
    [edits]      src = "..."  mt = "..."  post_edits = "..."  labels = "..."   # or the user's files

``[edits]`` learns word-level post-editing statistics from training data with post-edits and
labels: a registered dataset's *training* split (any with post-edits: ``wmt12-en-es``,
``mlqe-pe/<pair>``, ``mlqe-da/<pair>``; its test split is refused) or line-aligned files,
cross-fitted so that training pairs never see their own post-edit (see ``qe.resources.edits``).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import time
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from qe import __version__
from qe.errors import QEInputError, naming
from qe.io import atomic_write, parse_bounded, read_text_lines, require_file, sha256_file
from qe.outputs import BUNDLE_FORMAT as FORMAT
from qe.outputs import check_output_dir, staged_dir
from qe.resources.ngrams import NgramCounts, load_truecase_counts
from qe.schema import BUNDLE, check
from qe.text import TextConfig, TextProcessor, bundle_text_configs, tokenize_corpus

MANIFEST = "manifest.json"
DEFAULT_BUNDLE_DIR = Path("models/resources")
SIDES = ("src", "tgt")

_IBM1_DIRECTIONS = ("s2t", "t2s")
DEFAULT_CROSS_FIT = 5
"""Folds of a QE training corpus unless its ``cross_fit`` says otherwise."""
_EDITS_FILES = ("src", "mt", "post_edits", "labels")


# ====================================================================== loading

_PROCESS_CACHE: dict[tuple, Any] = {}  # loaded members shared by all bundles of this process
_PROCESS_CACHE_SIZE = 16
# Digest of each member file version (resolved path, size, mtime_ns) checked in this process.
_VERIFIED: dict[tuple[str, int, int], str] = {}


def clear_loaded_members() -> None:
    """Forget the members loaded in this process (they stay alive while a bundle holds them)."""
    _PROCESS_CACHE.clear()


def clear_verified_members() -> None:
    """Forget which member files were checked against their sha256 in this process."""
    _VERIFIED.clear()


def _manifest_problem(manifest: dict[str, Any]) -> str | None:
    """What is wrong with the shape of a bundle manifest's fields (None when nothing is), so a
    damaged or crafted manifest is one line instead of a failure half-way through a run."""
    members, text, languages = (
        manifest.get("members", {}),
        manifest.get("text", {}),
        manifest.get("languages"),
    )
    checks = {
        "members is not a table of member tables": isinstance(members, dict)
        and all(
            isinstance(key, str) and isinstance(entry, dict) and isinstance(entry.get("kind"), str)
            for key, entry in members.items()
        ),
        "a member's folds is not a list of member tables": isinstance(members, dict)
        and all(
            not isinstance(entry, dict)
            or entry.get("folds") is None
            or (isinstance(entry["folds"], list) and all(isinstance(fold, dict) for fold in entry["folds"]))
            for entry in members.values()
        ),
        "members have cross-fitting folds but no cross_fit map": not isinstance(members, dict)
        or "cross_fit" in members
        or not any(isinstance(entry, dict) and entry.get("folds") for entry in members.values()),
        "a member's folds share a file": not isinstance(members, dict)
        or all(
            len({str(fold.get("file")) for fold in entry["folds"]}) == len(entry["folds"])
            for entry in members.values()
            if isinstance(entry, dict)
            and isinstance(entry.get("folds"), list)
            and all(isinstance(fold, dict) for fold in entry["folds"])
        ),
        "text is not a table of text settings per side": isinstance(text, dict)
        and all(isinstance(side, str) and isinstance(cfg, dict) for side, cfg in text.items()),
        "languages is not a table of language codes": languages is None
        or (isinstance(languages, dict) and all(isinstance(v, str) for v in languages.values())),
        "name is not a string": isinstance(manifest.get("name", ""), str),
    }
    return next((problem for problem, fine in checks.items() if not fine), None)


class ResourceBundle:
    """A built bundle directory: its manifest and lazily loaded members.

    ``bundle["lm.src"]`` (or ``bundle.get("lm.src")``) loads a member on first use;
    ``bundle.text_processor("src")`` gives the tokenizer the resources were built with.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        manifest_path = self.path / MANIFEST
        if not self.path.is_dir():
            raise QEInputError("resource bundle directory not found", self.path)
        if not manifest_path.is_file():
            raise QEInputError("not a resource bundle (no manifest.json)", self.path)
        try:
            text = manifest_path.read_text(encoding="utf-8")
            self.manifest: dict[str, Any] = parse_bounded(json.loads, text, manifest_path, "bundle manifest")
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise QEInputError(f"corrupt bundle manifest ({exc.__class__.__name__})", manifest_path) from None
        if not isinstance(self.manifest, dict) or self.manifest.get("format") != FORMAT:
            raise QEInputError(f"unknown bundle manifest format (expected {FORMAT})", manifest_path)
        problem = _manifest_problem(self.manifest)
        if problem:
            raise QEInputError(f"corrupt bundle manifest: {problem}", manifest_path)
        self._objects: dict[tuple, Any] = {}
        self._injected: dict[str, Any] = {}
        self._processors: dict[str, TextProcessor] = {}
        self._fold: int | None = None  # a fold view: cross-fitted members resolve to this fold's files
        self._views: dict[int, ResourceBundle] = {}

    @classmethod
    def in_memory(
        cls, members: dict[str, Any], text: dict[str, TextConfig], name: str = "in-memory"
    ) -> ResourceBundle:
        """A bundle without a directory, from already built objects (tests, notebooks)."""
        bundle = cls.__new__(cls)
        bundle.path = Path(".")
        bundle.manifest = {
            "format": FORMAT,
            "name": name,
            "text": {side: cfg.to_dict() for side, cfg in text.items()},
            "members": {key: {"kind": "object"} for key in members},
        }
        bundle._objects = {}
        bundle._injected = dict(members)
        bundle._processors = {}
        bundle._fold = None
        bundle._views = {}
        return bundle

    def attach(self, name: str, member: Any, info: dict[str, Any]) -> ResourceBundle:
        """Add a member built elsewhere (e.g. an experiment config's ``[mt2]``); ``info`` goes into the
        manifest, so the signature changes with it. Returns self."""
        if name in self and name not in self._injected:
            raise QEInputError(f"the bundle already has a member {name!r}; remove one of the two", self.path)
        self._injected[name] = member
        self.manifest.setdefault("members", {})[name] = {"kind": "attached", **info}
        return self

    def __getstate__(self) -> dict:
        # Pickled for joblib workers: loaded members (e.g. KenLM models) are reloaded there.
        state = dict(self.__dict__)
        state["_objects"] = {}
        state["_processors"] = {}
        state["_views"] = {}
        return state

    def __setstate__(self, state: dict) -> None:
        state.setdefault("_fold", None)
        state.setdefault("_views", {})
        self.__dict__.update(state)

    def fold_view(self, fold: int) -> ResourceBundle:
        """The bundle as a training pair of ``fold`` sees it: cross-fitted members load the tables built
        without that fold; everything else (and every loaded object and tokenizer) is shared."""
        if fold not in self._views:  # views share this dict, the loaded members and the tokenizers
            view = ResourceBundle.__new__(ResourceBundle)
            view.__dict__.update(self.__dict__)
            view._fold = int(fold)
            self._views[fold] = view
        return self._views[fold]

    def cross_fitted(self, name: str) -> bool:
        """Whether member ``name`` has one version per cross-fitting fold."""
        return bool(self.manifest.get("members", {}).get(name, {}).get("folds"))

    # ------------------------------------------------------------------ introspection

    @property
    def name(self) -> str:
        """The bundle's name (from its config)."""
        return str(self.manifest.get("name", self.path.name))

    def names(self) -> list[str]:
        """Names of all members."""
        return sorted(self.manifest.get("members", {}))

    def __contains__(self, name: str) -> bool:
        return name in self.manifest.get("members", {})

    def info(self, name: str) -> dict[str, Any]:
        """The manifest entry of one member."""
        self._require(name)
        return dict(self.manifest["members"][name])

    def signature(self) -> str:
        """``name@hash``: a short hash of the manifest's content (changes whenever any member does)."""
        stable = {
            k: v for k, v in self.manifest.items() if k not in ("created", "build_seconds", "config_file")
        }
        members = stable.get("members", {})
        stable["members"] = {
            k: {kk: vv for kk, vv in v.items() if kk != "build_seconds"} for k, v in members.items()
        }
        digest = hashlib.sha256(json.dumps(stable, sort_keys=True).encode()).hexdigest()[:10]
        return f"{self.name}@{digest}"

    def text_config(self, side: str) -> TextConfig:
        """The text settings a side's resources were built with."""
        text = self.manifest.get("text", {})
        if side not in text:
            raise QEInputError(f"bundle has no text settings for side {side!r}", self.path / MANIFEST)
        return TextConfig.from_dict(text[side])

    def text_processor(self, side: str) -> TextProcessor:
        """A (memoising) tokenizer for one side, shared by all families using this bundle."""
        if side not in self._processors:
            self._processors[side] = TextProcessor(self.text_config(side))
        return self._processors[side]

    # ------------------------------------------------------------------ members

    def __getitem__(self, name: str) -> Any:
        return self.get(name)

    def get(self, name: str, **options: Any) -> Any:
        """Load (once) and return a member; ``options`` go to its loader (e.g. ``min_count=3``)."""
        if name in self._injected:
            return self._injected[name]
        fold = self._fold if self._fold is not None and self.cross_fitted(name) else None
        key = (name, fold, tuple(sorted(options.items())))
        if key not in self._objects:
            self._objects[key] = self._load_shared(name, options, key, fold)
        return self._objects[key]

    def _load_shared(self, name: str, options: dict[str, Any], key: tuple, fold: int | None = None) -> Any:
        """Load through a per-process cache, so joblib workers (which receive the bundle without its
        loaded members) load each member file once, not once per batch."""
        path = self.member_path(name, fold)
        stat = path.stat()
        self._verify(name, path, stat, fold)
        shared_key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns, key)
        if shared_key not in _PROCESS_CACHE:
            if len(_PROCESS_CACHE) >= _PROCESS_CACHE_SIZE:
                _PROCESS_CACHE.pop(next(iter(_PROCESS_CACHE)))
            _PROCESS_CACHE[shared_key] = self._load(name, path, options)
        return _PROCESS_CACHE[shared_key]

    def _require(self, name: str) -> None:
        if name not in self:
            known = ", ".join(self.names()) or "none"
            raise QEInputError(f"bundle has no resource {name!r} (has: {known})", self.path)

    def _entry(self, name: str, fold: int | None) -> dict[str, Any]:
        """The manifest entry of a member, or of its version for one cross-fitting fold."""
        entry = self.manifest["members"][name]
        if fold is None:
            return entry
        folds = entry.get("folds")
        if not isinstance(folds, list) or not 0 <= fold < len(folds) or not isinstance(folds[fold], dict):
            raise QEInputError(
                f"bundle member {name!r} has no fold {fold} in the manifest", self.path / MANIFEST
            )
        return folds[fold]

    def member_path(self, name: str, fold: int | None = None) -> Path:
        """The file of a member (of its version for cross-fitting ``fold``): a plain file name inside
        the bundle (no directory part, no ``..``, no link leading out of the bundle), else
        ``QEInputError`` naming the member; it must exist."""
        self._require(name)
        file = self._entry(name, fold).get("file")
        if not isinstance(file, str) or file in ("", ".", "..") or any(c in file for c in "/\\\0"):
            raise QEInputError(
                f"bundle member {name!r} must name a plain file inside the bundle", self.path / MANIFEST
            )
        path = self.path / file
        if not os.path.lexists(path):
            raise QEInputError(f"resource file of {name!r} is missing", path)
        if not path.resolve().is_relative_to(self.path.resolve()):
            raise QEInputError(f"bundle member {name!r} is a link to a file not inside the bundle", path)
        if not path.is_file():
            raise QEInputError(f"resource file of {name!r} is not a regular file", path)
        return path

    def _verify(self, name: str, path: Path, stat: os.stat_result, fold: int | None = None) -> None:
        """Check a member file against the size and sha256 in the manifest; the digest of each file
        version (path, size, mtime) is computed once per process."""
        entry = self._entry(name, fold)
        expected = entry.get("sha256")
        if not isinstance(expected, str):
            raise QEInputError(f"bundle member {name!r} has no sha256 in the manifest", self.path / MANIFEST)
        version = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
        if version not in _VERIFIED:
            if stat.st_size != entry.get("bytes", stat.st_size):
                _VERIFIED[version] = "size differs"
            else:
                _VERIFIED[version] = sha256_file(path)
        if _VERIFIED[version] != expected:
            raise QEInputError(
                f"resource {name!r} does not match the sha256 in the bundle manifest "
                "(changed, swapped or truncated since the bundle was built); rebuild the bundle",
                path,
            )

    def _load(self, name: str, path: Path, options: dict[str, Any]) -> Any:
        kind = self.manifest["members"][name]["kind"]
        try:
            if kind == "kenlm":
                from qe.resources.lm import LanguageModel

                return LanguageModel(path, **options)
            if kind in ("ngrams", "unigrams"):
                return NgramCounts.load(path, **options)
            if kind == "ibm1":
                from qe.resources.ibm1 import IBM1Table

                return IBM1Table.load(path, **options)
            if kind == "edits":
                from qe.resources.edits import EditModel

                return EditModel.load(path)
            if kind == "mt2":
                from qe.resources.mt2 import SecondMT

                return SecondMT.load(path, self.manifest.get("languages"))
            if kind == "folds":
                from qe.resources.crossfit import FoldMap

                return FoldMap.load(path)
        except QEInputError:
            raise
        except (OSError, RuntimeError, ValueError) as exc:
            raise QEInputError(f"cannot load resource {name!r} ({type(exc).__name__})", path) from None
        raise QEInputError(f"unknown resource kind {kind!r} for {name!r}", self.path / MANIFEST)


def open_bundle(path: str | Path | None = None, name: str = "wmt12-en-es") -> ResourceBundle:
    """Open a bundle directory (default ``models/resources/<name>``)."""
    return ResourceBundle(path if path is not None else DEFAULT_BUNDLE_DIR / name)


def with_mt2(bundle: ResourceBundle | None, settings: dict[str, Any]) -> ResourceBundle:
    """The bundle (or an empty one) with a second MT system from an experiment config's ``[mt2]``."""
    from qe.resources.mt2 import SecondMT

    mt2 = SecondMT(settings.get("engine", "apertium"), settings["pair"])
    bundle = bundle if bundle is not None else ResourceBundle.in_memory({}, {}, name="mt2")
    return bundle.attach("mt2", mt2, mt2.describe())


# ====================================================================== building


@dataclass
class _Corpus:
    name: str
    files: dict[str, Path]  # side -> path
    lines: dict[str, list[str]]
    tokens: dict[str, list[list[str]]] = field(default_factory=dict)  # side -> tokenized lines
    qe: Any = None  # a QE training split (qe.data.QEDataset) when the corpus is one
    masks: np.ndarray | None = None  # cross-fitting: bit k set = the line repeats a fold-k sentence


def _check_dataset_languages(config: dict[str, Any], config_path: Path) -> None:
    """Refuse a registered dataset (a QE corpus, [edits]) of another language pair than the bundle's
    (an "es" LM trained on English post-edits gave features without a word of warning)."""
    from qe.data import DATASETS

    pair = (config["languages"]["src"], config["languages"]["tgt"])
    named = [(f"corpora.{name}", table.get("dataset")) for name, table in config.get("corpora", {}).items()]
    named.append(("edits", (config.get("edits") or {}).get("dataset")))
    for where, name in named:
        if name in DATASETS and tuple(DATASETS[name].languages) != pair:
            theirs = "-".join(DATASETS[name].languages)
            raise QEInputError(
                f"[{where}] dataset {name} is {theirs}, but the bundle's [languages] are {pair[0]}-{pair[1]}",
                config_path,
            )


def read_bundle_config(config_path: str | Path) -> dict[str, Any]:
    """Read and check a bundle TOML config against ``qe.schema.BUNDLE`` (unknown keys and sections,
    wrong types and ranges refused), then the cross-references (sides, corpus names)."""
    config_path = require_file(config_path, "bundle config")
    try:
        text = config_path.read_text(encoding="utf-8-sig")  # -sig: drops a BOM
        config = parse_bounded(tomllib.loads, text, config_path, "bundle config")
    except UnicodeDecodeError:
        raise QEInputError("bundle config is not valid UTF-8", config_path) from None
    except tomllib.TOMLDecodeError as exc:
        raise QEInputError(f"invalid TOML: {exc}", config_path) from None
    if "languages" not in config:
        raise QEInputError('[languages] needs src = LANG and tgt = LANG (e.g. "en")', config_path)
    from qe import data  # noqa: F401  (registers the dataset names [corpora] are checked against)

    check(BUNDLE, config, config_path)
    if "mt2" in config:
        from qe.resources.mt2 import check_direction

        check_direction(config["mt2"]["pair"], config["languages"], config_path)
    corpora = config.setdefault("corpora", {})
    readers = [section for section in ("lm", "poslm", "ngrams", "ibm1") if config.get(section)]
    if not corpora and (readers or not (config.get("unigrams") or "edits" in config or "mt2" in config)):
        needed = f" ([{readers[0]}] is built from corpora)" if readers else ""
        raise QEInputError(f"[corpora] lists no corpus{needed}", config_path)
    for name, table in corpora.items():
        _check_corpus(name, table, config_path)
    _check_dataset_languages(config, config_path)
    fitted = [n for n, t in corpora.items() if is_qe_corpus(t) and t["cross_fit"]]
    if len(fitted) > 1:
        raise QEInputError(
            f"[corpora.{fitted[1]}]: only one QE training corpus can define the cross-fitting folds "
            f"([corpora.{fitted[0]}] does already)",
            config_path,
        )
    asked = [n for n, t in corpora.items() if not is_qe_corpus(t) and t.get("cross_fit")]
    if asked and not fitted:
        raise QEInputError(
            f"[corpora.{asked[0]}] cross_fit = true needs a QE training corpus to take the folds from "
            '(a [corpora.NAME] with dataset = "..." or src / mt files, and cross_fit)',
            config_path,
        )
    for section in ("lm", "poslm", "ngrams", "unigrams"):
        for key, table in config.get(section, {}).items():
            side = table.get("side", key if key in SIDES else None)
            if side not in SIDES:
                raise QEInputError(f'[{section}.{key}] needs side = "src" or "tgt"', config_path)
            for corpus in table.get("corpora", []):
                if corpus not in corpora:
                    raise QEInputError(f"[{section}.{key}] names unknown corpus {corpus!r}", config_path)
    for corpus in config.get("ibm1", {}).get("corpora", []):
        if corpus not in corpora:
            raise QEInputError(f"[ibm1] names unknown corpus {corpus!r}", config_path)
    if "edits" in config:
        _check_edits(config["edits"], config_path)
    config.setdefault("name", config_path.stem.removeprefix("resources-"))
    return config


def is_qe_corpus(table: dict[str, Any]) -> bool:
    """Whether a ``[corpora.NAME]`` table is a QE training split (a dataset, or src / mt files)."""
    return "dataset" in table or "mt" in table


_PLAIN_CORPUS_KEYS = (*SIDES, "cross_fit")


def _check_corpus(name: str, table: dict[str, Any], config_path: Path) -> None:
    """A plain corpus (src and/or tgt) or a QE training split; defaults filled, mixtures refused."""
    where = f"[corpora.{name}]"
    if not is_qe_corpus(table):
        if not any(side in table for side in SIDES):
            raise QEInputError(
                f"{where} needs src and/or tgt (or dataset / mt for a QE training split)", config_path
            )
        extra = sorted(set(table) - set(_PLAIN_CORPUS_KEYS))
        if extra:
            raise QEInputError(
                f"{where}: {', '.join(extra)} belong to a QE training split (dataset or mt)", config_path
            )
        if not isinstance(table.get("cross_fit", False), bool):
            raise QEInputError(
                f"{where}: cross_fit = {table['cross_fit']!r} on a plain corpus must be true or false "
                "(the folds come from the QE training corpus)",
                config_path,
            )
        if "src" in table and table.get("src") == table.get("tgt"):
            raise QEInputError(
                f"{where}: src and tgt are the same file ({table['src']}): "
                "a parallel corpus pairs two languages",
                config_path,
            )
        return
    if "tgt" in table:
        raise QEInputError(
            f'{where}: a QE training split has no tgt: its target side is target = "post_edits" or "mt"',
            config_path,
        )
    if "dataset" in table:
        if any(k in table for k in ("src", "mt", "post_edits")):
            raise QEInputError(f"{where}: give dataset or files (src, mt, post_edits), not both", config_path)
        from qe.data import DATASETS

        registered = DATASETS[table["dataset"]]
        table.setdefault("split", "train")
        if registered.split_name(table["split"]) == registered.test_split:
            raise QEInputError(
                f"{where}: resources must not be built from the test split (its sentences would leak)",
                config_path,
            )
    elif "src" not in table:
        raise QEInputError(f"{where}: a QE training split from files needs src and mt", config_path)
    elif "split" in table:
        raise QEInputError(f"{where}: split goes with dataset", config_path)
    fit = table.get("cross_fit", True)
    table["cross_fit"] = DEFAULT_CROSS_FIT if fit is True else int(fit)
    table.setdefault("seed", 0)


def _check_edits(edits: dict[str, Any], config_path: Path) -> dict[str, Any]:
    """``[edits]``: a registered dataset's training split, or all four training files; defaults filled."""
    from qe.data import DATASETS

    files = [key for key in _EDITS_FILES if key in edits]
    if ("dataset" in edits) == bool(files) or (files and len(files) != len(_EDITS_FILES)):
        raise QEInputError(
            '[edits] needs dataset = NAME (a registered dataset with post-edits, e.g. "mlqe-pe/en-de") '
            "or all of src, mt, post_edits and labels (training files)",
            config_path,
        )
    for key, default in (("folds", 5), ("seed", 0)):
        edits.setdefault(key, default)
    if "dataset" in edits:
        registered = DATASETS[edits["dataset"]]
        edits.setdefault("split", "train")
        if registered.split_name(edits["split"]) == registered.test_split:
            raise QEInputError(
                "[edits] must learn from a training split: the test post-edits and labels would leak",
                config_path,
            )
    return edits


def _resolve(data_dir: Path, value: str) -> Path:
    path = Path(value)
    return path if path.is_absolute() else data_dir / path


def _errors_name_the_config(build: Callable[..., ResourceBundle]) -> Callable[..., ResourceBundle]:
    """Errors of ``build(config_path, ...)`` that name no file name the bundle config."""

    @functools.wraps(build)
    def wrapper(config_path: str | Path, *args: Any, **kwargs: Any) -> ResourceBundle:
        with naming(config_path):
            return build(config_path, *args, **kwargs)

    return wrapper


@_errors_name_the_config
def build_bundle(
    config_path: str | Path,
    output: str | Path | None = None,
    *,
    data_dir: str | Path | None = None,
    allow_overlap: bool = False,
    drop_overlap: bool | None = None,
    overwrite: bool = False,
    n_jobs: int = 2,
    progress: bool = True,
    token_cache_dir: str | Path | None = None,
) -> ResourceBundle:
    """Build every member of a bundle config into ``output`` (default ``models/resources/<name>``).

    Checks first (before any long step): corpus files exist, are UTF-8 and non-empty, the two
    sides of a parallel corpus have the same number of lines, and no corpus line copies or nearly
    copies a line of the ``[leakage] eval_files`` (unless ``allow_overlap``; see
    ``qe.resources.leakage``), except the training split's repeats (see :func:`_check_overlaps`).
    With ``drop_overlap`` (default: ``[leakage] drop_overlap``) such lines (both sides of a parallel
    line, the whole training pair) are left out of every member instead, ``[edits]`` included, and
    listed in the manifest's ``leakage.dropped``. Members built from a QE training split are
    cross-fitted (see the module docstring). The bundle is built in a temporary directory beside
    ``output`` and moved into place at the end.
    """
    from qe.data import resolve_data_dir
    from qe.workers import exit_with_parent_everywhere

    start = time.perf_counter()
    config_path = Path(config_path)
    config = read_bundle_config(config_path)
    root = resolve_data_dir(data_dir)
    output = Path(output) if output is not None else DEFAULT_BUNDLE_DIR / config["name"]
    inputs = [config_path, *_input_files(config, root), root]
    check_output_dir(output, "bundle", overwrite=overwrite, inputs=inputs)
    from qe.resources.check import bundle_pieces, require

    pair = f"{config['languages']['src']}-{config['languages']['tgt']}"
    require(bundle_pieces(config), f"cannot build the {pair} bundle", config_path)
    text = bundle_text_configs(config, config_path)

    # ---- read and check the corpora
    corpora: dict[str, _Corpus] = {}
    for name, table in config["corpora"].items():
        if is_qe_corpus(table):
            corpora[name] = _qe_corpus(name, table, root)
            continue
        files = {side: _resolve(root, table[side]) for side in SIDES if side in table}
        lines = {side: read_text_lines(path) for side, path in files.items()}
        if len(lines) == 2 and len(lines["src"]) != len(lines["tgt"]):
            raise QEInputError(
                f"parallel corpus {name!r}: {len(lines['src'])} source lines but {len(lines['tgt'])} "
                f"target lines in {files['tgt']}",
                files["src"],
            )
        corpora[name] = _Corpus(name, files, lines)

    # ---- leakage
    edits = _edits_dataset(config.get("edits"), root)
    if drop_overlap is None:
        drop_overlap = bool(config.get("leakage", {}).get("drop_overlap", False))
    leakage, keep_edits = _check_overlaps(config, root, corpora, edits, allow_overlap, drop_overlap)
    fold_map = _plan_cross_fitting(config, corpora)

    exit_with_parent_everywhere()
    with staged_dir(output, "bundle", overwrite=overwrite, inputs=inputs) as work:
        members = _build_members(
            config,
            config_path,
            root,
            corpora,
            text,
            work,
            n_jobs,
            progress,
            token_cache_dir,
            edits=None if edits is None else (edits, keep_edits),
        )
        cross_fit = _cross_fit_members(
            config,
            config_path,
            root,
            corpora,
            text,
            work,
            n_jobs,
            progress,
            token_cache_dir,
            members,
            fold_map,
        )
        manifest = {
            "format": FORMAT,
            "name": config["name"],
            "description": config.get("description", ""),
            "created": datetime.now(UTC).isoformat(timespec="seconds"),
            "qe_version": __version__,
            "config_file": str(config_path),
            "config": config,
            "languages": dict(config["languages"]),
            "text": {side: cfg.to_dict() for side, cfg in text.items()},
            "text_signature": {side: cfg.signature() for side, cfg in text.items()},
            "corpora": {
                name: {
                    side: {
                        "path": _shown_path(root, path)
                        if corpus.qe is not None
                        else config["corpora"][name][side],
                        "sha256": sha256_file(path),
                        "bytes": path.stat().st_size,
                        "lines": len(corpus.lines[side]),
                    }
                    for side, path in corpus.files.items()
                }
                for name, corpus in corpora.items()
            },
            "leakage": leakage,
            "cross_fit": cross_fit,
            "members": members,
            "build_seconds": round(time.perf_counter() - start, 3),
        }
        with atomic_write(work / MANIFEST) as handle:
            json.dump(manifest, handle, indent=2, sort_keys=True, ensure_ascii=False)
            handle.write("\n")
        _share_permissions(work)
    return ResourceBundle(output)


def _shown_path(root: Path, path: Path) -> str:
    """A corpus path as the manifest shows it: relative to the data directory when inside it."""
    try:
        return Path(path).resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return str(path)


def _qe_corpus(name: str, table: dict[str, Any], root: Path) -> _Corpus:
    """A QE training split as a parallel corpus: its sources and its post-edits (or MT)."""
    from qe.data import load_parallel, load_registered

    if "dataset" in table:
        dataset = load_registered(table["dataset"], table["split"], root)
    else:
        post_edits = _resolve(root, table["post_edits"]) if "post_edits" in table else None
        dataset = load_parallel(
            _resolve(root, table["src"]), _resolve(root, table["mt"]), post_edits=post_edits, name=name
        )
    target = table.get("target") or ("post_edits" if dataset.post_edits is not None else "mt")
    if target == "post_edits" and dataset.post_edits is None:
        raise QEInputError(f'[corpora.{name}]: {dataset.name} has no post-edits (set target = "mt")')
    table["target"] = target  # resolved: the manifest's config says which text was used
    first = next(iter(dataset.files.values()))
    files = {"src": Path(dataset.files.get("src", first)), "tgt": Path(dataset.files.get(target, first))}
    tgt = dataset.post_edits if target == "post_edits" else dataset.mt
    return _Corpus(name, files, {"src": list(dataset.src), "tgt": list(tgt)}, qe=dataset)


_EDITS = "[edits]"
"""How ``[edits]`` is named among the readers of a checked file (the others are corpus names)."""
_PAIR_ROLES = ("src", "mt", "post_edits")


def _section(reader: str) -> str:
    """The config section of a reader of a checked file: ``[corpora.NAME]`` or ``[edits]``."""
    return reader if reader == _EDITS else f"[corpora.{reader}]"


@dataclass
class _Split:
    """The bundle's QE training split and the members' sources that are exactly its pairs."""

    data: Any  # qe.data.QEDataset
    readers: list[str]  # QE corpora, and _EDITS
    registered: bool  # a registered dataset's training split (not the user's files)


@dataclass
class _Checked:
    """A file members are built from, checked against the evaluation data."""

    readers: list[str]  # the corpora reading it, or _EDITS
    side: str  # src / tgt of a corpus, src / mt / post_edits of QE pairs
    path: Path
    lines: list[str]
    training: bool  # a file of the training split: its repeats of the evaluation data are the data
    overlap: Any = None  # qe.resources.leakage.Overlap
    repeats: Any = None  # qe.resources.leakage.Repeats, of a training file's overlap

    @property
    def leaks(self) -> bool:
        """A resource's overlap, or a training file repeating so much it holds the evaluation data."""
        return self.overlap is not None and (self.repeats is None or self.repeats.holds_evaluation_data)

    def refusal(self, others: int) -> QEInputError:
        """The one line refusing the build for this file's overlap, naming its first line."""
        more = f" ({others} more corpus file(s) overlap too)" if others else ""
        if self.training or _EDITS in self.readers:
            label = " / ".join(map(_section, self.readers))
            advice = "remove those pairs, or pass --drop-overlap or --allow-overlap"
            reason = self.repeats.reason(advice) if self.repeats else self.overlap.reason(advice)
            message = f"{label} {self.side}: {reason}"
        else:
            message = self.overlap.reason("remove the corpus or pass --drop-overlap or --allow-overlap")
        return QEInputError(message + more, self.path, self.overlap.lines[0])


def _training_split(config: dict[str, Any], corpora: dict[str, _Corpus], edits: Any) -> _Split | None:
    """The pairs of the cross-fitted QE corpus (else of the first QE corpus, else of ``[edits]``), read
    by every QE corpus and ``[edits]`` holding exactly those pairs; None without QE pairs."""
    tables = config["corpora"]
    qe = sorted((n for n, c in corpora.items() if c.qe is not None), key=lambda n: not tables[n]["cross_fit"])
    if qe:
        data, registered = corpora[qe[0]].qe, "dataset" in tables[qe[0]]
    elif edits is not None:
        data, registered = edits, "dataset" in config["edits"]
    else:
        return None
    readers = [n for n in qe if corpora[n].qe.src == data.src and corpora[n].qe.mt == data.mt]
    if edits is not None and edits.src == data.src and edits.mt == data.mt:
        readers.append(_EDITS)
    return _Split(data, readers, registered)


def _pair_files(data: Any, readers: list[str], training: bool) -> list[_Checked]:
    """The source, MT and post-edit lines of QE pairs (those it has), as files to check."""
    first = next(iter(data.files.values()))
    return [
        _Checked(readers, role, Path(data.files.get(role, first)), lines, training)
        for role in _PAIR_ROLES
        if (lines := getattr(data, role)) is not None
    ]


def _check_overlaps(
    config: dict[str, Any],
    root: Path,
    corpora: dict[str, _Corpus],
    edits: Any,
    allow_overlap: bool,
    drop_overlap: bool,
) -> tuple[dict[str, Any], np.ndarray | None]:
    """Check every file members are built from against the ``[leakage] eval_files``.

    A resource (a plain corpus, another QE corpus, ``[edits]`` from other pairs) copying or nearly
    copying evaluation sentences leaks them: refused unless ``allow_overlap``. The training split
    (see :func:`_training_split`) repeating a few of them is the data: kept and reported (count,
    share), refused only past ``MAX_REPEAT_SHARE`` of an evaluation file (then it holds the
    evaluation data). ``drop_overlap`` leaves all of them out of every member reading them. Returns the
    manifest's ``leakage`` section and the ``[edits]`` pairs to learn from (None: all).
    """
    from qe.resources.leakage import DEFAULT_NEAR_CHRF, Repeats, find_overlaps, load_eval_sentences

    leakage = config.get("leakage", {})
    eval_files = [_resolve(root, f) for f in leakage.get("eval_files", [])]
    near_chrf = leakage.get("near_duplicate_chrf", DEFAULT_NEAR_CHRF)
    evaluation = split_evaluation = load_eval_sentences(eval_files)
    split = _training_split(config, corpora, edits)
    if split is not None and split.registered:
        # a registered training split's own files listed as evaluation files (WMT12's config lists them
        # so that no external corpus holds a training sentence) are not its evaluation data
        own = {Path(f).resolve() for f in split.data.files.values()}
        if any(f.resolve() in own for f in eval_files):
            split_evaluation = load_eval_sentences([f for f in eval_files if f.resolve() not in own])
    readers = split.readers if split is not None else []
    checked = [
        _Checked([name], side, path, corpus.lines[side], False)
        for name, corpus in corpora.items()
        if name not in readers
        for side, path in corpus.files.items()
    ]
    if edits is not None and _EDITS not in readers:
        checked += _pair_files(edits, [_EDITS], False)
    if split is not None:
        checked += _pair_files(split.data, split.readers, True)
    for item in checked:
        against = split_evaluation if item.training else evaluation
        item.overlap = find_overlaps(item.path, item.lines, against, near_chrf)
        if item.training and item.overlap is not None:
            item.repeats = Repeats.of(item.overlap, len(item.lines), against)
    leaks = [item for item in checked if item.leaks]
    if leaks and not allow_overlap and not drop_overlap:
        raise leaks[0].refusal(len(leaks) - 1)
    dropped, keep_edits = (
        _drop_overlapping_lines(corpora, edits, checked, root) if drop_overlap else ({}, None)
    )
    repeats = [
        {
            **item.repeats.manifest_entry(),
            "readers": [_section(r) for r in item.readers],
            "side": item.side,
            "corpus": _shown_path(root, item.path),
            "eval_file": _shown_path(root, Path(item.repeats.eval_file)),
            "dropped": drop_overlap,
        }
        for item in checked
        if item.repeats is not None and not item.leaks
    ]
    section = {
        "eval_files": leakage.get("eval_files", []),
        "eval_sentences": len(evaluation),
        "near_duplicate_chrf": near_chrf,
        "overlaps": [item.overlap.manifest_entry() for item in leaks],
        "repeats": repeats,
        "allowed": bool(leaks) and allow_overlap and not drop_overlap,
        "dropped": dropped,
    }
    return section, keep_edits


def _drop_overlapping_lines(
    corpora: dict[str, _Corpus], edits: Any, checked: list[_Checked], root: Path
) -> tuple[dict[str, dict[str, Any]], np.ndarray | None]:
    """Leave the lines that copy or nearly copy evaluation sentences out of every member reading them
    (both sides of a parallel line; the whole pair of QE pairs); what the manifest records under
    ``leakage.dropped``, per reader, and the ``[edits]`` pairs kept (None: none left out)."""
    rows: dict[str, set[int]] = {}
    entries: dict[str, list[dict[str, Any]]] = {}
    for item in checked:
        if item.overlap is None:
            continue
        entry = {**item.overlap.manifest_entry(), "side": item.side, "corpus": _shown_path(root, item.path)}
        for reader in item.readers:
            rows.setdefault(reader, set()).update(line - 1 for line in item.overlap.lines)
            entries.setdefault(reader, []).append(entry)
    dropped, keep_edits = {}, None
    for reader, gone in rows.items():
        total = len(edits.src) if reader == _EDITS else len(next(iter(corpora[reader].lines.values())))
        keep = np.ones(total, dtype=bool)
        keep[sorted(gone)] = False
        if reader == _EDITS:
            keep_edits = keep
        else:
            corpus = corpora[reader]
            corpus.lines = {
                side: [lines[i] for i in np.flatnonzero(keep)] for side, lines in corpus.lines.items()
            }
        dropped[reader] = {"lines": len(gone), "kept": int(keep.sum()), "files": entries[reader]}
    return dropped, keep_edits


def _plan_cross_fitting(config: dict[str, Any], corpora: dict[str, _Corpus]) -> Any:
    """The fold map of the cross-fitted QE corpus (None without one); masks the lines of it and of the
    plain corpora with ``cross_fit = true`` that repeat a training sentence."""
    from qe.resources.crossfit import FoldMap, SentenceFolds
    from qe.resources.folds import assign_folds, pair_key

    tables = config["corpora"]
    fitted = [n for n, c in corpora.items() if c.qe is not None and tables[n]["cross_fit"]]
    if not fitted:
        return None
    name = fitted[0]
    qe = corpora[name].qe
    folds, seed = int(tables[name]["cross_fit"]), int(tables[name]["seed"])
    keys = [pair_key(s, m) for s, m in zip(qe.src, qe.mt, strict=True)]
    if len(set(keys)) < 2 * folds:
        raise QEInputError(
            f"[corpora.{name}]: {len(set(keys))} distinct training pairs are too few for cross_fit = {folds}"
        )
    fold_of = assign_folds(keys, folds, seed)
    targets = [qe.mt] + ([qe.post_edits] if qe.post_edits is not None else [])
    sentences = SentenceFolds(fold_of, keys, qe.src, targets)
    for other, table in tables.items():
        if other == name or (not is_qe_corpus(table) and table.get("cross_fit")):
            corpora[other].masks = sentences.masks(corpora[other].lines)
    per_fold = np.bincount(list(fold_of.values()), minlength=folds).tolist()
    return FoldMap(fold_of, folds, {"corpus": name, "seed": seed, "pairs": len(keys), "per_fold": per_fold})


def _fold_file(member: str, file: str, fold: int) -> str:
    """``lm.src.bin`` -> ``lm.src.fold2.bin``: the file of one fold's version of a member."""
    rest = file[len(member) :] if file.startswith(member) else "." + file
    return f"{member}.fold{fold}{rest}"


def _without_fold(corpus: _Corpus, fold: int) -> _Corpus:
    """The corpus without its lines masked for ``fold`` (tokens already computed are kept)."""
    keep = np.flatnonzero(((corpus.masks >> fold) & 1) == 0)
    return _Corpus(
        corpus.name,
        corpus.files,
        {side: [lines[i] for i in keep] for side, lines in corpus.lines.items()},
        {side: [tokens[i] for i in keep] for side, tokens in corpus.tokens.items()},
    )


def _cross_fit_members(
    config: dict[str, Any],
    config_path: Path,
    root: Path,
    corpora: dict[str, _Corpus],
    text: dict[str, TextConfig],
    work: Path,
    n_jobs: int,
    progress: bool,
    token_cache_dir: str | Path | None,
    members: dict[str, dict[str, Any]],
    fold_map: Any,
) -> dict[str, Any]:
    """Build each member that read a masked corpus once more per fold (its ``folds`` entries) and the
    ``cross_fit`` member; returns the manifest's ``cross_fit`` section (also naming in-sample members)."""
    section: dict[str, Any] = {}
    tables = config["corpora"]
    in_sample = sorted(n for n, c in corpora.items() if c.qe is not None and not tables[n]["cross_fit"])
    if in_sample:
        section["in_sample"] = {
            "corpora": in_sample,
            "members": sorted(m for m, e in members.items() if set(e.get("corpora", [])) & set(in_sample)),
        }
    if fold_map is None:
        return section
    t0 = time.perf_counter()
    masked = sorted(n for n, c in corpora.items() if c.masks is not None and c.masks.any())
    fitted = sorted(m for m, e in members.items() if set(e.get("corpora", [])) & set(masked))
    fold_map.save(work / "cross_fit.json.gz")
    entry = _file_entry(
        "folds",
        work / "cross_fit.json.gz",
        work,
        None,
        [fold_map.info["corpus"]],
        {"folds": fold_map.folds},
        t0,
    )
    members["cross_fit"] = {**entry, "summary": fold_map.info}
    sub = {
        kind: {key: table for key, table in config.get(kind, {}).items() if f"{kind}.{key}" in fitted}
        for kind in ("lm", "poslm", "ngrams")
    }
    if any(m.startswith("ibm1.") for m in fitted):
        sub["ibm1"] = config["ibm1"]
    from tqdm.auto import tqdm

    bar = tqdm(range(fold_map.folds), desc="cross-fitting", unit="fold", disable=not progress)
    for fold in bar:
        fold_corpora = {n: _without_fold(c, fold) if n in masked else c for n, c in corpora.items()}
        fold_dir = work / f".fold{fold}"
        fold_dir.mkdir()
        built = _build_members(
            sub, config_path, root, fold_corpora, text, fold_dir, n_jobs, False, token_cache_dir
        )
        for member, fold_entry in built.items():
            file = _fold_file(member, fold_entry["file"], fold)
            os.replace(fold_dir / fold_entry["file"], work / file)
            excluded = {
                n: int(((corpora[n].masks >> fold) & 1).sum()) for n in masked if n in fold_entry["corpora"]
            }
            kept = {k: v for k, v in fold_entry.items() if k not in _FOLD_ENTRY_DROPPED}
            members[member].setdefault("folds", []).append({**kept, "file": file, "excluded_lines": excluded})
        shutil.rmtree(fold_dir)
    section.update(
        corpus=fold_map.info["corpus"],
        folds=fold_map.folds,
        seed=fold_map.info["seed"],
        masked_corpora=masked,
        members=fitted,
    )
    return section


_FOLD_ENTRY_DROPPED = ("kind", "corpora", "settings", "side", "key_side", "build_seconds")


def _input_files(config: dict[str, Any], root: Path) -> list[Path]:
    """The files a bundle config reads (corpora, evaluation files, truecase models): the bundle
    directory must never hold one."""
    files = [
        _resolve(root, table[key])
        for table in config["corpora"].values()
        for key in (*SIDES, "mt", "post_edits")
        if key in table
    ]
    files += [_resolve(root, path) for path in config.get("leakage", {}).get("eval_files", [])]
    tables = [config.get("text", {}), *config.get("text", {}).values(), *config.get("unigrams", {}).values()]
    files += [
        _resolve(root, t["truecase_model"]) for t in tables if isinstance(t, dict) and "truecase_model" in t
    ]
    return files


def _share_permissions(folder: Path) -> None:
    """Give the bundle the usual permissions (temporary files are created private)."""
    umask = os.umask(0)
    os.umask(umask)
    folder.chmod(0o777 & ~umask)
    for item in folder.iterdir():
        if item.is_file():
            item.chmod(0o666 & ~umask)


def _corpus_names(table: dict[str, Any], corpora: dict[str, _Corpus], sides: tuple[str, ...]) -> list[str]:
    names = table.get("corpora") or [n for n, c in corpora.items() if all(s in c.files for s in sides)]
    for name in names:
        missing = [s for s in sides if s not in corpora[name].files]
        if missing:
            raise QEInputError(f"corpus {name!r} has no {'/'.join(missing)} side")
    return list(names)


def _file_entry(
    kind: str, path: Path, work: Path, side: str | None, corpora: list[str], settings: dict, t0: float
):
    entry = {
        "kind": kind,
        "file": path.relative_to(work).as_posix(),
        "corpora": corpora,
        "settings": settings,
        "bytes": path.stat().st_size,
        "sha256": sha256_file(path),
        "build_seconds": round(time.perf_counter() - t0, 3),
    }
    if side is not None:
        entry["side"] = side
    return entry


def _build_members(
    config: dict[str, Any],
    config_path: Path,
    root: Path,
    corpora: dict[str, _Corpus],
    text: dict[str, TextConfig],
    work: Path,
    n_jobs: int,
    progress: bool,
    token_cache_dir: str | Path | None,
    edits: tuple[Any, np.ndarray | None] | None = None,
) -> dict[str, dict[str, Any]]:
    """Tokenize the corpora once per side and build each member; returns the manifest entries.
    ``edits``: the ``[edits]`` pairs and which of them to learn from (None: all)."""
    from tqdm.auto import tqdm

    processors = {side: TextProcessor(text[side]) for side in SIDES}

    def tokens(name: str, side: str) -> list[list[str]]:
        if side not in corpora[name].tokens:
            corpora[name].tokens[side] = tokenize_corpus(
                corpora[name].lines[side],
                text[side],
                cache_dir=token_cache_dir,
                n_jobs=n_jobs,
                progress=progress,
                processor=processors[side],
            )
        return corpora[name].tokens[side]

    steps: list[tuple[str, Any]] = []
    for key, table in config.get("lm", {}).items():
        steps.append((f"lm.{key}", ("lm", key, table)))
    for key, table in config.get("ngrams", {}).items():
        steps.append((f"ngrams.{key}", ("ngrams", key, table)))
    for key, table in config.get("unigrams", {}).items():
        steps.append((f"unigrams.{key}", ("unigrams", key, table)))
    for key, table in config.get("poslm", {}).items():
        steps.append((f"poslm.{key}", ("poslm", key, table)))
    if "ibm1" in config:
        steps.append(("ibm1", ("ibm1", "", config["ibm1"])))
    if "edits" in config:
        steps.append(("edits", ("edits", "", config["edits"])))
    if "mt2" in config:
        steps.append(("mt2", ("mt2", "", config["mt2"])))

    members: dict[str, dict[str, Any]] = {}
    bar = tqdm(steps, desc="resources", unit="member", disable=not progress)
    for label, (section, key, table) in bar:
        bar.set_postfix_str(label)
        t0 = time.perf_counter()
        if section == "lm":
            side = table.get("side", key)
            names = _corpus_names(table, corpora, (side,))
            order = int(table.get("order", 3))
            binary = bool(table.get("binary", True))
            corpus_file = work / f".corpus.lm.{key}.txt"
            n_lines = 0
            with corpus_file.open("w", encoding="utf-8") as handle:
                for name in names:
                    for toks in tokens(name, side):
                        if toks:
                            handle.write(" ".join(toks) + "\n")
                            n_lines += 1
            if n_lines == 0:
                raise QEInputError(f"[lm.{key}]: the corpora hold no non-empty sentence", config_path)
            from qe.resources.lm import train_lm

            out = work / (f"lm.{key}.bin" if binary else f"lm.{key}.arpa")
            out = Path(train_lm(corpus_file, out, order=order, binary=binary))
            corpus_file.unlink()
            entry = _file_entry("kenlm", out, work, side, names, {"order": order, "binary": binary}, t0)
            entry["sentences"] = n_lines
            members[f"lm.{key}"] = entry
        elif section == "poslm":
            from qe.resources.pos import build_pos_lm

            side = table.get("side", key)
            names = _corpus_names(table, corpora, (side,))
            order = int(table.get("order", 5))
            lines = [line for name in names for line in corpora[name].lines[side]]
            out = work / f"poslm.{key}.bin"
            info = build_pos_lm(
                lines, text[side].lang, out, order=order, text=text[side], n_jobs=n_jobs, progress=progress
            )
            entry = _file_entry("kenlm", out, work, side, names, {"order": order, "binary": True}, t0)
            entry["summary"] = info
            members[f"poslm.{key}"] = entry
        elif section == "ngrams":
            side = table.get("side", key)
            names = _corpus_names(table, corpora, (side,))
            max_order = int(table.get("max_order", 3))
            counts = NgramCounts.from_sentences(
                (t for name in names for t in tokens(name, side) if t), max_order=max_order
            )
            out = work / f"ngrams.{key}.npz"
            counts.save_binary(out)
            entry = _file_entry("ngrams", out, work, side, names, {"max_order": max_order}, t0)
            entry["summary"] = counts.info()
            members[f"ngrams.{key}"] = entry
        elif section == "unigrams":
            side = table.get("side", key)
            model = _resolve(root, table["truecase_model"])
            counts = load_truecase_counts(model)
            out = work / f"unigrams.{key}.npz"
            counts.save_binary(out)
            settings = {
                "truecase_model": table["truecase_model"],
                "truecase_model_sha256": sha256_file(model),
            }
            entry = _file_entry("unigrams", out, work, side, [], settings, t0)
            entry["summary"] = counts.info()
            members[f"unigrams.{key}"] = entry
        elif section == "edits":
            members["edits"] = _build_edits(table, *edits, processors, work, t0)
        elif section == "mt2":
            from qe.resources.mt2 import SecondMT

            mt2 = SecondMT(table.get("engine", "apertium"), table["pair"])
            mt2.save(work / "mt2.json")
            members["mt2"] = _file_entry("mt2", work / "mt2.json", work, None, [], mt2.describe(), t0)
        else:
            members.update(_build_ibm1(table, corpora, tokens, work, n_jobs, progress, t0))
    return members


def _edits_dataset(table: dict[str, Any] | None, root: Path) -> Any:
    """The training pairs ``[edits]`` learns from (a registered dataset's split or the user's files,
    relative to the data directory), None without ``[edits]``; they need post-edits and labels."""
    if not table:
        return None
    from qe.data import load_parallel, load_registered

    if "dataset" in table:
        dataset = load_registered(table["dataset"], table["split"], root)
        source = f"dataset {table['dataset']}"
    else:
        paths = {key: _resolve(root, table[key]) for key in _EDITS_FILES}
        dataset = load_parallel(paths["src"], paths["mt"], paths["labels"], post_edits=paths["post_edits"])
        source = f"files {paths['src']} ..."
    if dataset.post_edits is None or dataset.labels is None:
        raise QEInputError(f"[edits]: {source} has no post-edits or labels for learning edits")
    return dataset


def _build_edits(
    table: dict[str, Any],
    dataset: Any,
    keep: np.ndarray | None,
    processors: dict[str, TextProcessor],
    work: Path,
    t0: float,
):
    """The ``edits`` member: post-editing statistics of the ``[edits]`` pairs (those in ``keep``)."""
    from qe.resources.edits import EditModel, pair_key

    model = EditModel.build(
        processors["src"].tokenize_many(dataset.src),
        processors["tgt"].tokenize_many(dataset.mt),
        processors["tgt"].tokenize_many(dataset.post_edits),
        dataset.labels,
        [pair_key(s, t) for s, t in zip(dataset.src, dataset.mt, strict=True)],
        folds=int(table["folds"]),
        seed=int(table["seed"]),
        keep=keep,
    )
    out = work / "edits.json.gz"
    model.save(out)
    where = {k: table[k] for k in ("dataset", "split", *_EDITS_FILES) if k in table}
    settings = {
        **where,
        "data_fingerprint": dataset.fingerprint(),
        "folds": model.info["folds"],
        "seed": model.info["seed"],
    }
    entry = _file_entry("edits", out, work, None, [], settings, t0)
    entry["summary"] = model.info
    return entry


def _build_ibm1(table, corpora, tokens, work: Path, n_jobs: int, progress: bool, t0: float) -> dict:
    from qe.resources.ibm1 import IBM1Table, train_both_directions

    names = _corpus_names(table, corpora, SIDES)
    iterations = int(table.get("iterations", 5))
    min_prob = float(table.get("min_prob", 0.001))
    directions = list(table.get("directions", list(_IBM1_DIRECTIONS)))
    src: list[list[str]] = []
    tgt: list[list[str]] = []
    for name in names:
        for s, t in zip(tokens(name, "src"), tokens(name, "tgt"), strict=True):
            if s and t:  # a pair with an empty side carries no alignment evidence
                src.append(s)
                tgt.append(t)
    if not src:
        raise QEInputError("[ibm1]: the parallel corpora hold no sentence pair")
    settings = {"iterations": iterations, "min_prob": min_prob, "null": True}
    if len(directions) == 2:
        s2t, t2s = train_both_directions(src, tgt, iterations, n_jobs=n_jobs, min_prob=min_prob)
        tables = {"s2t": s2t, "t2s": t2s}
    else:
        a, b = (src, tgt) if directions[0] == "s2t" else (tgt, src)
        tables = {directions[0]: IBM1Table.train(a, b, iterations, min_prob=min_prob, progress=progress)}
    out_entries = {}
    for direction, ibm in tables.items():
        out = work / f"ibm1.{direction}.npz"
        ibm.save_binary(out)
        entry = _file_entry("ibm1", out, work, None, names, {**settings, "direction": direction}, t0)
        entry["pairs"] = len(src)
        entry["entries"] = len(ibm)
        entry["key_side"] = "src" if direction == "s2t" else "tgt"
        out_entries[f"ibm1.{direction}"] = entry
    return out_entries
