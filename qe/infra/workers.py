"""Worker processes that end when the qe process that started them dies, even by SIGKILL.

joblib's loky workers outlive a killed parent (they wait for work for minutes, holding their
memory). Every loky worker started after :func:`exit_with_parent_everywhere` runs
:func:`exit_with_parent` first: a daemon thread that ends the worker as soon as its parent is
gone (its parent process id changes when it is re-parented). A thread polling ``os.getppid`` is
used rather than ``PR_SET_PDEATHSIG``, which fires when the *thread* that started the worker
exits, and loky starts workers from whichever thread submits or manages work. They may also grow
by ``WORKER_GROWTH_BYTES`` (qe's per-process caches) before loky takes the growth for a leak.

:func:`forked_workers` maps a function over items on processes forked from this one (Linux, and
only while this process runs no other thread): they start in milliseconds with every module already
imported, where a loky worker spends seconds importing numpy, pandas and qe before its first item.
While a streamed run computes a chunk (:func:`no_inner_parallelism`, in a worker or in this
process) the families start no processes of their own: ``--jobs`` alone decides how many run.
"""

from __future__ import annotations

import contextlib
import gc
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar

from joblib import register_parallel_backend
from joblib._parallel_backends import LokyBackend

CHECK_SECONDS = 0.5
_INNER_PARALLELISM = True
T = TypeVar("T")


def exit_with_parent(parent_pid: int, every: float = CHECK_SECONDS) -> None:
    """In a worker: end this process (exit code 1) once ``parent_pid`` is no longer its parent."""

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(every)
        os._exit(1)

    threading.Thread(target=watch, name="qe-exit-with-parent", daemon=True).start()


WORKER_GROWTH_BYTES = 2 << 30
"""How much a loky worker may grow past its size after its first task before loky takes it for a leak.

loky's own allowance is 300 MB: past it, the worker is stopped after its task and a new one started,
with "A worker stopped while some jobs were given to the executor" on the terminal. A qe worker
grows by design as it meets bundle members it has not loaded yet (the full tables after the
cross-fitted ones, a second language model, a spaCy pipeline: ``qe.bundle`` keeps them per
process), and a restarted worker loads them all again. Growth past this is still a leak to loky."""


def _start_loky_worker(parent_pid: int) -> None:
    """In a loky worker: end with the parent, and allow the growth of qe's per-process caches."""
    exit_with_parent(parent_pid)
    from joblib.externals.loky import process_executor

    if hasattr(process_executor, "_MAX_MEMORY_LEAK_SIZE"):  # loky's leak check (psutil), private
        process_executor._MAX_MEMORY_LEAK_SIZE = max(
            process_executor._MAX_MEMORY_LEAK_SIZE, WORKER_GROWTH_BYTES
        )


