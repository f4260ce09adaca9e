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


def run_stream(
    inputs: dict[str, str | Path],
    task: tasks.ChunkTask,
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
    check_count: Callable[[int], None] | None = None,
    desc: str = "pairs",
) -> StreamSummary:
    """Run ``task`` over the line-aligned ``inputs`` chunk by chunk and write the results to ``sink``.

    ``inputs`` maps a role (the first is the reference for line counts, e.g. ``src``) to a file.
    ``job`` describes everything else the output depends on (model hash, options); a resumed run
    must have the same. ``n_jobs`` worker processes (``backend="loky"``: forked from this process
    on Linux, see ``qe.infra.workers``, else loky's), or the workers of a Dask cluster
    (``backend="dask"``: ``scheduler`` address, or a local cluster of ``n_jobs`` processes).
    ``chunk_size`` None picks one from the input size and the workers (``auto_chunk_size``); the
    output does not depend on it, nor on the backend. ``check_count`` is called with the number of
    pairs once the inputs are scanned, before any chunk is read (a check of the whole input, e.g. that a
    decoder log covers exactly its sentences); ``check_first`` on the first chunk read (e.g. a language
    check) before any work is sent out.
    """
    from joblib import effective_n_jobs
    from tqdm.auto import tqdm

    from qe.infra.parallel import parallel_backend_context
    from qe.infra.workers import can_fork, exit_with_parent_everywhere, forked_workers

    exit_with_parent_everywhere()
    _no_progress_thread()
    started = time.perf_counter()
    if chunk_size is not None:
        Int(1).check(chunk_size, "--chunk-size", None)
    check_jobs(n_jobs)
    paths = {role: Path(path) for role, path in inputs.items()}
    target = sink.target
    if resume and target is None:
        raise QEInputError("--resume needs --out (a run writing to standard output cannot resume)")
    job = dict(job or {})
    infos, kept = {}, {}
    for role, path in paths.items():  # read once: the chunks come from the checked bytes, within budget
        budget = input_files.MEMORY_BUDGET - sum(map(len, kept.values()))
        infos[role], data = input_files.read_input(path, keep=budget)
        if data is not None:
            kept[role] = data
    input_files.check_aligned(paths, infos)
    total = infos[next(iter(paths))].lines
    if check_count is not None:
        check_count(total)

    with exclusive(target):
        state = read_state(target) if target is not None else None
        done, offsets, chunks_done, position = 0, None, 0, None
        if target is not None:
            for stale in stale_temporaries(target):
                stale.unlink(missing_ok=True)
        if state is not None and resume:
            check_state_values(state, target)
            check_resumable(state, job, infos, target)
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
                    iter_chunks(paths, size, start=done, offsets=offsets, first_index=chunks_done, kept=kept),
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
                    results = forked(functools.partial(tasks.run_chunk, task), reader, 2 * width)
                else:
                    results = _joblib_results(task, reader, width)
                for chunk, result in results:
                    new_position = sink.write(chunk, result)
                    if target is not None:
                        write_state(target, job, infos, size, chunk, new_position)
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
        if target is not None:
            state_path(target).unlink(missing_ok=True)
            for stale in stale_temporaries(target):
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
