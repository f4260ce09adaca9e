"""Line-aligned files read together, a chunk of lines at a time: only one chunk of decoded lines is ever in
memory (the files' bytes too when the whole-file scan kept them, see ``qe.stream.inputs``)."""

from __future__ import annotations

import contextlib
import io
import itertools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from qe.infra.errors import QEInputError
from qe.infra.io import require_file
from qe.stream.inputs import decode_lines

DEFAULT_CHUNK_SIZE = 10_000
MIN_AUTO_CHUNK = 500
CHUNKS_PER_WORKER = 8


@dataclass
class Chunk:
    """A run of aligned lines: ``lines[role][k]`` is line ``start + k + 1`` (1-based) of each input.

    ``offsets`` are the byte offsets just after the chunk in each input (where a resumed run
    continues reading).
    """

    index: int
    start: int
    lines: dict[str, list[str]]
    offsets: dict[str, int] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(next(iter(self.lines.values())))

    @property
    def ids(self) -> list[str]:
        """The pairs' ids: their 0-based line indices in the whole input, as strings."""
        return [str(self.start + k) for k in range(len(self))]


def iter_chunks(
    paths: dict[str, Path],
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    *,
    start: int = 0,
    offsets: dict[str, int] | None = None,
    first_index: int = 0,
    kept: Mapping[str, bytes] | None = None,
) -> Iterator[Chunk]:
    """Read line-aligned files together, ``chunk_size`` lines at a time (only one chunk in memory).

    ``start`` / ``offsets`` / ``first_index`` continue a previous read: the number of lines
    already read, the byte offset reached in each file, and the next chunk's index. ``kept``: the
    bytes of some of the files, already read (``qe.stream.inputs.read_input``), read from memory
    instead of opening the file again.
    """
    if chunk_size < 1:
        raise QEInputError(f"chunk size must be at least 1, got {chunk_size}")
    positions = {role: (offsets or {}).get(role, 0) for role in paths}
    named = {role: Path(path) for role, path in paths.items()}  # for error messages
    number, index = start, first_index
    with contextlib.ExitStack() as stack:
        handles: dict[str, IO[bytes]] = {}
        for role, path in paths.items():
            if kept is not None and role in kept:
                handles[role] = io.BytesIO(kept[role])
            else:
                require_file(path)
                handles[role] = stack.enter_context(open(path, "rb"))
            handles[role].seek(positions[role])
        while True:
            blocks = {role: list(itertools.islice(handle, chunk_size)) for role, handle in handles.items()}
            counts = {len(raws) for raws in blocks.values()}
            if len(counts) > 1:
                shortest = min(blocks, key=lambda role: len(blocks[role]))
                longer = max(blocks, key=lambda role: len(blocks[role]))
                line = number + len(blocks[shortest])
                raise QEInputError(
                    f"ends after line {line} but {paths[longer]} goes on (files must be line-aligned)",
                    paths[shortest],
                    line + 1,
                )
            (size,) = counts  # lines read from every file
            columns: dict[str, list[str]] = {}
            for role, raws in blocks.items():
                positions[role] += sum(map(len, raws))
                columns[role] = decode_lines(raws, named[role], number + 1)
            number += size
            if size:
                yield Chunk(index, number - size, columns, dict(positions))
                index += 1
            if size < chunk_size:  # every file has ended
                if number == 0:
                    raise QEInputError("file is empty", next(iter(paths.values())))
                return


def auto_chunk_size(total: int, width: int) -> int:
    """The chunk size when none is given: ``DEFAULT_CHUNK_SIZE`` for one worker; for more, about
    ``CHUNKS_PER_WORKER`` chunks each (so that they finish together even when sentence lengths
    vary along the input), from ``MIN_AUTO_CHUNK`` to ``DEFAULT_CHUNK_SIZE`` pairs."""
    if width <= 1:
        return DEFAULT_CHUNK_SIZE
    return max(MIN_AUTO_CHUNK, min(DEFAULT_CHUNK_SIZE, -(-total // (CHUNKS_PER_WORKER * width))))