class ParentBoundLokyBackend(LokyBackend):
    """joblib's loky backend whose workers run :func:`exit_with_parent` (bound to this process) and
    may grow by ``WORKER_GROWTH_BYTES`` before loky restarts them."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("initializer", _start_loky_worker)
        kwargs.setdefault("initargs", (os.getpid(),))
        super().__init__(*args, **kwargs)


def exit_with_parent_everywhere() -> None:
    """Make joblib's ``loky`` backend (the default, also used by scikit-learn) start parent-bound
    workers in this process: every joblib worker qe starts, however deep in a library, ends with it."""
    register_parallel_backend("loky", ParentBoundLokyBackend)


# ====================================================================== BLAS threads

BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS")
_blas_controller: Any = None


def one_blas_thread_for_good() -> None:
    """This process runs one BLAS / OpenMP thread from now on: the libraries already loaded are told
    so, and the environment tells those loaded later (a library reads it when it loads; threadpoolctl
    reaches only the loaded ones, so limiting before numpy is imported does nothing)."""
    for name in BLAS_THREAD_VARIABLES:
        os.environ[name] = "1"
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - threadpoolctl comes with scikit-learn
        return
    threadpool_limits(1)


def blas_threads(limit: int) -> contextlib.AbstractContextManager:
    """A context in which the BLAS libraries run ``limit`` threads. The libraries are looked up once per
    process: threadpoolctl scans every loaded library each time it is asked (about 2 ms with spaCy
    loaded), which a per-request call would pay every time."""
    global _blas_controller
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:  # pragma: no cover - threadpoolctl comes with scikit-learn
        return contextlib.nullcontext()
    if _blas_controller is None:
        import numpy  # noqa: F401 - its BLAS must be loaded before the libraries are looked up

        _blas_controller = ThreadpoolController()
    return _blas_controller.limit(limits=limit, user_api="blas")


# ====================================================================== one level of parallelism


def inner_parallelism_allowed() -> bool:
    """Whether a family may start worker processes of its own: not inside a streamed run or its
    workers, and not as a task of a joblib ``Parallel`` (or a daemonic process), where a nested
    ``Parallel`` would run as threads of the worker rather than as processes."""
    return _INNER_PARALLELISM and not inside_parallel_task() and not multiprocessing.current_process().daemon


def inside_parallel_task() -> bool:
    """Whether this code runs as a task of a joblib ``Parallel`` (in a worker process or thread)."""
    from joblib.parallel import get_active_backend

    backend, _ = get_active_backend()
    return getattr(backend, "nesting_level", 0) > 0


@contextlib.contextmanager
def no_inner_parallelism() -> Iterator[None]:
    """While the block runs, families compute in the calling process (see the module docstring)."""
    global _INNER_PARALLELISM
    previous, _INNER_PARALLELISM = _INNER_PARALLELISM, False
    try:
        yield
    finally:
        _INNER_PARALLELISM = previous


# ====================================================================== forked workers


def can_fork() -> bool:
    """Whether :func:`forked_map` may be used here: Linux, and no thread but this one (a fork copies
    only the calling thread, so a lock another thread holds would stay locked in the child)."""
    return (
        sys.platform.startswith("linux")
        and "fork" in multiprocessing.get_all_start_methods()
        and threading.active_count() == 1
    )


def _start_forked_worker(parent_pid: int) -> None:
    """In a forked worker: end with the parent, leave Ctrl-C to it, one BLAS thread."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles it and stops the workers
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # not the parent's "clean up like Ctrl-C" handler
    exit_with_parent(parent_pid)
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(1)  # two workers with one BLAS pool each per core, not two pools each
    except ImportError:  # pragma: no cover - threadpoolctl comes with scikit-learn
        pass


def _stop(pool: ProcessPoolExecutor) -> None:
    """Cancel what has not started and kill the workers (a Ctrl-C must not wait for running items)."""
    processes = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        with contextlib.suppress(OSError, ValueError):
            process.kill()
    for process in processes:
        with contextlib.suppress(OSError, ValueError):
            process.join(5)


@contextlib.contextmanager
def forked_workers(workers: int) -> Iterator[Callable[..., Iterator[tuple[Any, Any]]]]:
    """``workers`` processes forked from this one (see :func:`can_fork`) for the duration of the
    block, which gets a ``map(function, items, in_flight)`` (see :func:`_ordered_map`). The workers
    are forked at once, before anything else in this process can start a thread; they end with the
    block: after their work when it ends normally, killed at once on an error or an interrupt.

    What the parent holds is frozen out of the garbage collector before the fork (``gc.freeze``):
    otherwise every worker's collections walk, and so copy page by page, the whole inherited heap.
    """
    gc.freeze()
    pool = ProcessPoolExecutor(
        max_workers=workers,
        mp_context=multiprocessing.get_context("fork"),
        initializer=_start_forked_worker,
        initargs=(os.getpid(),),
    )
    finished = False
    try:
        pool.submit(int).result()  # a fork pool starts all its workers on the first submit
        yield lambda function, items, in_flight: _ordered_map(pool, function, items, in_flight)
        finished = True
    finally:
        if finished:
            pool.shutdown(wait=True)
        else:
            _stop(pool)
        gc.unfreeze()


def _ordered_map(
    pool: ProcessPoolExecutor, function: Callable[[T], Any], items: Iterable[T], in_flight: int
) -> Iterator[tuple[T, Any]]:
    """``(item, function(item))`` for each item, in input order; at most ``in_flight`` items are taken
    from ``items`` ahead of the one returned, so a lazy ``items`` is read as the work goes. A worker's
    exception is raised here; a worker that dies (killed, out of memory) raises ``ChildProcessError``."""
    pending: deque = deque()
    try:
        for item in items:
            pending.append((item, pool.submit(function, item)))
            if len(pending) >= in_flight:
                first, future = pending.popleft()
                yield first, future.result()
        while pending:
            first, future = pending.popleft()
            yield first, future.result()
    except BrokenProcessPool:
        raise ChildProcessError("a worker process ended unexpectedly (killed, or out of memory)") from None
