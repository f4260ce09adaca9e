"""The scoring workers, seen from the HTTP process: ``size`` spawned processes, each holding every served
model, each fed by one thread of this process from a shared queue of requests.

A feeding thread takes the next request and, with it, the small requests for the same model waiting
behind it (at most :data:`MERGE_PAIRS` pairs in all), and sends them to its worker as one message: the
worker scores them in one pass where it can (``qe.serve.worker``), which is what keeps one-pair
requests from eight clients fast. A worker that dies (killed, out of memory) costs the requests it
held, answered 503 at once, and is replaced by its thread; a request that waits too long for a worker,
or a worker that takes too long to answer, is 503 too, never a hang.
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import sys
import threading
import time
from typing import Any

from qe.infra.errors import QEInputError
from qe.serve.names import ModelEntry

MERGE_PAIRS = 64
"""Pairs a worker is sent at most in one message of several requests (a request of more goes alone)."""
RESPAWN_PAUSE = (1.0, 60.0)  # first and longest pause before trying again to start a worker
CHECK_SECONDS = 1.0  # how often an idle feeding thread checks that its worker is alive


class Unavailable(Exception):
    """The request cannot be scored now (answered 503 with this one line)."""


def _log(message: str) -> None:
    print(f"qe serve: {message}", file=sys.stderr, flush=True)


class _Job:
    """One request waiting for its answer: ``(name, src, mt, extra, start, detail)``."""

    def __init__(self, request: tuple) -> None:
        self.request = request
        self.pairs = len(request[1])
        self.lock = threading.Lock()
        self.taken = False  # a feeding thread has it (it can no longer be given up)
        self.given_up = False  # its caller waited too long for a worker and went away
        self.done = threading.Event()
        self.answer: tuple | None = None
        self.error: Unavailable | None = None

    def take(self) -> bool:
        """Claim the job for a worker (False: its caller gave up)."""
        with self.lock:
            self.taken = not self.given_up
            return self.taken

    def give_up(self) -> bool:
        """Withdraw the job unless a worker has it (True: withdrawn)."""
        with self.lock:
            self.given_up = not self.taken
            return self.given_up

    def release(self) -> None:
        """Let go of a job that never reached a worker: another thread may take it (or its caller give
        it up) again."""
        with self.lock:
            self.taken = False

    def finish(self, answer: tuple | None = None, error: Unavailable | None = None) -> None:
        self.answer, self.error = answer, error
        self.done.set()

    def merges_with(self, other: _Job) -> bool:
        """Same model, same detail asked for and same per-pair inputs: one pass can score both."""
        mine, theirs = self.request, other.request
        return mine[0] == theirs[0] and mine[5] == theirs[5] and set(mine[3]) == set(theirs[3])


class _Worker:
    """One worker process and the parent's end of its pipe."""

    def __init__(self, entries: tuple[ModelEntry, ...], memo_entries: int | None = None) -> None:
        from qe.serve.worker import serve_forever

        context = multiprocessing.get_context("spawn")  # a fresh interpreter: no threads, no locks held
        self.conn, child = context.Pipe()
        self.process = context.Process(
            target=serve_forever,
            args=(child, entries, os.getpid(), memo_entries),
            name="qe-serve-worker",
            daemon=True,
        )
        self.process.start()
        child.close()

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

    def stop(self, seconds: float = 5.0) -> None:
        """Close the pipe (the worker then ends) and wait for it; kill it if it does not end."""
        self.conn.close()
        self.process.join(seconds)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(seconds)


