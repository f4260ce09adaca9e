"""The scoring workers, seen from the HTTP process: ``workers`` spawned processes, each holding every
served model, handed one request at a time. A worker that dies (killed, out of memory) costs only the
request it was scoring, answered 503 at once, and is replaced in the background; a request that waits
too long for a free worker, or a worker that takes too long to answer, is 503 too, never a hang."""

from __future__ import annotations

import multiprocessing
import os
import queue
import sys
import threading
import time
from multiprocessing.connection import wait
from typing import Any

from qe.errors import QEInputError
from qe.serve.names import ModelEntry

RESPAWN_PAUSE = (1.0, 60.0)  # first and longest pause before trying again to start a worker


class Unavailable(Exception):
    """The request cannot be scored now (answered 503 with this one line)."""


def _log(message: str) -> None:
    print(f"qe serve: {message}", file=sys.stderr, flush=True)


class _Worker:
    """One worker process and the parent's end of its pipe."""

    def __init__(self, entries: tuple[ModelEntry, ...]) -> None:
        from qe.serve.worker import serve_forever

        context = multiprocessing.get_context("spawn")  # a fresh interpreter: no threads, no locks held
        self.conn, child = context.Pipe()
        self.process = context.Process(
            target=serve_forever, args=(child, entries, os.getpid()), name="qe-serve-worker", daemon=True
        )
        self.process.start()
        child.close()
        self.retired = False

    def wait_ready(self, seconds: float) -> list[dict[str, Any]]:
        """The served models' descriptions once the worker has loaded them; its one-line error else."""
        try:
            if not self.conn.poll(seconds):
                raise QEInputError(f"a scoring worker did not load the models in {seconds:g} s")
            message = self.conn.recv()
        except (EOFError, OSError):
            self.process.join(5)
            raise QEInputError(
                f"a scoring worker stopped while loading the models (exit code {self.process.exitcode})"
            ) from None
        if message[0] != "ready":
            raise QEInputError(message[1])
        return message[1]

    def call(self, request: tuple, seconds: float) -> tuple:
        """Send one request and wait at most ``seconds`` for its answer (EOFError: the worker died)."""
        self.conn.send(request)
        if not self.conn.poll(seconds):
            raise TimeoutError
        return self.conn.recv()

    def stop(self, seconds: float = 5.0) -> None:
        """Close the pipe (the worker then ends) and wait for it; kill it if it does not end."""
        self.conn.close()
        self.process.join(seconds)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(seconds)


class WorkerPool:
    """``size`` scoring workers serving ``entries``; :meth:`start` returns once every one is ready."""

    def __init__(self, entries: tuple[ModelEntry, ...], size: int, start_seconds: float = 900.0) -> None:
        self.entries = entries
        self.size = size
        self.start_seconds = start_seconds
        self.models: dict[str, dict[str, Any]] = {}
        self._idle: queue.Queue[_Worker] = queue.Queue()
        self._workers: set[_Worker] = set()
        self._lock = threading.Lock()
        self._closing = False
        self.replaced = 0

    def start(self) -> None:
        """Start the workers and wait until each has loaded every model (a model that cannot be loaded
        stops the server before it listens, with that model's one-line error)."""
        started = [_Worker(self.entries) for _ in range(self.size)]
        try:
            for worker in started:
                described = worker.wait_ready(self.start_seconds)
                self.models = {model["name"]: model for model in described}
        except BaseException:
            for worker in started:
                worker.stop(1.0)
            raise
        for worker in started:
            self._workers.add(worker)
            self._idle.put(worker)
        threading.Thread(target=self._watch, name="qe-serve-watch", daemon=True).start()

    def ready(self) -> int:
        """How many workers are up."""
        with self._lock:
            return 0 if self._closing else len(self._workers)

    def pids(self) -> list[int]:
        """The worker processes' ids."""
        with self._lock:
            return sorted(w.process.pid for w in self._workers if w.process.pid is not None)

    def call(self, request: tuple, wait_seconds: float, score_seconds: float) -> tuple:
        """The answer of a free worker to ``request``: raises :class:`Unavailable` when no worker is
        free within ``wait_seconds``, the worker dies, or it has not answered in ``score_seconds``."""
        deadline = time.monotonic() + wait_seconds
        while True:
            if self._closing:
                raise Unavailable("the server is stopping")
            try:
                worker = self._idle.get(timeout=max(deadline - time.monotonic(), 0.001))
            except queue.Empty:
                raise Unavailable(
                    f"every scoring worker was busy for {wait_seconds:g} s; try again"
                ) from None
            if not worker.retired and worker.process.is_alive():
                break
            self._retire(worker)
        try:
            answer = worker.call(request, score_seconds)
        except TimeoutError:
            worker.process.kill()
            self._retire(worker)
            raise Unavailable(
                f"scoring took longer than {score_seconds:g} s; the worker was stopped"
            ) from None
        except (EOFError, OSError):
            self._retire(worker)
            raise Unavailable(
                "the worker scoring this request stopped; it is being replaced, try again"
            ) from None
        self._idle.put(worker)
        return answer

    def _retire(self, worker: _Worker) -> None:
        """Take a dead (or killed) worker out, once, and start its replacement."""
        with self._lock:
            if worker.retired:
                return
            worker.retired = True
            self._workers.discard(worker)
            closing = self._closing
        if closing:
            return
        worker.process.join(5)
        code = worker.process.exitcode
        _log(f"scoring worker {worker.process.pid} stopped (exit code {code}); starting another")
        worker.conn.close()
        threading.Thread(target=self._respawn, name="qe-serve-respawn", daemon=True).start()

    def _respawn(self) -> None:
        pause = RESPAWN_PAUSE[0]
        while not self._closing:
            worker = _Worker(self.entries)
            try:
                worker.wait_ready(self.start_seconds)
            except QEInputError as exc:
                worker.stop(1.0)
                _log(f"could not start a scoring worker: {exc}; trying again in {pause:g} s")
                time.sleep(pause)
                pause = min(2 * pause, RESPAWN_PAUSE[1])
                continue
            with self._lock:
                if not self._closing:
                    self._workers.add(worker)
                    self.replaced += 1
            if self._closing:
                worker.stop(1.0)
                return
            self._idle.put(worker)
            _log(f"scoring worker {worker.process.pid} is ready")
            return

    def _watch(self) -> None:
        """Notice a worker that dies while idle (a busy one's caller notices first)."""
        while not self._closing:
            with self._lock:
                sentinels = {w.process.sentinel: w for w in self._workers}
            if not sentinels:
                time.sleep(0.5)
                continue
            for sentinel in wait(list(sentinels), timeout=0.5):
                self._retire(sentinels[sentinel])

    def close(self) -> None:
        """Stop every worker (each ends when its pipe closes)."""
        with self._lock:
            self._closing = True
            workers = list(self._workers)
            self._workers.clear()
        for worker in workers:
            worker.stop()
