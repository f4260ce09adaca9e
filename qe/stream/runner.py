"""``run_stream``: line-aligned inputs through a chunk task into a sink, in parallel, resumable.

The inputs are scanned whole first (``qe.stream.inputs``), then read chunk by chunk
(``qe.stream.chunks``) from the bytes the scan kept (an input beyond ``MEMORY_BUDGET`` from its file
again); each chunk goes to a worker that runs the task (``qe.stream.tasks``), and the results come
back in input order to the sink (``qe.stream.sinks``), the run's state being recorded after every
chunk (``qe.stream.state``).
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from qe.config.rules import Int, check_jobs
from qe.infra.errors import QEInputError
from qe.stream import inputs as input_files
from qe.stream import tasks
from qe.stream.chunks import Chunk, auto_chunk_size, iter_chunks
from qe.stream.sinks import Sink
from qe.stream.state import (
    check_resumable,
    check_state_values,
    exclusive,
    read_state,
    stale_temporaries,
    state_path,
    write_state,
)


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


def _warmed_up(task: tasks.ChunkTask, reader: Iterator[Chunk]) -> Iterator[Chunk]:
    """``reader`` with its first chunk read and the task run here on that chunk's first pairs, so what
    every chunk needs (bundle members, taggers, encoders) is loaded once in this process, before the
    workers are forked: they share it instead of each loading its own copy on its first chunk."""
    first = next(reader, None)
    if first is None:
        return iter(())
    head = {role: lines[:WARM_UP_PAIRS] for role, lines in first.lines.items()}
    tasks.run_chunk(task, Chunk(first.index, first.start, head, first.offsets))
    return itertools.chain([first], reader)


@dataclass(frozen=True)
class StreamOptions:
    """How a streamed run computes: chunk size (None: from the input and the workers), workers and
    backend, progress, the checks of the whole input and of its first chunk, the progress label."""

    chunk_size: int | None = None
    n_jobs: int = 1
    backend: str = "loky"
    scheduler: str | None = None
    progress: bool = True
    check_first: Callable[[Chunk], None] | None = None
    check_count: Callable[[int], None] | None = None
    desc: str = "pairs"


@dataclass(frozen=True)
class ScannedInputs:
    """The inputs checked whole: their files, each one's facts, the bytes kept for the chunks, pairs."""

    paths: dict[str, Path]
    infos: dict[str, Any]
    kept: dict[str, bytes]
    total: int


@dataclass(frozen=True)
class StartPoint:
    """Where a run starts: pairs and chunks already written, the input offsets and the sink's position."""

    done: int = 0
    offsets: dict[str, int] | None = None
    chunks_done: int = 0
    position: int | None = None


def run_stream(
    inputs: dict[str, str | Path],
    task: tasks.ChunkTask,
    sink: Sink,
    *,
    job: dict[str, Any] | None = None,
    resume: bool = False,
    **options: Any,
) -> StreamSummary:
    """Run ``task`` over the line-aligned ``inputs`` chunk by chunk and write the results to ``sink``.

    ``inputs`` maps a role (the first is the reference for line counts, e.g. ``src``) to a file.
    ``job`` describes everything else the output depends on (model hash, options); a resumed run
    must have the same. ``options`` are :class:`StreamOptions`' fields: ``n_jobs`` worker processes
    (``backend="loky"``: forked from this process on Linux, see ``qe.infra.workers``, else loky's), or
    the workers of a Dask cluster (``backend="dask"``: ``scheduler`` address, or a local cluster of
    ``n_jobs`` processes). ``chunk_size`` None picks one from the input size and the workers
    (``auto_chunk_size``); the output does not depend on it, nor on the backend. ``check_count`` is
    called with the number of pairs once the inputs are scanned, before any chunk is read (a check of
    the whole input, e.g. that a decoder log covers exactly its sentences); ``check_first`` on the first
    chunk read (e.g. a language check) before any work is sent out.
    """
    from qe.infra.workers import exit_with_parent_everywhere

    exit_with_parent_everywhere()
    _no_progress_thread()
    started = time.perf_counter()
    settings = StreamOptions(**options)
    if settings.chunk_size is not None:
        Int(1).check(settings.chunk_size, "--chunk-size", None)
    check_jobs(settings.n_jobs)
    target = sink.target
    if resume and target is None:
        raise QEInputError("--resume needs --out (a run writing to standard output cannot resume)")
    job = dict(job or {})
    scanned = _scan(inputs)
    if settings.check_count is not None:
        settings.check_count(scanned.total)
    with exclusive(target):
        start = _start_point(target, sink, job, scanned, resume)
        sink.open(start.position)
        computed, chunks = _write_all(task, sink, job, scanned, start, settings)
        if target is not None:
            state_path(target).unlink(missing_ok=True)
            for stale in stale_temporaries(target):
                stale.unlink(missing_ok=True)
    elapsed = time.perf_counter() - started
    return StreamSummary(scanned.total, computed, chunks, start.done, elapsed)


