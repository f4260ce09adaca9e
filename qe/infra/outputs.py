"""Where qe may write: output paths are checked before any work, and a directory is replaced only if qe
wrote it, atomically (built beside it, then swapped in), so no command ever deletes a user's files.

A directory qe writes (a run, an ablation, a resource bundle, a report written with ``--out``) holds
a marker file, ``.qe-output``, naming its kind. Directories written before the marker existed are
recognised by their files (a run: ``config.toml``, ``metrics.json`` and ``signature.txt``; an
ablation: ``config.toml`` and ``ablation.json``; a bundle: a ``manifest.json`` of the bundle
format). Whatever its marker, a directory holding a file qe does not write there is never replaced;
nor is the working directory or one of its parents, or a directory holding one of the command's
inputs.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import shutil
import socket
import tempfile
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path

from qe import __version__
from qe.infra.errors import QEInputError
from qe.infra.io import atomic_temporary_of, write_text_atomic

MARKER = ".qe-output"
MARKER_FORMAT = "qe-output/1"
BUNDLE_FORMAT = "qe-resource-bundle/1"
"""A resource bundle's ``manifest.json`` format (``qe.bundle``), told here so a bundle's
members are known without importing the bundle code."""
# qe writes hidden files named after an output beside it (".NAME.state.json.XXXXXXXX.tmp" is the
# longest): the output's own name must leave room for them.
SIBLING_ROOM = 32

WORD_PREDICTIONS = {"dev": "word_predictions.dev.jsonl", "test": "word_predictions.test.jsonl"}
"""A word-level run's predictions of each split it scores (``qe.words.predictions``), in its run directory."""

KIND_NAMES = {
    "run": "run",
    "ablation": "run of qe ablate",
    "bundle": "resource bundle",
    "report": "report of qe report --out",
}
_KIND_FILES = {
    "run": {
        "config.toml",
        "signature.txt",
        "metrics.json",
        "predictions.tsv",
        "model.skops",
        "model.qwords",
        *WORD_PREDICTIONS.values(),
        "model.txt",
        "selection.json",
        "report.md",
        "report.html",
    },
    "ablation": {"config.toml", "ablation.json", "ablation.md", "ablation.png", "report.md", "report.html"},
    "bundle": {"manifest.json"},
    "report": {"report.md", "report.html"},
}
# Without a marker (written by an earlier version): the files that identify each kind.
_LEGACY_SIGNS = {
    "run": {"config.toml", "metrics.json", "signature.txt"},
    "ablation": {"config.toml", "ablation.json"},
    "bundle": {"manifest.json"},
}
REPORT_FIGURES = "report_files"  # qe report's figures in a run directory (PNG files)
REPORT_FIGURE_NAMES = ("scatter", "residual_bands", "selection_path", "importances", "ablation")
SIDECARS = ("partial", "parts", "lock", "state.json")
"""The hidden files a streamed output ``NAME`` keeps beside it while it is written (``.NAME.SUFFIX``)."""


def sidecar_path(target: Path, suffix: str) -> Path:
    """Where qe keeps the ``suffix`` sidecar of the output ``target`` (hidden, beside it)."""
    return target.parent / f".{target.name}.{suffix}"


def _existing_ancestor(path: Path) -> Path:
    """The nearest part of ``path`` (itself or a parent) that exists."""
    for candidate in (path, *path.parents):
        with contextlib.suppress(OSError):
            if os.path.lexists(candidate):
                return candidate
    return Path(".")


