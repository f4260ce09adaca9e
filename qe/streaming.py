"""Stream line-aligned text files through a per-chunk computation: bounded memory, parallel, resumable.

``run_stream`` reads the inputs (e.g. ``src`` and ``mt``) chunk by chunk and sends each chunk to a
joblib worker (loky processes on this machine, or the workers of a Dask cluster). The worker runs a
``ChunkTask``: the task object is small (paths and settings) and builds its heavy state (model,
resource bundle) once per worker process, keeping it for later chunks. Results come back in input
order and go to a ``Sink`` that appends them to a partial output beside the target; at most
``2 * workers`` chunks are in flight, so memory does not grow with the input.

Resuming: after every chunk a sidecar state file (``.NAME.state.json`` beside the target) records
the chunks and pairs done, the byte offset reached in each input, the sink's position (bytes of
the partial output) and the inputs' sizes and SHA-256. ``resume=True`` checks that the inputs and
the job are unchanged, truncates whatever the sink wrote after the last recorded chunk, and goes on
from there, so no line is lost or written twice. At the end the partial output is renamed onto the
target (atomic) and the state file is removed. An input error removes the partial output too; an
interruption (Ctrl-C, a kill, a crash) keeps it for ``--resume``.

Input checks (the same as ``qe.io.read_lines``): strict UTF-8, CRLF accepted, a leading BOM
dropped, blank lines refused, errors name ``file:line``; every file must have as many lines as the
first one. The inputs are checked and hashed in one pass before any work starts, so a bad line
near the end fails at once.
"""

from __future__ import annotations

import codecs
import contextlib
import fcntl
import functools
import hashlib
import itertools
import json
import os
import re
import shutil
import sys
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any

from qe.errors import QEInputError
from qe.io import (
    BLANK_LINES,
    HIDDEN_CHAR,
    UTF8_BOM,
    atomic_temporary_of,
    atomic_write,
    is_blank,
    parse_bounded,
    require_file,
    write_text_atomic,
)
from qe.outputs import sidecar_path
from qe.schema import check_jobs, is_count

STATE_FORMAT = "qe-stream-state/1"
DEFAULT_CHUNK_SIZE = 10_000
MIN_AUTO_CHUNK = 500
CHUNKS_PER_WORKER = 8


# ====================================================================== reading


@dataclass(frozen=True)
class InputInfo:
    """One checked input file: its path, size in bytes, SHA-256 and number of lines."""

    path: str
    size: int
    sha256: str
    lines: int


def _decode(raw: bytes, path: Path, number: int) -> str:
    """One line as text: strict UTF-8, the newline (LF or CRLF) removed, blank lines refused; a BOM
    at the start of line 1 is dropped (it would otherwise stick to the first word)."""
    if number == 1:
        raw = raw.removeprefix(UTF8_BOM)
    if raw.endswith(b"\n"):
        raw = raw[:-1]
    if raw.endswith(b"\r"):
        raw = raw[:-1]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise QEInputError(f"invalid UTF-8 at byte {exc.start}", path, number) from None
    if is_blank(text):
        raise QEInputError("blank line", path, number)
    return text


def _decode_lines(raws: list[bytes], path: Path, first: int) -> list[str]:
    """:func:`_decode` for consecutive lines (``first`` is the first one's number), decoded at once;
    when something is wrong, line by line, so the error names the line."""
    try:
        joined = b"".join(raws).decode("utf-8")
    except UnicodeDecodeError:
        return [_decode(raw, path, first + k) for k, raw in enumerate(raws)]
    texts = joined.split("\n")
    if raws and raws[-1].endswith(b"\n"):
        texts.pop()  # the empty string after the last newline
    texts = [text[:-1] if text.endswith("\r") else text for text in texts]
    if first == 1 and texts and texts[0].startswith("\ufeff"):
        texts[0] = texts[0][1:]
    blank = not all(text.strip() for text in texts)  # str.strip is fast; hidden characters are rare
    if not blank and HIDDEN_CHAR.search(joined):
        blank = any(is_blank(text) for text in texts)
    if len(texts) != len(raws) or blank:
        return [_decode(raw, path, first + k) for k, raw in enumerate(raws)]
    return texts


