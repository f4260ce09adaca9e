"""What a streamed run keeps beside its target: the resume state, a lock, and the sidecars' names.

After every chunk a sidecar state file (``.NAME.state.json``) records the chunks and pairs done, the
byte offset reached in each input, the sink's position and the inputs' sizes and SHA-256; a resumed
run checks that the inputs and the job are unchanged before going on from there. A lock file
(``.NAME.lock``) keeps two runs from writing the same output at once.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

from qe.config.rules import AnyTable, Anything, Choice, Fields, Int, TablesOf, check
from qe.infra.errors import QEInputError
from qe.infra.io import atomic_temporary_of, parse_bounded, write_text_atomic
from qe.infra.outputs import sidecar_path
from qe.stream.chunks import Chunk
from qe.stream.inputs import InputInfo

STATE_FORMAT = "qe-stream-state/1"


def partial_path(target: Path, suffix: str = "partial") -> Path:
    """Where the unfinished output of ``target`` is kept (hidden, beside it)."""
    return sidecar_path(target, suffix)


def state_path(target: Path) -> Path:
    """The sidecar state file of a streamed run writing ``target``."""
    return sidecar_path(target, "state.json")


def refuse_foreign_sidecar(path: Path, what: str) -> None:
    """Refuse a sidecar path that is a link or not a regular file (qe never makes one), so a
    crafted link or a user's folder there is never written through or deleted."""
    if path.is_symlink() or (os.path.lexists(path) and not path.is_file()):
        raise QEInputError(
            f"qe keeps {what} here, but this is not a file qe wrote; move it away and run again", path
        )


def stale_temporaries(target: Path) -> list[Path]:
    """Temporary files left by an interrupted atomic write of the target or of its state file
    (named exactly as ``atomic_write`` names them; links are never taken for one)."""
    found: list[Path] = []
    for name in (target.name, state_path(target).name):
        found += [
            path
            for path in target.parent.glob(f".{name}.*.tmp")
            if atomic_temporary_of(path.name) == name and path.is_file() and not path.is_symlink()
        ]
    return found


@contextlib.contextmanager
def exclusive(target: Path | None) -> Iterator[None]:
    """Hold a lock file beside the target, so two runs cannot write the same output at once."""
    if target is None:
        yield
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    lock = partial_path(target, "lock")
    refuse_foreign_sidecar(lock, "its lock file")
    if lock.is_file() and lock.stat().st_size:  # qe's lock files are always empty
        raise QEInputError(
            "qe keeps its lock file here, but this file has content qe did not write; "
            "move it away and run again",
            lock,
        )
    with os.fdopen(os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644), "a+b") as handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise QEInputError("another run is writing this output right now", target) from None
        try:
            yield
        finally:
            lock.unlink(missing_ok=True)


def read_state(target: Path) -> dict[str, Any] | None:
    """The state file of an unfinished run writing ``target`` (None when there is none), refusing one
    that is not qe's."""
    path = state_path(target)
    if not path.is_file():
        return None
    try:
        state = parse_bounded(json.loads, path.read_text(encoding="utf-8"), path, "the state file")
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise QEInputError("cannot resume: unreadable state file; run again without --resume", path) from None
    if not isinstance(state, dict) or state.get("format") != STATE_FORMAT:
        raise QEInputError("cannot resume: unknown state file format; run again without --resume", path)
    return state


STATE = Fields(
    {
        "format": Choice([STATE_FORMAT]),
        "inputs": TablesOf(AnyTable()),
        "pairs_done": Int(0),
        "chunks_done": Int(0),
        "position": Int(0),
        "offsets": TablesOf(Int(0)),
    },
    ("pairs_done", "chunks_done", "position", "offsets"),
    others=Anything(),
)
"""The state file fields a resumed run reads: counts and offsets as qe writes them."""


def check_state_values(state: dict[str, Any], target: Path) -> None:
    """Refuse a state file whose counts and offsets are not what qe writes (a damaged or edited file),
    in the one wording: ``.out.tsv.state.json: position = -5: expected an integer >= 0 (...)``."""
    try:
        check(STATE, state, state_path(target))
    except QEInputError as exc:
        raise QEInputError(
            f"{exc.message} (a damaged state file: run again without --resume)", exc.path
        ) from None


def check_resumable(
    state: dict[str, Any], job: dict[str, Any], infos: dict[str, InputInfo], target: Path
) -> None:
    """Refuse to resume a run with other options or another model, or whose inputs changed."""
    where = state_path(target)
    if state.get("job") != json.loads(json.dumps(job)):
        raise QEInputError(
            "cannot resume: the interrupted run had other options or another model; "
            "run again without --resume",
            where,
        )
    recorded = state.get("inputs", {})
    for role, info in infos.items():
        old = recorded.get(role, {})
        if old.get("sha256") != info.sha256 or old.get("size") != info.size:
            raise QEInputError(
                "cannot resume: this input changed since the interrupted run; run again without --resume",
                info.path,
            )


def write_state(
    target: Path,
    job: dict[str, Any],
    infos: dict[str, InputInfo],
    chunk_size: int,
    chunk: Chunk,
    position: int,
) -> None:
    """Record, atomically, that every chunk up to ``chunk`` is in the sink, which is at ``position``."""
    record = {
        "format": STATE_FORMAT,
        "job": job,
        "inputs": {role: asdict(info) for role, info in infos.items()},
        "chunk_size": chunk_size,
        "chunks_done": chunk.index + 1,
        "pairs_done": chunk.start + len(chunk),
        "pairs_total": next(iter(infos.values())).lines,
        "offsets": chunk.offsets,
        "position": position,
    }
    write_text_atomic(state_path(target), json.dumps(record, indent=1) + "\n")
