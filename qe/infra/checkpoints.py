"""Trained model files kept between runs, so that a long build or run cut short resumes.

A ``[crossencoder]`` bundle trains six models of ten to thirty minutes each, a word model with the
``tokenhead`` family six token heads; a job stopped after the fourth (a session's end, a killed job)
would otherwise train all six again. Each model file, once written, is copied to
``<cache>/checkpoints/<kind>/<key><suffix>`` with its summary beside it (``<key>.json``, written last:
its presence says the model file is whole). ``key`` hashes everything
the training reads (the pairs and labels, the settings, the base model, the thread count), so a
checkpoint is restored only where training would write the same model. A restored file is checked
by the kind's own reader before it is used; a damaged one is dropped and the model trained again.
Nothing is kept in a process that turned disk caches off (``qe.infra.io.allow_disk_caches``).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Any, TypeVar

import numpy as np

from qe.infra.errors import QEInputError
from qe.infra.io import atomic_write, cache_root, disk_caches_allowed, write_text_atomic

UNREADABLE = (OSError, ValueError, UnicodeDecodeError, QEInputError)
"""What restoring a damaged checkpoint can raise: the model is then trained again."""
T = TypeVar("T")


def checkpoint_key(
    settings: dict[str, Any], src: Sequence[str], mt: Sequence[str], labels: np.ndarray
) -> str:
    """The sha256 of what a model's training reads: ``settings`` (JSON-able: the kind's settings, the
    base model, the threads), then each training pair and its label, in order."""
    digest = hashlib.sha256(json.dumps(settings, sort_keys=True).encode("utf-8"))
    hash_pairs(digest, src, mt)
    digest.update(np.ascontiguousarray(labels, dtype="<f8").tobytes())
    return digest.hexdigest()


def hash_pairs(digest: Any, src: Sequence[str], mt: Sequence[str]) -> None:
    """Feed each pair to ``digest`` (a hashlib object): its source and translation, each ended by NUL."""
    for source, translation in zip(src, mt, strict=True):
        digest.update(source.encode("utf-8") + b"\0" + translation.encode("utf-8") + b"\0")


def _folder(kind: str) -> Path:
    return cache_root() / "checkpoints" / kind


def _stored(kind: str, key: str, suffix: str) -> tuple[Path, Path, dict[str, Any]] | None:
    """The checkpoint's model file, its record and summary; None when there is none (or caches are off)."""
    if not disk_caches_allowed():
        return None
    folder = _folder(kind)
    record, model = folder / f"{key}.json", folder / f"{key}{suffix}"
    if not record.is_file() or not model.is_file():
        return None
    try:
        summary = json.loads(record.read_text(encoding="utf-8"))
    except UNREADABLE:
        summary = None
    if not isinstance(summary, dict):
        with contextlib.suppress(OSError):
            record.unlink(missing_ok=True)
        return None
    return model, record, summary


def restore(kind: str, key: str, path: Path, check: Callable[[Path], object]) -> dict[str, Any] | None:
    """Copy the checkpoint ``key`` of ``kind`` to ``path`` and return its summary; None (``path``
    untouched) when there is none, disk caches are off, or ``check(path)`` refuses the copy."""

    def copied(model: Path, summary: dict[str, Any]) -> dict[str, Any]:
        try:
            with atomic_write(path, "wb") as out, model.open("rb") as kept:
                shutil.copyfileobj(kept, out)
            check(path)
        except UNREADABLE:
            with contextlib.suppress(OSError):
                path.unlink(missing_ok=True)
            raise
        return summary

    return read(kind, key, path.suffix, copied)


def read(kind: str, key: str, suffix: str, reader: Callable[[Path, dict[str, Any]], T]) -> T | None:
    """What ``reader`` makes of the checkpoint ``key`` of ``kind`` (its model file and summary, read in
    place); None when there is none, disk caches are off, or ``reader`` refuses it (it is then dropped)."""
    stored = _stored(kind, key, suffix)
    if stored is None:
        return None
    model, record, summary = stored
    try:
        return reader(model, summary)
    except UNREADABLE:
        with contextlib.suppress(OSError):
            record.unlink(missing_ok=True)
        return None


def _keep(
    kind: str, key: str, suffix: str, write: Callable[[IO[bytes]], object], summary: dict[str, Any]
) -> None:
    """Write a checkpoint's model file with ``write``, then its summary (nothing when disk caches are
    off; a full disk only loses the checkpoint)."""
    if not disk_caches_allowed():
        return
    folder = _folder(kind)
    with contextlib.suppress(OSError):
        with atomic_write(folder / f"{key}{suffix}", "wb") as out:
            write(out)
        write_text_atomic(folder / f"{key}.json", json.dumps(summary, sort_keys=True))


def keep(kind: str, key: str, path: Path, summary: dict[str, Any]) -> None:
    """Keep the model file at ``path`` and its ``summary`` as the checkpoint ``key`` of ``kind``."""

    def copy(out: IO[bytes]) -> None:
        with path.open("rb") as made:
            shutil.copyfileobj(made, out)

    _keep(kind, key, path.suffix, copy, summary)


def keep_bytes(kind: str, key: str, suffix: str, data: bytes, summary: dict[str, Any]) -> None:
    """Keep ``data`` (a model file's bytes, named with ``suffix``) and its ``summary`` as the
    checkpoint ``key`` of ``kind``."""
    _keep(kind, key, suffix, lambda out: out.write(data), summary)
