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


def clear_text_memos(*roots: Any, depth: int = 4) -> None:
    """Empty the per-sentence tokenization memos of ``qe.text.processing.TextProcessor`` objects under
    ``roots`` and the POS taggers' per-sentence memos.

    Feature families and resource bundles memoise tokenized sentences (up to 200,000 per
    processor), the taggers tagged ones; a streamed run clears them after every chunk (a service
    after every request) so memory does not depend on how many distinct sentences went through a
    worker. Small containers and objects are searched, ``depth`` levels down.
    """
    from qe.resources.pos import clear_tag_memos
    from qe.text.processing import TextProcessor

    clear_tag_memos()

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
