"""Switch the joblib backend used by the selectors: local processes (loky) or a Dask cluster.

Selectors call ``joblib.Parallel`` without naming a backend, so whatever this context manager
configures is used: ``loky`` runs on this machine, ``dask`` ships each task to a Dask cluster
(a ``distributed.LocalCluster`` is started when no scheduler address is given).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from joblib import parallel_config

from qe.errors import QEInputError

BACKENDS = ("loky", "threading", "dask")


@contextlib.contextmanager
def parallel_backend_context(
    backend: str = "loky",
    scheduler: str | None = None,
    n_jobs: int | None = None,
    *,
    processes: bool = True,
) -> Iterator[object | None]:
    """Run the enclosed joblib work on ``backend``; yields the Dask client (or None).

    ``n_jobs`` is the number of local workers (loky / threading) or, for a Dask LocalCluster,
    the number of single-threaded worker processes (default 2; -1: one per core). ``scheduler`` is
    the address of an existing Dask scheduler (e.g. ``tcp://10.0.0.5:8786``); it is only valid with
    ``dask``.
    ``processes=False`` runs the LocalCluster's workers as threads of this process (quick to start).
    """
    if backend not in BACKENDS:
        raise QEInputError(f"unknown parallel backend {backend!r} (known: {', '.join(BACKENDS)})")
    if scheduler is not None and backend != "dask":
        raise QEInputError(f"a scheduler address only makes sense with backend 'dask' (got {backend!r})")
    if backend != "dask":
        with parallel_config(backend=backend, n_jobs=n_jobs):
            yield None
        return
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise QEInputError("backend 'dask' needs dask.distributed: pip install 'qe[dask]'") from None
    from qe.workers import connect_dask, local_dask_workers

    with contextlib.ExitStack() as stack:
        if scheduler is None:
            cluster = stack.enter_context(
                LocalCluster(
                    n_workers=local_dask_workers(n_jobs),
                    threads_per_worker=1,
                    processes=processes,
                    dashboard_address=None,
                )
            )
            client = stack.enter_context(Client(cluster))
        else:
            client = stack.enter_context(connect_dask(scheduler))
        stack.enter_context(parallel_config(backend="dask", n_jobs=-1))
        yield client
