"""The computation applied to every chunk, and the state it keeps in each worker process.

A :class:`ChunkTask` is pickled with every chunk, so it holds only paths and settings; its ``setup``
builds the heavy state (a model's scoring context, a resource bundle) once per worker process, and
:func:`run_chunk` keeps that state for the worker's later chunks. A command that has already built
the state for its own checks hands it over with :func:`preload_state`: chunks run in that process,
and workers forked from it, do not build it again.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from qe.stream.chunks import Chunk


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
    from qe.infra.workers import no_inner_parallelism

    key = task.cache_key()
    with no_inner_parallelism():
        if _WORKER_STATE.get("key") != key:
            _WORKER_STATE.clear()  # drop the previous task's state before loading a new one
            _WORKER_STATE["state"] = task.setup()
            _WORKER_STATE["key"] = key
        return task.process(_WORKER_STATE["state"], chunk)


def preload_state(task: ChunkTask, state: Any) -> None:
    """Hand this process the state ``task.setup()`` would build (a command that has already loaded
    the model for its checks): chunks run here, and workers forked from here, do not load it again."""
    _WORKER_STATE.clear()
    _WORKER_STATE["state"] = state
    _WORKER_STATE["key"] = task.cache_key()


def clear_worker_state() -> None:
    """Forget the task state kept in this process (the parent runs tasks itself with one job)."""
    _WORKER_STATE.clear()