def scan_input(path: str | Path) -> InputInfo:
    """Check a whole input file line by line (UTF-8, no blank line) and return its size, hash and lines.

    Read in blocks; a block that might hold a problem (invalid UTF-8, a line that might be blank, a
    BOM) sends the file to the line-by-line check, which names the line.
    """
    path = require_file(path)
    digest = hashlib.sha256()
    decoder = codecs.getincrementaldecoder("utf-8")()
    size = lines = 0
    last = b""
    with open(path, "rb") as handle:
        while block := handle.read(SCAN_BLOCK):
            if size == 0 and block.startswith(UTF8_BOM):
                return _scan_lines(path)
            size += len(block)
            digest.update(block)
            lines += block.count(b"\n")
            last = block[-1:]
            try:
                text = decoder.decode(block)
            except UnicodeDecodeError:
                return _scan_lines(path)
            if BLANK_LINES.search(text.removesuffix("\n")):
                return _scan_lines(path)
    if size == 0:
        raise QEInputError("file is empty", path)
    try:
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        return _scan_lines(path)
    if last != b"\n":
        lines += 1  # a last line without its newline
    return InputInfo(str(path.resolve()), size, digest.hexdigest(), lines)


SCAN_BLOCK = 1 << 20  # bytes read at a time by scan_input


def _scan_lines(path: Path) -> InputInfo:
    """:func:`scan_input` line by line: the first bad line raises, naming it."""
    digest = hashlib.sha256()
    size = lines = 0
    with open(path, "rb") as handle:
        for raw in handle:
            lines += 1
            size += len(raw)
            digest.update(raw)
            _decode(raw, path, lines)
    if size == 0:
        raise QEInputError("file is empty", path)
    return InputInfo(str(path.resolve()), size, digest.hexdigest(), lines)


def check_aligned(paths: dict[str, Path], infos: dict[str, InputInfo]) -> None:
    """Refuse inputs whose line counts differ, naming the file and the first line where one ends."""
    first = next(iter(paths))
    for role, info in infos.items():
        reference = infos[first]
        if info.lines != reference.lines:
            line = min(info.lines, reference.lines) + 1
            raise QEInputError(
                f"has {info.lines} lines but {paths[first]} has {reference.lines}", paths[role], line
            )


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
) -> Iterator[Chunk]:
    """Read line-aligned files together, ``chunk_size`` lines at a time (only one chunk in memory).

    ``start`` / ``offsets`` / ``first_index`` continue a previous read: the number of lines
    already read, the byte offset reached in each file, and the next chunk's index.
    """
    if chunk_size < 1:
        raise QEInputError(f"chunk size must be at least 1, got {chunk_size}")
    positions = {role: (offsets or {}).get(role, 0) for role in paths}
    named = {role: Path(path) for role, path in paths.items()}  # for error messages
    number, index = start, first_index
    with contextlib.ExitStack() as stack:
        handles: dict[str, IO[bytes]] = {}
        for role, path in paths.items():
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
                columns[role] = _decode_lines(raws, named[role], number + 1)
            number += size
            if size:
                yield Chunk(index, number - size, columns, dict(positions))
                index += 1
            if size < chunk_size:  # every file has ended
                if number == 0:
                    raise QEInputError("file is empty", next(iter(paths.values())))
                return


# ====================================================================== work


class ChunkTask(ABC):
    """The computation applied to every chunk, in a worker process.

    A task is pickled with every chunk, so it should hold only paths and settings; ``setup``
    builds the heavy state (model, resources) once per worker process and ``process`` gets it.
    """

    def cache_key(self) -> str:
        """Identifies the state ``setup`` builds (tasks with equal keys share it in a worker)."""
        return repr(self)

    @abstractmethod
    def setup(self) -> Any:
        """Load what every chunk needs (run once per worker process)."""

    @abstractmethod
    def process(self, state: Any, chunk: Chunk) -> Any:
        """The result for one chunk, handed to the sink in the parent process."""


_WORKER_STATE: dict[str, Any] = {}


def run_chunk(task: ChunkTask, chunk: Chunk) -> Any:
    """Worker entry point: the task's state is built on the first chunk and kept for the next ones.
    The families compute in this process: the stream's ``--jobs`` decides how many processes run."""
    from qe.workers import no_inner_parallelism

    key = task.cache_key()
    with no_inner_parallelism():
        if _WORKER_STATE.get("key") != key:
            _WORKER_STATE.clear()  # drop the previous task's state before loading a new one
            _WORKER_STATE["state"] = task.setup()
            _WORKER_STATE["key"] = key
        return task.process(_WORKER_STATE["state"], chunk)


WARM_UP_PAIRS = 8