def check_name(path: Path) -> None:
    """Refuse a path whose last part is too long for the file system once qe's hidden
    sibling files are named after it, or whose parent is not a directory."""
    ancestor = _existing_ancestor(path.parent)
    try:
        name_max = os.pathconf(ancestor, "PC_NAME_MAX")
    except (OSError, ValueError):
        name_max = 255
    for part in path.parts:
        size = len(os.fsencode(part))
        if size > name_max:
            raise QEInputError(
                f"file name too long: a part of the path is {size} bytes (at most {name_max})", path
            )
    size, room = len(os.fsencode(path.name)), name_max - SIBLING_ROOM
    if size > room:
        raise QEInputError(
            f"output name too long: {size} bytes, at most {room} "
            "(qe writes hidden files named after the output beside it)",
            path,
        )
    if not ancestor.is_dir():
        raise QEInputError(f"cannot write here: {ancestor} is not a directory", path)


def _real(path: str | Path) -> Path:
    return Path(os.path.realpath(path))


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _is_input(path: Path, item: Path) -> bool:
    """Whether writing ``path`` would change the input ``item`` (the file, or inside the folder)."""
    if _same_file(path, item) or _real(path) == _real(item):
        return True
    return item.is_dir() and _real(item) in _real(path).parents


def check_output_file(path: str | Path, inputs: Iterable[str | Path | None] = ()) -> None:
    """Refuse an output file that is (or links to) one of ``inputs`` or lies inside an input folder
    (a resource bundle), whose hidden sidecar files would be an input, that is a directory or a
    device or pipe (the finished output is renamed onto it), or that cannot be named."""
    path = Path(path)
    check_name(path)
    items = [Path(item) for item in inputs if item is not None]
    for item in items:
        if _is_input(path, item):
            where = "inside the input folder" if item.is_dir() else "an input"
            raise QEInputError(f"is {where} of this command ({item}); refusing to write over it", path)
        for suffix in SIDECARS:
            if _is_input(sidecar_path(path, suffix), item):
                raise QEInputError(
                    f"qe keeps its unfinished output in {sidecar_path(path, suffix).name} beside it, "
                    f"which is an input of this command ({item}); choose another output name",
                    path,
                )
    if path.is_dir():
        raise QEInputError("is a directory; give a file name for the output", path)
    if path.exists() and not path.is_file():  # a device, a pipe: replacing it would destroy it
        raise QEInputError(
            "is not a regular file; qe replaces its output file when done, so name a file "
            "(or leave out --out to write to standard output where the command allows it)",
            path,
        )


def _bundle_files(folder: Path) -> set[str] | None:
    """The member files a bundle's manifest names, cross-fitted members' fold files included (None if
    there is no readable bundle manifest)."""
    try:
        manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        return None
    if not isinstance(manifest, dict) or manifest.get("format") != BUNDLE_FORMAT:
        return None
    members = manifest.get("members")
    if not isinstance(members, dict):
        return None
    entries = [m for m in members.values() if isinstance(m, dict)]
    entries += [
        fold
        for m in entries
        if isinstance(m.get("folds"), list)
        for fold in m["folds"]
        if isinstance(fold, dict)
    ]
    return {str(m["file"]) for m in entries if isinstance(m.get("file"), str)}


