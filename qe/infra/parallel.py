"""The joblib backend qe's parallel work runs on: local processes (loky) or a Dask cluster.

Selectors and streamed runs call ``joblib.Parallel`` without naming a backend, so whatever
:func:`parallel_backend_context` configures is used: ``loky`` runs on this machine, ``dask`` ships
each task to a Dask cluster (a ``distributed.LocalCluster`` is started when no scheduler address is
given). :func:`connect_dask` checks a scheduler address before connecting and turns every way a
connection can fail into one line; :func:`local_dask_workers` is the worker count of a local cluster.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from joblib import effective_n_jobs, parallel_config

from qe.infra.errors import QEInputError

BACKENDS = ("loky", "threading", "dask")
DASK_WAIT_SECONDS = 30


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


def local_dask_workers(n_jobs: int | None) -> int:
    """Worker processes of a local Dask cluster for ``--jobs``: -1 is one per core, unset is 2."""
    return effective_n_jobs(n_jobs or 2)


def check_scheduler(address: str) -> str:
    """``address`` if it reads as a Dask scheduler address (``tcp://host:8786``, ``host:8786``), else
    one line saying why (not a traceback of distributed's parser)."""
    from distributed.comm.addressing import parse_address
    from distributed.comm.registry import get_backend

    try:
        scheme, location = parse_address(address)
        get_backend(scheme).get_address_host(location)
    except (ValueError, TypeError) as exc:
        reason = " ".join(str(exc).split())
        raise QEInputError(
            f"{address!r} is not a Dask scheduler address ({reason}); give one like tcp://host:8786"
        ) from None
    return address


def connect_dask(address: str, wait: float = DASK_WAIT_SECONDS) -> Any:
    """A ``distributed.Client`` of the scheduler at ``address`` that has at least one worker; an
    address that is not one, a scheduler that cannot be reached or has no worker within ``wait``
    seconds is one line."""
    from distributed import Client

    check_scheduler(address)
    try:
        client = Client(address, timeout=f"{wait}s")
    except (OSError, ValueError) as exc:  # TimeoutError is an OSError
        reason = " ".join(str(exc).split()) or type(exc).__name__
        raise QEInputError(f"cannot reach the Dask scheduler at {address}: {reason}") from None
    try:
        client.wait_for_workers(1, timeout=wait)
    except (OSError, ValueError):
        client.close()
        raise QEInputError(f"the Dask scheduler at {address} has no worker (waited {wait:g} s)") from None
    return client
