"""On-disk sentence vector cache: one sqlite file per model, rows keyed by sha256(model id + text).

Every write is one sqlite transaction, so a crash or a concurrent writer never leaves half a batch,
and several processes may share the file (they wait up to ``timeout`` seconds for the lock). A
file sqlite reports as corrupt (or that is not a vector cache at all) is deleted and rebuilt with
a warning; a cache that cannot be opened or locked is skipped with a warning. A cache problem
never stops the encoding: the vectors are then computed again.

Default directory: ``$QE_CACHE_DIR/embeddings``, else ``~/.cache/qe/embeddings`` (beside the
feature cache of ``qe.features.cache``).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from qe.infra.io import cache_root

log = logging.getLogger(__name__)

CACHE_VERSION = 1
"""Stored as sqlite's ``user_version``; a file with another version is rebuilt."""

_CORRUPT = {sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB}
_BATCH = 500  # keys per SELECT (sqlite's variable limit is at least 999)


def default_cache_dir() -> Path:
    """``$QE_CACHE_DIR/embeddings`` or ``~/.cache/qe/embeddings``."""
    return cache_root() / "embeddings"


def sentence_key(model: str, text: str) -> bytes:
    """The 32-byte sha256 of the model id and the exact text."""
    return hashlib.sha256(f"{model}\x00{text}".encode()).digest()


class _NotACache(sqlite3.DatabaseError):
    """A readable sqlite file that is not a vector cache of this version."""

    sqlite_errorcode = sqlite3.SQLITE_NOTADB


class VectorCache:
    """Float32 vectors of ``dim`` values stored in the sqlite file ``path``."""

    def __init__(self, path: str | Path, dim: int, *, timeout: float = 60.0):
        self.path = Path(path)
        self.dim = dim
        self.timeout = timeout

    @contextlib.contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        connection = sqlite3.connect(self.path, timeout=self.timeout)
        try:
            with connection:  # one transaction: committed on success, rolled back on error
                version = connection.execute("PRAGMA user_version").fetchone()[0]
                if version == 0:
                    connection.execute(
                        "CREATE TABLE IF NOT EXISTS vectors (key BLOB PRIMARY KEY, vector BLOB NOT NULL)"
                    )
                    connection.execute(f"PRAGMA user_version = {CACHE_VERSION}")
                elif version != CACHE_VERSION:
                    raise _NotACache(f"cache version {version}, expected {CACHE_VERSION}")
                yield connection
        finally:
            connection.close()

    def _run(self, action, default):
        """``action(connection)``; a corrupt file is rebuilt once, other failures give ``default``."""
        for attempt in range(2):
            try:
                with self._connect() as connection:
                    return action(connection)
            except sqlite3.DatabaseError as exc:
                if getattr(exc, "sqlite_errorcode", None) in _CORRUPT and attempt == 0:
                    log.warning("rebuilding the corrupt vector cache %s (%s)", self.path, exc)
                    self._remove()
                    continue
                log.warning("not using the vector cache %s (%s)", self.path, exc)
            except OSError as exc:
                log.warning("not using the vector cache %s (%s)", self.path, exc)
            return default
        return default

    def _remove(self) -> None:
        for suffix in ("", "-journal", "-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(f"{self.path}{suffix}")

    def get(self, keys: Sequence[bytes]) -> dict[bytes, np.ndarray]:
        """The stored vectors of those ``keys`` that are in the cache."""
        if not keys:
            return {}
        size = 4 * self.dim

        def read(connection: sqlite3.Connection) -> dict[bytes, np.ndarray]:
            found: dict[bytes, np.ndarray] = {}
            for start in range(0, len(keys), _BATCH):
                part = keys[start : start + _BATCH]
                query = f"SELECT key, vector FROM vectors WHERE key IN ({','.join('?' * len(part))})"
                for key, blob in connection.execute(query, part):
                    if isinstance(blob, bytes) and len(blob) == size:
                        found[key] = np.frombuffer(blob, dtype="<f4")
            return found

        return self._run(read, {})

    def put(self, items: dict[bytes, np.ndarray]) -> None:
        """Store (or replace) vectors, all in one transaction."""
        if not items:
            return
        rows = [(key, np.asarray(vector, dtype="<f4").tobytes()) for key, vector in items.items()]

        def write(connection: sqlite3.Connection) -> None:
            connection.executemany("INSERT OR REPLACE INTO vectors (key, vector) VALUES (?, ?)", rows)

        self._run(write, None)