def _one_blas_thread() -> contextlib.AbstractContextManager:
    """A context in which numpy's BLAS runs one thread (forked workers run one each too)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - threadpoolctl comes with scikit-learn
        return contextlib.nullcontext()
    return threadpool_limits(1)


def _no_progress_thread() -> None:
    """Keep tqdm from starting its monitor thread (it does so for every bar, even a disabled one):
    workers are forked only from a process that runs no other thread."""
    from tqdm.std import tqdm

    tqdm.monitor_interval = 0


def _warmed_up(task: ChunkTask, reader: Iterator[Chunk]) -> Iterator[Chunk]:
    """``reader`` with its first chunk read and the task run here on that chunk's first pairs, so what
    every chunk needs (bundle members, taggers, encoders) is loaded once in this process, before the
    workers are forked: they share it instead of each loading its own copy on its first chunk."""
    first = next(reader, None)
    if first is None:
        return iter(())
    head = {role: lines[:WARM_UP_PAIRS] for role, lines in first.lines.items()}
    run_chunk(task, Chunk(first.index, first.start, head, first.offsets))
    return itertools.chain([first], reader)


def preload_state(task: ChunkTask, state: Any) -> None:
    """Hand this process the state ``task.setup()`` would build (a command that has already loaded
    the model for its checks): chunks run here, and workers forked from here, do not load it again."""
    _WORKER_STATE.clear()
    _WORKER_STATE["state"] = state
    _WORKER_STATE["key"] = task.cache_key()


def clear_worker_state() -> None:
    """Forget the task state kept in this process (the parent runs tasks itself with one job)."""
    _WORKER_STATE.clear()


def clear_text_memos(*roots: Any, depth: int = 4) -> None:
    """Empty the per-sentence tokenization memos of ``qe.text.TextProcessor`` objects under ``roots``.

    Feature families and resource bundles memoise tokenized sentences (up to 200,000 per
    processor); a streamed run clears them after every chunk so memory does not depend on how
    many distinct sentences went through a worker. Small containers and objects are searched,
    ``depth`` levels down.
    """
    from qe.text import TextProcessor

    seen: set[int] = set()

    def visit(obj: Any, level: int) -> None:
        if level > depth or id(obj) in seen:
            return
        seen.add(id(obj))
        if isinstance(obj, TextProcessor):
            memo = getattr(obj, "_memo", None)
            if isinstance(memo, dict):
                memo.clear()
            return
        if isinstance(obj, dict):
            values = list(obj.values()) if len(obj) <= 64 else []
        elif isinstance(obj, list | tuple):
            values = list(obj) if len(obj) <= 64 else []
        elif hasattr(obj, "__dict__") and not isinstance(obj, type):
            values = list(vars(obj).values())
        else:
            return
        for value in values:
            visit(value, level + 1)

    for root in roots:
        visit(root, 0)


# ====================================================================== writing

_PART_NAME = re.compile(r"^part-\d{7}\.parquet$")


def partial_path(target: Path, suffix: str = "partial") -> Path:
    """Where the unfinished output of ``target`` is kept (hidden, beside it)."""
    return sidecar_path(target, suffix)


def state_path(target: Path) -> Path:
    """The sidecar state file of a streamed run writing ``target``."""
    return sidecar_path(target, "state.json")


def _refuse_foreign_sidecar(path: Path, what: str) -> None:
    """Refuse a sidecar path that is a link or not a regular file (qe never makes one), so a
    crafted link or a user's folder there is never written through or deleted."""
    if path.is_symlink() or (os.path.lexists(path) and not path.is_file()):
        raise QEInputError(
            f"qe keeps {what} here, but this is not a file qe wrote; move it away and run again", path
        )


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
    _refuse_foreign_sidecar(path, "the unfinished output")
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


# ====================================================================== state and locking


def _stale_temporaries(target: Path) -> list[Path]:
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
def _exclusive(target: Path | None) -> Iterator[None]:
    """Hold a lock file beside the target, so two runs cannot write the same output at once."""
    if target is None:
        yield
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    lock = partial_path(target, "lock")
    _refuse_foreign_sidecar(lock, "its lock file")
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


def _read_state(target: Path) -> dict[str, Any] | None:
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


def _check_state_values(state: dict[str, Any], target: Path) -> None:
    """Refuse a state file whose counts and offsets are not what qe writes (a damaged or edited file)."""
    offsets = state.get("offsets")
    fine = (
        all(is_count(state.get(key)) for key in ("pairs_done", "chunks_done", "position"))
        and isinstance(offsets, dict)
        and all(isinstance(role, str) and is_count(offset) for role, offset in offsets.items())
    )
    if not fine:
        raise QEInputError(
            "cannot resume: the state file's counts are damaged; run again without --resume",
            state_path(target),
        )


