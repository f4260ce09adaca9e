"""Forked workers of a streamed run: ordered results, errors and dead workers reported, one level of
parallelism, the chunk size chosen for them, and ``qe features --jobs 2`` writing what one job writes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from qe.infra.errors import QEInputError
from qe.infra.parallel import connect_dask, local_dask_workers
from qe.infra.workers import forked_workers, inner_parallelism_allowed
from qe.stream import Chunk, ChunkTask, Sink, run_stream
from qe.stream.chunks import auto_chunk_size
from tests.helpers import write_lines

REPO = Path(__file__).resolve().parents[1]


def _square(x: int) -> tuple[int, int]:
    time.sleep(0.02 * (x % 3))  # uneven work, so that the workers finish out of order
    return x * x, os.getpid()


def _fails_on_three(x: int) -> int:
    if x == 3:
        raise QEInputError("bad value 3", "in.txt", 4)
    return x


def _dies_on_two(x: int) -> int:
    if x == 2:
        os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(0.2)
    return x


def test_auto_chunk_size_by_hand() -> None:
    assert auto_chunk_size(20_000, 1) == 10_000  # one job: the old default
    assert auto_chunk_size(20_000, 2) == 1_250  # 8 chunks per worker
    assert auto_chunk_size(2_000, 2) == 500  # never below 500 pairs
    assert auto_chunk_size(10**7, 4) == 10_000  # never above the one-job size
    assert auto_chunk_size(0, 2) == 500


def test_forked_workers_return_results_in_input_order() -> None:
    with forked_workers(2) as map_:
        results = list(map_(_square, iter(range(12)), 3))
    assert [item for item, _ in results] == list(range(12))
    assert [value for _, (value, _) in results] == [x * x for x in range(12)]
    pids = {pid for _, (_, pid) in results}
    assert len(pids) == 2 and os.getpid() not in pids


def test_a_worker_error_is_raised_in_the_parent() -> None:
    with pytest.raises(QEInputError, match=r"^in\.txt:4: bad value 3$"), forked_workers(2) as map_:
        for _ in map_(_fails_on_three, range(8), 4):
            pass


def test_a_killed_worker_is_an_error_not_a_hang() -> None:
    start = time.monotonic()
    with (
        pytest.raises(ChildProcessError, match="worker process ended unexpectedly"),
        forked_workers(2) as map_,
    ):
        list(map_(_dies_on_two, range(6), 4))
    assert time.monotonic() - start < 30


class FlagTask(ChunkTask):
    """Reports, per chunk, whether families could start processes of their own, and where it ran."""

    def setup(self) -> Any:
        return None

    def process(self, state: Any, chunk: Chunk) -> Any:
        import qe

        time.sleep(0.05)  # long enough for both workers to get chunks
        return inner_parallelism_allowed(), os.getpid(), getattr(qe, "_probe", None)


class ListSink(Sink):
    """Keeps the results in memory."""

    def __init__(self) -> None:
        self.results: list[Any] = []

    def open(self, position: int | None) -> None:
        pass

    def write(self, chunk: Chunk, result: Any) -> int:
        self.results.append((chunk.index, result))
        return 0

    def finalize(self) -> None:
        pass

    def close(self) -> None:
        pass

    def discard(self) -> None:
        pass


@pytest.mark.parametrize("jobs", [1, 2])
def test_chunks_run_without_inner_parallelism(tmp_path: Path, jobs: int) -> None:
    lines = write_lines(tmp_path / "in.txt", [f"line {i}" for i in range(40)])
    sink = ListSink()
    run_stream({"src": lines}, FlagTask(), sink, chunk_size=10, n_jobs=jobs, progress=False)
    assert [index for index, _ in sink.results] == [0, 1, 2, 3]
    assert all(allowed is False for _, (allowed, _, _) in sink.results)
    assert inner_parallelism_allowed()  # outside a chunk, families may


def test_a_stream_forks_its_workers_from_a_clean_process(tmp_path: Path) -> None:
    """In a process with no other thread (as the CLI is), the workers are forks of it: they see what
    it set up, and two of them share the chunks."""
    lines = write_lines(tmp_path / "in.txt", [f"line {i}" for i in range(4000)])
    script = f"""