def _read_marker(folder: Path) -> str | None:
    try:
        marker = json.loads((folder / MARKER).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        return None
    if (
        isinstance(marker, dict)
        and marker.get("format") == MARKER_FORMAT
        and marker.get("kind") in KIND_NAMES
    ):
        return marker["kind"]
    return None


def _owned(kind: str, folder: Path) -> tuple[set[str], set[str]]:
    """The files and the folders a directory of this kind may hold."""
    files = set(_KIND_FILES[kind]) | {MARKER}
    folders: set[str] = set()
    if kind == "bundle":
        members = _bundle_files(folder) or set()
        files |= members
        folders = {parent.as_posix() for member in members for parent in Path(member).parents} - {"."}
    else:  # a run, an ablation or a report: qe report's figures
        folders = {REPORT_FIGURES}
    return files, folders


def _is_owned(rel: str, is_dir: bool, kind: str, files: set[str], folders: set[str]) -> bool:
    if is_dir:
        return rel in folders
    parent, _, name = rel.rpartition("/")
    stem = atomic_temporary_of(name)
    if stem is not None:  # left by an interrupted atomic write of a file
        rel, name = (f"{parent}/{stem}" if parent else stem), stem
    if rel in files:
        return True
    return (
        parent == REPORT_FIGURES
        and REPORT_FIGURES in folders
        and name in {f"{figure}.png" for figure in REPORT_FIGURE_NAMES}
    )


def recognise(folder: str | Path, expected: str | None = None) -> tuple[str | None, list[str]]:
    """The kind of qe output a non-empty ``folder`` holds (or None), and the entries qe did not write.

    The marker names the kind; without one the kind is guessed from the files (``expected`` first).
    """
    folder = Path(folder)
    names = {entry.name for entry in folder.iterdir()}
    kind = _read_marker(folder)
    if kind is None and MARKER not in names:
        order = [expected] if expected in _LEGACY_SIGNS else []
        order += [k for k in _LEGACY_SIGNS if k != expected]
        for candidate in order:
            if _LEGACY_SIGNS[candidate] <= names and (
                candidate != "bundle" or _bundle_files(folder) is not None
            ):
                kind = candidate
                break
    if kind is None:
        return None, sorted(names)
    files, folders = _owned(kind, folder)

    def foreign(where: Path, prefix: str) -> Iterator[str]:
        """Entries qe did not write, never following links nor entering a foreign folder."""
        with os.scandir(where) as scan:
            for entry in sorted(scan, key=lambda e: e.name):
                rel, is_dir = prefix + entry.name, entry.is_dir(follow_symlinks=False)
                if not _is_owned(rel, is_dir, kind, files, folders):
                    yield rel
                elif is_dir:
                    yield from foreign(Path(entry.path), rel + "/")

    return kind, list(foreign(folder, ""))


def _listing(names: list[str]) -> str:
    shown = ", ".join(names[:3])
    return shown + (f" and {len(names) - 3} more" if len(names) > 3 else "")


def check_output_dir(
    path: str | Path, kind: str, *, overwrite: bool = False, inputs: Iterable[str | Path | None] = ()
) -> None:
    """Refuse (nothing touched) an output directory qe must not replace; see the module docstring.

    An absent or empty directory is fine; one holding a ``kind`` output of qe's needs ``overwrite``.
    """
    path = Path(path)
    check_name(path)
    if path.is_symlink():
        raise QEInputError("is a symbolic link; give the directory it points to", path)
    real, cwd = _real(path), _real(Path.cwd())
    if real == cwd or real in cwd.parents:
        raise QEInputError(
            "is the working directory or one of its parents; qe writes only a new directory", path
        )
    for item in inputs:
        if item is not None and (real == _real(item) or real in _real(item).parents):
            what = "is" if real == _real(item) else f"holds {item},"
            raise QEInputError(f"{what} an input of this command; choose another output directory", path)
    if not path.exists():
        return
    if not path.is_dir():
        raise QEInputError("exists and is not a directory", path)
    if not any(path.iterdir()):
        return
    found, foreign = recognise(path, kind)
    if foreign:
        raise QEInputError(
            f"holds {_listing(foreign)}, which qe did not write; refusing to touch it "
            "(choose a new output directory)",
            path,
        )
    if found != kind:
        raise QEInputError(
            f"holds a {KIND_NAMES[found]}, not a {KIND_NAMES[kind]}; refusing to replace it", path
        )
    if not overwrite:
        raise QEInputError(
            f"output directory already holds a {KIND_NAMES[kind]}; pass --overwrite to replace it", path
        )


def prepare_report_dir(path: str | Path) -> None:
    """Make ``path`` ready for ``qe report --out``: a new or empty directory (marked as a report of
    qe's), or one qe wrote (a run, an ablation, an earlier report), whose report files are qe's to
    replace. Anything else is refused, nothing touched."""
    path = Path(path)
    check_name(path)
    if path.is_symlink():
        raise QEInputError("is a symbolic link; give the directory it points to", path)
    if path.exists() and not path.is_dir():
        raise QEInputError("exists and is not a directory", path)
    if path.is_dir() and any(path.iterdir()):
        found, _ = recognise(path, "report")
        if found not in ("run", "ablation", "report"):
            raise QEInputError(
                "holds files qe did not write; give a new or empty directory for the report", path
            )
        return
    path.mkdir(parents=True, exist_ok=True)
    marker = {"format": MARKER_FORMAT, "kind": "report", "qe_version": __version__}
    write_text_atomic(path / MARKER, json.dumps(marker) + "\n")


def _swap_in(staging: Path, path: Path) -> None:
    """Put ``staging`` in the place of ``path``: the old directory is renamed away, then deleted."""
    if not path.exists() or not any(path.iterdir()):
        try:
            os.rename(staging, path)  # replaces an empty directory atomically
        except OSError as exc:
            if exc.errno in (errno.ENOTEMPTY, errno.EEXIST):
                raise QEInputError(
                    "was filled by someone else while qe was working; not replaced", path
                ) from None
            raise
        return
    old = path.parent / f".{path.name}.old-{uuid.uuid4().hex[:8]}"
    os.rename(path, old)
    try:
        os.rename(staging, path)
    except BaseException:
        os.rename(old, path)
        raise
    shutil.rmtree(old, ignore_errors=True)


def _remove_abandoned_staging(path: Path) -> None:
    """Remove the staging folders of earlier runs writing ``path`` that were killed outright
    (SIGKILL, a power cut): hidden ``.NAME.xxxxxxxx`` folders whose marker names a process of this
    host that no longer exists. A folder without such a marker, or of a live process, is kept."""
    for folder in path.parent.glob(f".{path.name}.*"):
        if not re.fullmatch(rf"\.{re.escape(path.name)}\.[a-z0-9_]{{8}}", folder.name):
            continue
        if folder.is_symlink() or not folder.is_dir():
            continue
        try:
            marker = json.loads((folder / MARKER).read_text(encoding="utf-8"))
            owner = marker["staging_of"]
            pid, host = int(owner["pid"]), str(owner["host"])
        except (OSError, ValueError, KeyError, TypeError, UnicodeDecodeError, RecursionError):
            continue
        if marker.get("format") != MARKER_FORMAT or host != socket.gethostname() or _alive(pid):
            continue
        shutil.rmtree(folder, ignore_errors=True)


def _alive(pid: int) -> bool:
    """Whether a process with this id exists on this host."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        pass
    return True


@contextlib.contextmanager
def staged_dir(
    path: str | Path, kind: str, *, overwrite: bool = False, inputs: Iterable[str | Path | None] = ()
) -> Iterator[Path]:
    """Yield an empty hidden folder beside ``path`` to write the output into; when the block ends
    normally it replaces ``path`` (checked again first). On an error or an interruption the folder
    is removed and ``path`` is left as it was."""
    path, inputs = Path(path), list(inputs)
    check_output_dir(path, kind, overwrite=overwrite, inputs=inputs)
    path.parent.mkdir(parents=True, exist_ok=True)
    _remove_abandoned_staging(path)
    staging = Path(tempfile.mkdtemp(prefix=f".{path.name}.", dir=path.parent))
    try:
        marker = {
            "format": MARKER_FORMAT,
            "kind": kind,
            "qe_version": __version__,
            "staging_of": {"pid": os.getpid(), "host": socket.gethostname()},
        }
        write_text_atomic(staging / MARKER, json.dumps(marker) + "\n")
        yield staging
        check_output_dir(path, kind, overwrite=overwrite, inputs=inputs)  # it may have changed meanwhile
        _swap_in(staging, path)
    except OSError as exc:
        shutil.rmtree(staging, ignore_errors=True)
        if exc.filename:
            raise
        # e.g. a full disk: the system names no file, so name the output
        raise QEInputError(f"cannot write the {KIND_NAMES[kind]}: {exc.strerror or exc}", path) from None
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