def _scan(inputs: dict[str, str | Path]) -> ScannedInputs:
    """Each input checked whole and read once: the chunks come from the checked bytes, within budget."""
    paths = {role: Path(path) for role, path in inputs.items()}
    infos, kept = {}, {}
    for role, path in paths.items():
        budget = input_files.MEMORY_BUDGET - sum(map(len, kept.values()))
        infos[role], data = input_files.read_input(path, keep=budget)
        if data is not None:
            kept[role] = data
    input_files.check_aligned(paths, infos)
    return ScannedInputs(paths, infos, kept, infos[next(iter(paths))].lines)


def _start_point(
    target: Path | None, sink: Sink, job: dict[str, Any], scanned: ScannedInputs, resume: bool
) -> StartPoint:
    """Where to start writing ``target``: after what a resumed run recorded, else from the beginning
    (an unfinished run not resumed is discarded; stale temporaries go either way)."""
    if target is None:
        return StartPoint()
    state = read_state(target)
    for stale in stale_temporaries(target):
        stale.unlink(missing_ok=True)
    if state is not None and resume:
        check_state_values(state, target)
        check_resumable(state, job, scanned.infos, target)
        start = StartPoint(
            int(state["pairs_done"]),
            dict(state["offsets"]),
            int(state["chunks_done"]),
            int(state["position"]),
        )
        if start.done:
            _note(f"resuming at pair {start.done:,} of {scanned.total:,} ({start.chunks_done} chunks done)")
        return start
    if state is not None:
        _note(f"discarding the unfinished run writing {target} (pass --resume to continue it)")
        sink.discard()
        state_path(target).unlink(missing_ok=True)
    elif resume:
        _note(f"nothing to resume for {target}; starting from the beginning")
    return StartPoint()


def _write_all(
    task: tasks.ChunkTask,
    sink: Sink,
    job: dict[str, Any],
    scanned: ScannedInputs,
    start: StartPoint,
    settings: StreamOptions,
) -> tuple[int, int]:
    """Compute every chunk from ``start`` on and write it to ``sink``, recording the state after each;
    ``(pairs, chunks)`` computed. On a failure the sink is discarded (bad input), kept for ``--resume``
    (a full disk, an interruption) or closed, and the failure raised in one line."""
    target = sink.target
    bars: list[Any] = []  # made after the workers are forked: a progress bar starts a thread
    computed = computed_chunks = 0
    try:
        with contextlib.ExitStack() as stack:
            results, size = _results(task, scanned, start, settings, stack, bars)
            for chunk, result in results:
                new_position = sink.write(chunk, result)
                if target is not None:
                    write_state(target, job, scanned.infos, size, chunk, new_position)
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
        tasks.clear_worker_state()
    return computed, computed_chunks


def _results(
    task: tasks.ChunkTask,
    scanned: ScannedInputs,
    start: StartPoint,
    settings: StreamOptions,
    stack: contextlib.ExitStack,
    bars: list[Any],
) -> tuple[Iterator[tuple[Chunk, Any]], int]:
    """The chunks' results in input order, computed on the backend (entered on ``stack``), and the chunk
    size; the progress bar is appended to ``bars`` once the workers are forked."""
    from joblib import effective_n_jobs
    from tqdm.auto import tqdm

    from qe.infra.parallel import parallel_backend_context
    from qe.infra.workers import can_fork, forked_workers

    client = stack.enter_context(
        parallel_backend_context(settings.backend, settings.scheduler, settings.n_jobs)
    )
    width = max(
        1, sum(client.nthreads().values()) if client is not None else effective_n_jobs(settings.n_jobs)
    )
    if client is None and width == 1:
        # One job, one core: BLAS threads mostly spin beside tagging's small products (ibm1 on 20,000
        # pairs: 47 CPU s for 28 s with two threads, 32 CPU s for 32 s with one).
        stack.enter_context(_one_blas_thread())
    size = settings.chunk_size if settings.chunk_size is not None else auto_chunk_size(scanned.total, width)
    chunks = iter_chunks(
        scanned.paths,
        size,
        start=start.done,
        offsets=start.offsets,
        first_index=start.chunks_done,
        kept=scanned.kept,
    )
    reader = _checked(chunks, settings.check_first)
    forked = None
    if client is None and width > 1 and can_fork():
        reader = _warmed_up(task, reader)
        if can_fork():  # the warm-up started no thread
            forked = stack.enter_context(forked_workers(width))
    progress = tqdm(
        total=scanned.total,
        initial=start.done,
        desc=settings.desc,
        unit="pair",
        unit_scale=True,
        disable=not settings.progress,
    )
    bars.append(progress)
    if forked is not None:
        return forked(functools.partial(tasks.run_chunk, task), reader, 2 * width), size
    return _joblib_results(task, reader, width), size


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


def _joblib_results(
    task: tasks.ChunkTask, reader: Iterator[Chunk], width: int
) -> Iterator[tuple[Chunk, Any]]:
    """Chunk results through joblib (this process with one job, loky workers or a Dask cluster), in
    waves of ``2 * width`` chunks."""
    from joblib import Parallel, delayed

    with Parallel(return_as="generator") as parallel:
        for wave in _waves(reader, 2 * width):
            yield from zip(
                wave, parallel(delayed(tasks.run_chunk)(task, chunk) for chunk in wave), strict=True
            )


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
