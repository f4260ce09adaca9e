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
==============  =======================================  ==========================================

The manifest records the corpora (paths, sha256, lines, bytes), the text settings, each
member's settings, file size, build time and summary, and the result of the leakage check.
N-gram counts and IBM1 tables are written as binary ``.npz`` tables (no parsing at load, see
``qe.resources.arrays``); bundles built before, with ``.tsv.gz`` / ``.txt`` tables, still load.
Members are loaded lazily, on first use, and kept; ``bundle.get(name, **options)`` caches one
object per name and options. Building refuses corpora that share a sentence (compared
lower-cased, whitespace collapsed) or a near-duplicate (chrF >= ``near_duplicate_chrf`` after
normalising digits and punctuation, see ``qe.resources.leakage``) with the evaluation files listed
in ``[leakage]``.

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
    [mt2]        engine = "apertium"  pair = "eng-spa"    # a second MT system (pseudo-references)
    [edits]      src = "..."  mt = "..."  post_edits = "..."  labels = "..."   # or the user's files

``[edits]`` learns word-level post-editing statistics from training data with post-edits and
labels: a registered dataset's *training* split (any with post-edits: ``wmt12-en-es``,
``mlqe-pe/<pair>``, ``mlqe-da/<pair>``; its test split is refused) or line-aligned files,
cross-fitted so that training pairs never see their own post-edit (see ``qe.resources.edits``).
"""

from __future__ import annotations

import hashlib
import json
import os
import time
import tomllib
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from qe import __version__
from qe.errors import QEInputError
from qe.io import atomic_write, read_text_lines, require_file, sha256_file
from qe.outputs import check_output_dir, staged_dir
from qe.resources.ngrams import NgramCounts, load_truecase_counts
from qe.schema import BUNDLE, check
from qe.text import TextConfig, TextProcessor, tokenize_corpus

MANIFEST = "manifest.json"
FORMAT = "qe-resource-bundle/1"
DEFAULT_BUNDLE_DIR = Path("models/resources")
SIDES = ("src", "tgt")

_IBM1_DIRECTIONS = ("s2t", "t2s")
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
            self.manifest: dict[str, Any] = json.loads(manifest_path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise QEInputError(f"corrupt bundle manifest ({exc.__class__.__name__})", manifest_path) from None
        if not isinstance(self.manifest, dict) or self.manifest.get("format") != FORMAT:
            raise QEInputError(f"unknown bundle manifest format (expected {FORMAT})", manifest_path)
        self._objects: dict[tuple, Any] = {}
        self._injected: dict[str, Any] = {}
        self._processors: dict[str, TextProcessor] = {}

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
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)

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
        key = (name, tuple(sorted(options.items())))
        if key not in self._objects:
            self._objects[key] = self._load_shared(name, options, key)
        return self._objects[key]

    def _load_shared(self, name: str, options: dict[str, Any], key: tuple) -> Any:
        """Load through a per-process cache, so joblib workers (which receive the bundle without its
        loaded members) load each member file once, not once per batch."""
        path = self.member_path(name)
        stat = path.stat()
        self._verify(name, path, stat)
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

    def member_path(self, name: str) -> Path:
        """The file of a member: a plain file name inside the bundle (no directory part, no ``..``, no
        link leading out of the bundle), else ``QEInputError`` naming the member; it must exist."""
        self._require(name)
        file = self.manifest["members"][name].get("file")
        if not isinstance(file, str) or file in ("", ".", "..") or any(c in file for c in "/\\\0"):
            raise QEInputError(
                f"bundle member {name!r} must name a plain file inside the bundle", self.path / MANIFEST
            )
        path = self.path / file
        if not path.is_file():
            raise QEInputError(f"resource file of {name!r} is missing", path)
        if not path.resolve().is_relative_to(self.path.resolve()):
            raise QEInputError(f"bundle member {name!r} is a link to a file not inside the bundle", path)
        return path

    def _verify(self, name: str, path: Path, stat: os.stat_result) -> None:
        """Check a member file against the size and sha256 in the manifest; the digest of each file
        version (path, size, mtime) is computed once per process."""
        entry = self.manifest["members"][name]
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

                return SecondMT.load(path)
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


def read_bundle_config(config_path: str | Path) -> dict[str, Any]:
    """Read and check a bundle TOML config against ``qe.schema.BUNDLE`` (unknown keys and sections,
    wrong types and ranges refused), then the cross-references (sides, corpus names)."""
    config_path = require_file(config_path, "bundle config")
    try:
        config = tomllib.loads(config_path.read_text(encoding="utf-8-sig"))  # -sig: drops a BOM
    except UnicodeDecodeError:
        raise QEInputError("bundle config is not valid UTF-8", config_path) from None
    except tomllib.TOMLDecodeError as exc:
        raise QEInputError(f"invalid TOML: {exc}", config_path) from None
    if "languages" not in config:
        raise QEInputError('[languages] needs src = LANG and tgt = LANG (e.g. "en")', config_path)
    check(BUNDLE, config, config_path)
    corpora = config.setdefault("corpora", {})
    readers = [section for section in ("lm", "poslm", "ngrams", "ibm1") if config.get(section)]
    if not corpora and (readers or not (config.get("unigrams") or "edits" in config or "mt2" in config)):
        needed = f" ([{readers[0]}] is built from corpora)" if readers else ""
        raise QEInputError(f"[corpora] lists no corpus{needed}", config_path)
    for name, table in corpora.items():
        if not table:
            raise QEInputError(f"[corpora.{name}] needs src and/or tgt", config_path)
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


def _text_configs(config: dict[str, Any], config_path: Path) -> dict[str, TextConfig]:
    text = dict(config.get("text", {}))
    overrides = {side: text.pop(side, {}) for side in SIDES}
    out = {}
    for side in SIDES:
        values = {**text, **overrides[side]}
        values["lang"] = config["languages"][side]
        try:
            out[side] = TextConfig.from_dict(values)
        except QEInputError as exc:
            raise QEInputError(exc.message, config_path) from None
    return out


def _resolve(data_dir: Path, value: str) -> Path:
    path = Path(value)
    return path if path.is_absolute() else data_dir / path


def build_bundle(
    config_path: str | Path,
    output: str | Path | None = None,
    *,
    data_dir: str | Path | None = None,
    allow_overlap: bool = False,
    overwrite: bool = False,
    n_jobs: int = 2,
    progress: bool = True,
    token_cache_dir: str | Path | None = None,
) -> ResourceBundle:
    """Build every member of a bundle config into ``output`` (default ``models/resources/<name>``).

    Checks first (before any long step): corpus files exist, are UTF-8 and non-empty, the two
    sides of a parallel corpus have the same number of lines, and no corpus line copies or nearly
    copies a line of the ``[leakage] eval_files`` (unless ``allow_overlap``; see
    ``qe.resources.leakage``). The bundle is built in a temporary
    directory beside ``output`` and moved into place at the end.
    """
    from qe.data import resolve_data_dir
    from qe.resources.leakage import DEFAULT_NEAR_CHRF, check_leakage
    from qe.workers import exit_with_parent_everywhere

    start = time.perf_counter()
    config_path = Path(config_path)
    config = read_bundle_config(config_path)
    root = resolve_data_dir(data_dir)
    output = Path(output) if output is not None else DEFAULT_BUNDLE_DIR / config["name"]
    inputs = [config_path, *_input_files(config, root), root]
    check_output_dir(output, "bundle", overwrite=overwrite, inputs=inputs)
    text = _text_configs(config, config_path)

    # ---- read and check the corpora
    corpora: dict[str, _Corpus] = {}
    for name, table in config["corpora"].items():
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
    leakage = config.get("leakage", {})
    eval_files = [_resolve(root, f) for f in leakage.get("eval_files", [])]
    near_chrf = leakage.get("near_duplicate_chrf", DEFAULT_NEAR_CHRF)
    eval_sentences, overlaps = check_leakage(
        ((path, corpus.lines[side]) for corpus in corpora.values() for side, path in corpus.files.items()),
        eval_files,
        near_chrf,
    )
    if overlaps and not allow_overlap:
        first = overlaps[0]
        more = f" ({len(overlaps) - 1} more corpus file(s) overlap too)" if len(overlaps) > 1 else ""
        raise QEInputError(first.reason() + more, first.corpus, first.lines[0])

    exit_with_parent_everywhere()
    with staged_dir(output, "bundle", overwrite=overwrite, inputs=inputs) as work:
        members = _build_members(
            config, config_path, root, corpora, text, work, n_jobs, progress, token_cache_dir
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
                        "path": config["corpora"][name][side],
                        "sha256": sha256_file(path),
                        "bytes": path.stat().st_size,
                        "lines": len(corpus.lines[side]),
                    }
                    for side, path in corpus.files.items()
                }
                for name, corpus in corpora.items()
            },
            "leakage": {
                "eval_files": leakage.get("eval_files", []),
                "eval_sentences": len(eval_sentences),
                "near_duplicate_chrf": near_chrf,
                "overlaps": [o.manifest_entry() for o in overlaps],
                "allowed": bool(overlaps) and allow_overlap,
            },
            "members": members,
            "build_seconds": round(time.perf_counter() - start, 3),
        }
        with atomic_write(work / MANIFEST) as handle:
            json.dump(manifest, handle, indent=2, sort_keys=True, ensure_ascii=False)
            handle.write("\n")
        _share_permissions(work)
    return ResourceBundle(output)


def _input_files(config: dict[str, Any], root: Path) -> list[Path]:
    """The files a bundle config reads (corpora, evaluation files, truecase models): the bundle
    directory must never hold one."""
    files = [_resolve(root, path) for table in config["corpora"].values() for path in table.values()]
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
) -> dict[str, dict[str, Any]]:
    """Tokenize the corpora once per side and build each member; returns the manifest entries."""
    from tqdm.auto import tqdm

    processors = {side: TextProcessor(text[side]) for side in SIDES}
    token_cache: dict[tuple[str, str], list[list[str]]] = {}

    def tokens(name: str, side: str) -> list[list[str]]:
        if (name, side) not in token_cache:
            token_cache[(name, side)] = tokenize_corpus(
                corpora[name].lines[side],
                text[side],
                cache_dir=token_cache_dir,
                n_jobs=n_jobs,
                progress=progress,
                processor=processors[side],
            )
        return token_cache[(name, side)]

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
            members["edits"] = _build_edits(table, root, processors, work, t0)
        elif section == "mt2":
            from qe.resources.mt2 import SecondMT

            mt2 = SecondMT(table.get("engine", "apertium"), table["pair"])
            mt2.save(work / "mt2.json")
            members["mt2"] = _file_entry("mt2", work / "mt2.json", work, None, [], mt2.describe(), t0)
        else:
            members.update(_build_ibm1(table, corpora, tokens, work, n_jobs, progress, t0))
    return members


def _build_edits(
    table: dict[str, Any], root: Path, processors: dict[str, TextProcessor], work: Path, t0: float
):
    """The ``edits`` member: post-editing statistics of a registered dataset's training split or
    of training files (relative to the data directory)."""
    from qe.data import load_parallel, load_registered
    from qe.resources.edits import EditModel, pair_key

    if "dataset" in table:
        dataset = load_registered(table["dataset"], table["split"], root)
        source = f"dataset {table['dataset']}"
    else:
        paths = {key: _resolve(root, table[key]) for key in _EDITS_FILES}
        dataset = load_parallel(paths["src"], paths["mt"], paths["labels"], post_edits=paths["post_edits"])
        source = f"files {paths['src']} ..."
    if dataset.post_edits is None or dataset.labels is None:
        raise QEInputError(f"[edits]: {source} has no post-edits or labels for learning edits")
    model = EditModel.build(
        processors["src"].tokenize_many(dataset.src),
        processors["tgt"].tokenize_many(dataset.mt),
        processors["tgt"].tokenize_many(dataset.post_edits),
        dataset.labels,
        [pair_key(s, t) for s, t in zip(dataset.src, dataset.mt, strict=True)],
        folds=int(table["folds"]),
        seed=int(table["seed"]),
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