def _check_resumable(state: dict[str, Any], job: dict[str, Any], infos: dict[str, InputInfo], target: Path):
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


# ====================================================================== the engine


@dataclass
class StreamSummary:
    """What a streamed run did: pairs in the input, pairs and chunks computed now, where it resumed."""

    pairs: int
    computed_pairs: int
    computed_chunks: int
    resumed_at: int
    seconds: float


def _note(message: str) -> None:
    print(f"qe: {message}", file=sys.stderr)


def auto_chunk_size(total: int, width: int) -> int:
    """The chunk size when none is given: ``DEFAULT_CHUNK_SIZE`` for one worker; for more, about
    ``CHUNKS_PER_WORKER`` chunks each (so that they finish together even when sentence lengths
    vary along the input), from ``MIN_AUTO_CHUNK`` to ``DEFAULT_CHUNK_SIZE`` pairs."""
    if width <= 1:
        return DEFAULT_CHUNK_SIZE
    return max(MIN_AUTO_CHUNK, min(DEFAULT_CHUNK_SIZE, -(-total // (CHUNKS_PER_WORKER * width))))


def run_stream(
    inputs: dict[str, str | Path],
    task: ChunkTask,
    sink: Sink,
    *,
    job: dict[str, Any] | None = None,
    chunk_size: int | None = None,
    n_jobs: int = 1,
    backend: str = "loky",
    scheduler: str | None = None,
    resume: bool = False,
    progress: bool = True,
    check_first: Callable[[Chunk], None] | None = None,
    desc: str = "pairs",
) -> StreamSummary:
    """Run ``task`` over the line-aligned ``inputs`` chunk by chunk and write the results to ``sink``.

    ``inputs`` maps a role (the first is the reference for line counts, e.g. ``src``) to a file.
    ``job`` describes everything else the output depends on (model hash, options); a resumed run
    must have the same. ``n_jobs`` worker processes (``backend="loky"``: forked from this process
    on Linux, see ``qe.workers``, else loky's), or the workers of a Dask cluster
    (``backend="dask"``: ``scheduler`` address, or a local cluster of ``n_jobs`` processes).
    ``chunk_size`` None picks one from the input size and the workers (``auto_chunk_size``); the
    output does not depend on it, nor on the backend. ``check_first`` is called on the first chunk
    read (e.g. a language check) before any work is sent out.
    """
    from joblib import effective_n_jobs
    from tqdm.auto import tqdm

    from qe.selection.backend import parallel_backend_context
    from qe.workers import can_fork, exit_with_parent_everywhere, forked_workers

    exit_with_parent_everywhere()
    _no_progress_thread()
    started = time.perf_counter()
    if chunk_size is not None and chunk_size < 1:
        raise QEInputError(f"--chunk-size must be at least 1, got {chunk_size}")
    check_jobs(n_jobs)
    paths = {role: Path(path) for role, path in inputs.items()}
    target = sink.target
    if resume and target is None:
        raise QEInputError("--resume needs --out (a run writing to standard output cannot resume)")
    job = dict(job or {})
    infos = {role: scan_input(path) for role, path in paths.items()}
    check_aligned(paths, infos)
    total = infos[next(iter(paths))].lines

    with _exclusive(target):
        state = _read_state(target) if target is not None else None
        done, offsets, chunks_done, position = 0, None, 0, None
        if target is not None:
            for stale in _stale_temporaries(target):
                stale.unlink(missing_ok=True)
        if state is not None and resume:
            _check_resumable(state, job, infos, target)
            _check_state_values(state, target)
            done, offsets = int(state["pairs_done"]), dict(state["offsets"])
            chunks_done, position = int(state["chunks_done"]), int(state["position"])
            if done:
                _note(f"resuming at pair {done:,} of {total:,} ({chunks_done} chunks done)")
        elif state is not None:
            _note(f"discarding the unfinished run writing {target} (pass --resume to continue it)")
            sink.discard()
            state_path(target).unlink(missing_ok=True)
        elif resume:
            _note(f"nothing to resume for {target}; starting from the beginning")
        sink.open(position)
        size = chunk_size

        def save(chunk: Chunk, new_position: int) -> None:
            record = {
                "format": STATE_FORMAT,
                "job": job,
                "inputs": {role: asdict(info) for role, info in infos.items()},
                "chunk_size": size,
                "chunks_done": chunk.index + 1,
                "pairs_done": chunk.start + len(chunk),
                "pairs_total": total,
                "offsets": chunk.offsets,
                "position": new_position,
            }
            write_text_atomic(state_path(target), json.dumps(record, indent=1) + "\n")

        computed = computed_chunks = 0
        bars: list[Any] = []  # made after the workers are forked: a progress bar starts a thread
        try:
            with contextlib.ExitStack() as stack:
                client = stack.enter_context(parallel_backend_context(backend, scheduler, n_jobs))
                if client is not None:
                    width = max(1, sum(client.nthreads().values()))
                else:
                    width = max(1, effective_n_jobs(n_jobs))
                forked = None
                if client is None and width == 1:
                    # One job, one core: BLAS threads mostly spin beside tagging's small products (ibm1
                    # on 20,000 pairs: 47 CPU s for 28 s with two threads, 32 CPU s for 32 s with one).
                    stack.enter_context(_one_blas_thread())
                size = chunk_size if chunk_size is not None else auto_chunk_size(total, width)
                reader = _checked(
                    iter_chunks(paths, size, start=done, offsets=offsets, first_index=chunks_done),
                    check_first,
                )
                if client is None and width > 1 and can_fork():
                    reader = _warmed_up(task, reader)
                    if can_fork():  # the warm-up started no thread
                        forked = stack.enter_context(forked_workers(width))
                bars.append(
                    tqdm(
                        total=total,
                        initial=done,
                        desc=desc,
                        unit="pair",
                        unit_scale=True,
                        disable=not progress,
                    )
                )
                if forked is not None:
                    results = forked(functools.partial(run_chunk, task), reader, 2 * width)
                else:
                    results = _joblib_results(task, reader, width)
                for chunk, result in results:
                    new_position = sink.write(chunk, result)
                    if target is not None:
                        save(chunk, new_position)
                    computed += len(chunk)
                    computed_chunks += 1
                    bars[0].update(len(chunk))
            _close(bars)
            sink.finalize()
        except QEInputError:
            _close(bars)
            sink.discard()
            if target is not None:
                state_path(target).unlink(missing_ok=True)
            raise
        except OSError as exc:  # e.g. the disk is full: one line; the chunks recorded so far are kept
            _close(bars)
            resumable = target is not None and state_path(target).exists()
            with contextlib.suppress(OSError):
                sink.close() if resumable else sink.discard()
            if isinstance(exc, BrokenPipeError):  # the reader of standard output went away
                raise
            hint = f"; rerun with --resume to continue writing {target}" if resumable else ""
            raise QEInputError(f"{exc.strerror or exc}{hint}", exc.filename or target) from None
        except BaseException:
            _close(bars)
            sink.close()
            if target is not None and state_path(target).exists():
                _note(f"interrupted; rerun with --resume to continue writing {target}")
            raise
        finally:
            clear_worker_state()
        if target is not None:
            state_path(target).unlink(missing_ok=True)
            for stale in _stale_temporaries(target):
                stale.unlink(missing_ok=True)
    return StreamSummary(total, computed, computed_chunks, done, time.perf_counter() - started)


def _close(bars: list[Any]) -> None:
    for bar in bars:
        bar.close()


def _checked(reader: Iterator[Chunk], check_first: Callable[[Chunk], None] | None) -> Iterator[Chunk]:
    """The chunks, the first one passed to ``check_first`` before it is handed on."""
    for chunk in reader:
        if check_first is not None:
            check_first(chunk)
            check_first = None
        yield chunk


def _joblib_results(task: ChunkTask, reader: Iterator[Chunk], width: int) -> Iterator[tuple[Chunk, Any]]:
    """Chunk results through joblib (this process with one job, loky workers or a Dask cluster), in
    waves of ``2 * width`` chunks."""
    from joblib import Parallel, delayed

    with Parallel(return_as="generator") as parallel:
        for wave in _waves(reader, 2 * width):
            yield from zip(wave, parallel(delayed(run_chunk)(task, chunk) for chunk in wave), strict=True)


def _waves(reader: Iterator[Chunk], size: int) -> Iterator[list[Chunk]]:
    """Group chunks into waves of ``size`` (the chunks in flight at once)."""
    wave: list[Chunk] = []
    for chunk in reader:
        wave.append(chunk)
        if len(wave) == size:
            yield wave
            wave = []
    if wave:
        yield wave
