"""Worker processes that end when the qe process that started them dies, even by SIGKILL.

joblib's loky workers outlive a killed parent (they wait for work for minutes, holding their
memory). Every loky worker started after :func:`exit_with_parent_everywhere` runs
:func:`exit_with_parent` first: a daemon thread that ends the worker as soon as its parent is
gone (its parent process id changes when it is re-parented). A thread polling ``os.getppid`` is
used rather than ``PR_SET_PDEATHSIG``, which fires when the *thread* that started the worker
exits, and loky starts workers from whichever thread submits or manages work.
"""

from __future__ import annotations

import os
import threading
import time

from joblib import register_parallel_backend
from joblib._parallel_backends import LokyBackend

CHECK_SECONDS = 0.5


def exit_with_parent(parent_pid: int, every: float = CHECK_SECONDS) -> None:
    """In a worker: end this process (exit code 1) once ``parent_pid`` is no longer its parent."""

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(every)
        os._exit(1)

    threading.Thread(target=watch, name="qe-exit-with-parent", daemon=True).start()


class ParentBoundLokyBackend(LokyBackend):
    """joblib's loky backend whose workers run :func:`exit_with_parent` (bound to this process)."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("initializer", exit_with_parent)
        kwargs.setdefault("initargs", (os.getpid(),))
        super().__init__(*args, **kwargs)


def exit_with_parent_everywhere() -> None:
    """Make joblib's ``loky`` backend (the default, also used by scikit-learn) start parent-bound
    workers in this process: every joblib worker qe starts, however deep in a library, ends with it."""
    register_parallel_backend("loky", ParentBoundLokyBackend)
