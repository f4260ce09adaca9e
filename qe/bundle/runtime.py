"""A built resource bundle at run time: its manifest checked, its members loaded lazily (each through
its kind's loader, ``qe.bundle.members``), verified against their sha256 and shared in the
process, and the bundle as a training pair of one cross-fitting fold sees it."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from qe.bundle.members import member_loader
from qe.config.rules import AnyTable, Anything, Choice, Fields, List, Mistake, Optional, Str, TablesOf, check
from qe.infra.errors import QEInputError
from qe.infra.io import parse_bounded, sha256_file
from qe.infra.outputs import BUNDLE_FORMAT as FORMAT
from qe.text.processing import TextConfig, TextProcessor

MANIFEST = "manifest.json"
DEFAULT_BUNDLE_DIR = Path("models/resources")

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


def _folds_have_their_map(members: dict[str, Any]) -> Mistake:
    """Cross-fitted members need the map of which training pair is in which fold."""
    if "cross_fit" in members or not any(entry.get("folds") for entry in members.values()):
        return None
    return "cross_fit", None, "the cross-fitting map of the members' folds"


def _folds_have_their_own_files(members: dict[str, Any]) -> Mistake:
    """Each fold of a member is its own file: a fold scored with another fold's tables saw its pairs."""
    for name, entry in members.items():
        seen = set()
        for index, fold in enumerate(entry.get("folds") or []):
            file = fold.get("file")
            if str(file) in seen:
                return f"{name}.folds[{index}].file", file, f"a file no other fold of {name} uses"
            seen.add(str(file))
    return None


SCHEMA = Fields(
    {
        "format": Choice([FORMAT]),
        "name": Str(),
        "members": TablesOf(
            Fields({"kind": Str(), "folds": Optional(List(AnyTable()))}, ("kind",), others=Anything()),
            rules=(_folds_have_their_map, _folds_have_their_own_files),
        ),
        "text": TablesOf(AnyTable()),
        "languages": Optional(TablesOf(Str())),
    },
    ("format",),
    others=Anything(),
)
"""The manifest fields a run reads, so that a damaged or crafted manifest is one line naming the field
(``manifest.json: members.lm.src.kind = 3: expected a string``), not a failure half-way through a run."""


class ResourceBundle:
    """A built bundle directory: its manifest and lazily loaded members.

    ``bundle["lm.src"]`` (or ``bundle.get("lm.src")``) loads a member on first use;
    ``bundle.text_processor("src")`` gives the tokenizer the resources were built with.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path).absolute()  # workers may run in another directory (a reused pool)
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
        check(SCHEMA, self.manifest, manifest_path)
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
        load = member_loader(kind)
        if load is None:
            raise QEInputError(f"unknown resource kind {kind!r} for {name!r}", self.path / MANIFEST)
        try:
            return load(path, options, self.manifest)
        except QEInputError:
            raise
        except (OSError, RuntimeError, ValueError) as exc:
            raise QEInputError(f"cannot load resource {name!r} ({type(exc).__name__})", path) from None


def open_bundle(path: str | Path | None = None, name: str = "wmt12-en-es") -> ResourceBundle:
    """Open a bundle directory (default ``models/resources/<name>``)."""
    return ResourceBundle(path if path is not None else DEFAULT_BUNDLE_DIR / name)


def with_mt2(bundle: ResourceBundle | None, settings: dict[str, Any]) -> ResourceBundle:
    """The bundle (or an empty one) with a second MT system from an experiment config's ``[mt2]``."""
    from qe.resources.mt2 import SecondMT

    mt2 = SecondMT(settings.get("engine", "apertium"), settings["pair"])
    bundle = bundle if bundle is not None else ResourceBundle.in_memory({}, {}, name="mt2")
    return bundle.attach("mt2", mt2, mt2.describe())