import json, os, qe
from qe.stream import run_stream
from tests.test_workers import FlagTask, ListSink
qe._probe = os.getpid()
sink = ListSink()
run_stream({{"src": {str(lines)!r}}}, FlagTask(), sink, n_jobs=2, progress=False)
print(json.dumps([qe._probe, sink.results]))
"""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stderr
    parent, results = json.loads(done.stdout)
    assert [index for index, _ in results] == list(range(8))  # 4,000 pairs, 2 jobs: chunks of 500
    assert {probe for _, (_, _, probe) in results} == {parent}  # forked: the parent's module state
    assert len({pid for _, (_, pid, _) in results} - {parent}) == 2


class SetupTask(ChunkTask):
    """Records, per chunk, the process that ran it and the one whose ``setup`` built its state."""

    def cache_key(self) -> str:
        return "setup-task"

    def setup(self) -> Any:
        return os.getpid()

    def process(self, state: Any, chunk: Chunk) -> Any:
        from tqdm import tqdm

        list(tqdm(range(3), disable=True))  # as extract_features does in a quiet run
        time.sleep(0.05)  # long enough for both workers to get chunks
        return state, os.getpid(), len(chunk)


def test_forked_workers_share_the_state_the_parent_set_up(tmp_path: Path) -> None:
    """The task is set up once, in the parent, on the first chunk's first pairs (bundle members,
    taggers, ... loaded once) before the workers are forked; a disabled progress bar starts no
    thread that would stop the fork."""
    lines = write_lines(tmp_path / "in.txt", [f"line {i}" for i in range(4000)])
    script = f"""
import json, os
from qe.stream import run_stream
from tests.test_workers import SetupTask, ListSink
sink = ListSink()
run_stream({{"src": {str(lines)!r}}}, SetupTask(), sink, n_jobs=2, progress=False)
print(json.dumps([os.getpid(), sink.results]))
"""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stderr
    parent, results = json.loads(done.stdout)
    assert [index for index, _ in results] == list(range(8))
    assert {setup for _, (setup, _, _) in results} == {parent}
    assert len({pid for _, (_, pid, _) in results} - {parent}) == 2
    assert sum(size for _, (_, _, size) in results) == 4000  # the warm-up's pairs are not in the output


def test_two_jobs_write_what_one_job_writes(tmp_path: Path) -> None:
    words = ["the", "cat", "sat", "on", "a", "mat", "while", "dogs", "ran", ",", "said", "she", "12"]
    src = [" ".join(words[(i * 7 + k) % len(words)] for k in range(3 + i % 11)) for i in range(3000)]
    mt = [" ".join(reversed(s.split())) for s in src]
    files = [write_lines(tmp_path / "src.en", src), write_lines(tmp_path / "mt.es", mt)]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    outputs = []
    for jobs in (1, 2):
        out = tmp_path / f"out{jobs}.tsv"
        argv = [sys.executable, "-m", "qe", "features", "--families", "surface", "--src", str(files[0])]
        argv += ["--mt", str(files[1]), "--out", str(out), "--jobs", str(jobs), "--quiet"]
        done = subprocess.run(argv, env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        outputs.append(out.read_bytes())
    assert outputs[0] == outputs[1]
    assert len(outputs[0].splitlines()) == 3001


_CACHE: dict[str, Any] = {}


def _grows_after_the_first_task(x: int) -> tuple[int, int]:
    """A per-process cache that grows by 400 MB on a worker's second task, as a bundle's does when a
    worker meets a member it has not loaded (loky took more than 300 MB for a leak)."""
    if x >= 2 and "table" not in _CACHE:
        _CACHE["table"] = np.ones(50_000_000)  # 400 MB, every page written
    time.sleep(1.1)  # loky checks a worker's memory at most once a second
    return x, os.getpid()


@pytest.mark.slow
def test_loky_workers_may_grow_their_caches_without_a_restart() -> None:
    """issue 24: "A worker stopped while some jobs were given to the executor" reached the terminal
    when a worker's resource cache grew past loky's 300 MB leak allowance; the worker was restarted
    and loaded everything again."""
    script = """
import json, warnings
from joblib import Parallel, delayed
from qe.infra.workers import exit_with_parent_everywhere
from tests.test_workers import _grows_after_the_first_task
exit_with_parent_everywhere()
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    results = Parallel(n_jobs=2)(delayed(_grows_after_the_first_task)(x) for x in range(8))
print(json.dumps([results, [str(w.message) for w in caught]]))
"""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stderr
    results, warned = json.loads(done.stdout)
    assert [x for x, _ in results] == list(range(8))
    assert len({pid for _, pid in results}) == 2  # the same two workers throughout
    assert not warned and "worker stopped" not in done.stderr, (warned, done.stderr)


def test_local_dask_workers_follow_jobs() -> None:
    from joblib import cpu_count

    assert local_dask_workers(-1) == cpu_count() >= 1  # --jobs -1 is one per core (was n_workers=-1)
    assert local_dask_workers(None) == 2
    assert local_dask_workers(3) == 3


def test_a_dask_scheduler_without_workers_is_one_line() -> None:
    distributed = pytest.importorskip("distributed")
    no_worker = r"the Dask scheduler at \S+ has no worker \(waited 1 s\)"
    with (
        distributed.LocalCluster(n_workers=0, processes=False, dashboard_address=None) as cluster,
        pytest.raises(QEInputError, match=no_worker),
    ):
        connect_dask(cluster.scheduler_address, wait=1)
