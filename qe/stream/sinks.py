"""Where chunk results go: a partial output beside the target, appended durably, put in place at the end.

A sink's position (bytes appended, or parquet parts written) is recorded in the run's state file
after every chunk (``qe.stream.state``); a resumed run reopens the sink at that position, dropping
whatever was written after it.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from abc import ABC, abstractmethod
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from qe.infra.errors import QEInputError
from qe.infra.io import atomic_temporary_of, atomic_write
from qe.stream.chunks import Chunk
from qe.stream.state import partial_path, refuse_foreign_sidecar

_PART_NAME = re.compile(r"^part-\d{7}\.parquet$")


def _fsync(handle: IO) -> None:
    handle.flush()
    os.fsync(handle.fileno())


class Sink(ABC):
    """Receives chunk results in order and builds the output; ``target=None`` writes to stdout.

    The position returned by ``write`` is recorded in the state file; ``open(position)`` of a
    resumed run must drop whatever was written after it.
    """

    target: Path | None = None

    @abstractmethod
    def open(self, position: int | None) -> None:
        """Start a fresh output (``None``) or continue a partial one at ``position``."""

    @abstractmethod
    def write(self, chunk: Chunk, result: Any) -> int:
        """Append one chunk's result durably; return the new position."""

    @abstractmethod
    def finalize(self) -> None:
        """Put the finished output in place (atomically)."""

    @abstractmethod
    def close(self) -> None:
        """Release open files, keeping the partial output (for a later resume)."""

    @abstractmethod
    def discard(self) -> None:
        """Remove the partial output."""

    def leftovers(self) -> list[Path]:
        """Partial files of this sink that exist on disk."""
        return []


def open_partial(path: Path, position: int | None) -> IO[bytes]:
    """Open a partial output for appending: new and empty (``None``), or cut back to ``position`` bytes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    refuse_foreign_sidecar(path, "the unfinished output")
    if position is None:
        return os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644), "wb")
    if not path.is_file() or path.stat().st_size < position:
        raise QEInputError(
            "cannot resume: the partial output is missing or shorter than recorded; "
            "run again without --resume",
            path,
        )
    handle = open(path, "r+b")  # noqa: SIM115 - as above
    handle.truncate(position)
    handle.seek(position)
    return handle


class AppendSink(Sink):
    """A sink appending bytes to one partial file (``.NAME.SUFFIX`` beside the target); its size is
    the position. ``target=None``: subclasses write to standard output instead."""

    suffix = "partial"

    def __init__(self, target: Path | None) -> None:
        self.target = None if target is None else Path(target)
        self._handle: IO[bytes] | None = None

    @property
    def partial(self) -> Path:
        """The partial file."""
        assert self.target is not None
        return partial_path(self.target, self.suffix)

    def open(self, position: int | None) -> None:
        if self.target is not None:
            self._handle = open_partial(self.partial, position)

    def append(self, data: bytes) -> int:
        """Append durably (flushed and fsync'ed); return the new size."""
        assert self._handle is not None
        self._handle.write(data)
        _fsync(self._handle)
        return self._handle.tell()

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None

    def discard(self) -> None:
        self.close()
        if self.target is not None:
            self.partial.unlink(missing_ok=True)

    def leftovers(self) -> list[Path]:
        return [self.partial] if self.target is not None and self.partial.exists() else []


class TextSink(AppendSink):
    """Text output appended chunk by chunk (``format_chunk(chunk, result) -> str``) after a header;
    renamed onto the target at the end."""

    def __init__(
        self, target: Path | None, format_chunk: Callable[[Chunk, Any], str], header: str = ""
    ) -> None:
        super().__init__(target)
        self.format_chunk = format_chunk
        self.header = header

    def open(self, position: int | None) -> None:
        super().open(position)
        if position is not None:
            return
        if self._handle is None:
            sys.stdout.write(self.header)
        else:
            self.append(self.header.encode("utf-8"))

    def write(self, chunk: Chunk, result: Any) -> int:
        text = self.format_chunk(chunk, result)
        if self._handle is None:
            sys.stdout.write(text)
            sys.stdout.flush()
            return 0
        return self.append(text.encode("utf-8"))

    def finalize(self) -> None:
        if self._handle is None:
            return
        self.close()
        assert self.target is not None
        os.replace(self.partial, self.target)


class ParquetSink(Sink):
    """A parquet table written chunk by chunk: one part file per chunk, merged at the end.

    Results are pandas DataFrames with the same columns. The parts live in ``.NAME.parts/``
    beside the target (their count is the position); ``finalize`` streams them, one at a time,
    into a single file with pyarrow's ``ParquetWriter`` (one row group per chunk).
    """

    def __init__(self, target: Path) -> None:
        self.target = Path(target)
        self.count = 0

    @property
    def parts(self) -> Path:
        return partial_path(self.target, "parts")

    def _part(self, number: int) -> Path:
        return self.parts / f"part-{number:07d}.parquet"

    def _refuse_foreign(self) -> None:
        """A parts folder holds only part files (and their temporaries): anything else is not qe's."""
        if self.parts.is_symlink() or (os.path.lexists(self.parts) and not self.parts.is_dir()):
            raise QEInputError(
                "qe keeps the unfinished output here, but this is not a folder qe wrote; "
                "move it away and run again",
                self.parts,
            )
        if self.parts.is_dir():
            foreign = [
                entry.name
                for entry in self.parts.iterdir()
                if not _PART_NAME.match(atomic_temporary_of(entry.name) or entry.name)
                or entry.is_symlink()
                or not entry.is_file()
            ]
            if foreign:
                raise QEInputError(
                    f"qe keeps the unfinished output here, but it holds {foreign[0]}, which qe did not "
                    "write; move it away and run again",
                    self.parts,
                )

    def open(self, position: int | None) -> None:
        self._refuse_foreign()
        if position is None:
            shutil.rmtree(self.parts, ignore_errors=True)
            self.parts.mkdir(parents=True)
            self.count = 0
            return
        missing = [n for n in range(position) if not self._part(n).is_file()]
        if not self.parts.is_dir() or missing:
            raise QEInputError(
                "cannot resume: parts of the partial output are missing; run again without --resume",
                self.parts,
            )
        keep = {self._part(n).name for n in range(position)}
        for extra in self.parts.iterdir():
            if extra.name not in keep:  # written after the last recorded chunk, or a stray temporary
                extra.unlink()
        self.count = position

    def write(self, chunk: Chunk, result: Any) -> int:
        with atomic_write(self._part(self.count), "wb") as handle:
            result.to_parquet(handle, index=False)
        self.count += 1
        return self.count

    def finalize(self) -> None:
        import pyarrow.parquet as pq

        with atomic_write(self.target, "wb") as handle:
            writer = None
            try:
                for number in range(self.count):
                    table = pq.read_table(self._part(number))
                    if writer is None:
                        writer = pq.ParquetWriter(handle, table.schema)
                    writer.write_table(table)
            finally:
                if writer is not None:
                    writer.close()
        shutil.rmtree(self.parts, ignore_errors=True)

    def close(self) -> None:
        pass

    def discard(self) -> None:
        shutil.rmtree(self.parts, ignore_errors=True)

    def leftovers(self) -> list[Path]:
        return [self.parts] if self.parts.exists() else []