class WorkerPool:
    """``size`` scoring workers serving ``entries``; :meth:`start` returns once every one is ready."""

    def __init__(
        self,
        entries: tuple[ModelEntry, ...],
        size: int,
        score_seconds: float = 300.0,
        start_seconds: float = 900.0,
        memo_entries: int | None = None,
    ) -> None:
        self.entries = entries
        self.memo_entries = memo_entries
        self.size = size
        self.score_seconds = score_seconds
        self.start_seconds = start_seconds
        self.models: dict[str, dict[str, Any]] = {}
        self._jobs: queue.Queue[_Job | None] = queue.Queue()
        self._workers: list[_Worker | None] = [None] * size
        self._closing = False
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        """Start the workers and wait until each has loaded every model (a model that cannot be loaded
        stops the server before it listens, with that model's one-line error)."""
        started = [_Worker(self.entries, self.memo_entries) for _ in range(self.size)]
        try:
            for worker in started:
                self.models = {model["name"]: model for model in worker.wait_ready(self.start_seconds)}
        except BaseException:
            for worker in started:
                worker.stop(1.0)
            raise
        self._workers = list(started)
        for slot in range(self.size):
            thread = threading.Thread(
                target=self._feed, args=(slot,), name=f"qe-serve-feed-{slot}", daemon=True
            )
            thread.start()
            self._threads.append(thread)

    def ready(self) -> int:
        """How many workers are up."""
        return 0 if self._closing else sum(w is not None and w.process.is_alive() for w in self._workers)

    def call(self, request: tuple, wait_seconds: float) -> tuple:
        """The answer of a worker to ``request``: raises :class:`Unavailable` when no worker takes it
        within ``wait_seconds``, its worker dies, or it takes more than the pool's ``score_seconds``."""
        if self._closing:
            raise Unavailable("the server is stopping")
        job = _Job(request)
        self._jobs.put(job)
        if not job.done.wait(wait_seconds) and job.give_up():
            raise Unavailable(f"every scoring worker was busy for {wait_seconds:g} s; try again")
        if not job.done.wait(self.score_seconds + 60):  # a worker has it: its thread answers in time
            raise Unavailable("no answer from the scoring worker")
        if job.error is not None:
            raise job.error
        assert job.answer is not None
        return job.answer

    # ------------------------------------------------------------------ the feeding threads

    def _next_jobs(self, carry: _Job | None) -> tuple[list[_Job], _Job | None]:
        """The next job (``carry``, or the queue's first) and the ones that can go with it; the first
        one that cannot is carried to the next round."""
        first = carry
        while first is None or not first.take():
            if self._closing:
                return [], None
            try:
                first = self._jobs.get(timeout=CHECK_SECONDS)
            except queue.Empty:
                return [], None
            if first is None:  # the closing signal
                return [], None
        jobs, pairs = [first], first.pairs
        while first.pairs < MERGE_PAIRS:
            try:
                job = self._jobs.get_nowait()
            except queue.Empty:
                break
            if job is None:
                self._jobs.put(None)  # for another thread
                break
            if not (job.merges_with(first) and pairs + job.pairs <= MERGE_PAIRS):
                return jobs, job
            if job.take():
                jobs.append(job)
                pairs += job.pairs
        return jobs, None

    def _feed(self, slot: int) -> None:
        carry: _Job | None = None
        while not self._closing:
            worker = self._workers[slot]
            if worker is None or not worker.process.is_alive():
                self._requeue([carry] if carry is not None else [])
                carry = None
                self._replace(slot)
                continue
            jobs, carry = self._next_jobs(carry)
            if not jobs:
                continue
            if not worker.process.is_alive():  # it died while this thread waited for work
                self._requeue([*jobs, *([carry] if carry is not None else [])])
                carry = None
                continue
            self._score(worker, jobs)
        for job in [carry] if carry is not None else []:
            job.finish(error=Unavailable("the server is stopping"))

    def _score(self, worker: _Worker, jobs: list[_Job]) -> None:
        """Have ``worker`` answer ``jobs``. Jobs it never received (it was gone when they were sent) go
        back to the queue, for a healthy worker; those it held when it died are answered 503."""
        try:
            worker.conn.send([job.request for job in jobs])
        except OSError:  # the pipe is closed at the worker's end: it died before reading them
            self._requeue(jobs)
            return
        try:
            if not worker.conn.poll(self.score_seconds):
                worker.process.kill()
                error = Unavailable(
                    f"scoring took longer than {self.score_seconds:g} s; the worker was stopped"
                )
                for job in jobs:
                    job.finish(error=error)
                return
            answers = worker.conn.recv()
        except (EOFError, OSError):
            error = Unavailable("the worker scoring this request stopped; it is being replaced, try again")
            for job in jobs:
                job.finish(error=error)
            return
        for job, answer in zip(jobs, answers, strict=True):
            job.finish(answer)

    def _requeue(self, jobs: list[_Job]) -> None:
        """Put ``jobs``, which no worker received, back in the queue for another feeding thread."""
        for job in jobs:
            job.release()
            self._jobs.put(job)

    def _replace(self, slot: int) -> None:
        """Start a worker in ``slot`` in place of a dead one, trying again (with pauses) until it loads."""
        dead = self._workers[slot]
        self._workers[slot] = None
        if dead is not None:
            dead.process.join(5)
            code = dead.process.exitcode
            _log(f"scoring worker {dead.process.pid} stopped (exit code {code}); starting another")
            dead.conn.close()
        pause = RESPAWN_PAUSE[0]
        while not self._closing:
            worker = _Worker(self.entries, self.memo_entries)
            try:
                worker.wait_ready(self.start_seconds)
            except QEInputError as exc:
                worker.stop(1.0)
                _log(f"could not start a scoring worker: {exc}; trying again in {pause:g} s")
                time.sleep(pause)
                pause = min(2 * pause, RESPAWN_PAUSE[1])
                continue
            self._workers[slot] = worker
            _log(f"scoring worker {worker.process.pid} is ready")
            return

    def close(self) -> None:
        """Stop taking requests, answer those still queued 503, and stop every worker."""
        self._closing = True
        for _ in self._threads:
            self._jobs.put(None)
        for thread in self._threads:
            thread.join(self.score_seconds + 10)
        while True:
            try:
                job = self._jobs.get_nowait()
            except queue.Empty:
                break
            if job is not None and job.take():
                job.finish(error=Unavailable("the server is stopping"))
        for worker in self._workers:
            if worker is not None:
                worker.stop()
