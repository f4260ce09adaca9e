"""Progress lines (stderr) from long learner fits: grid searches, CV predictions, stacking folds.

Off unless a caller switches it on with :func:`reporting` (``qe run`` / ``qe ablate`` do, unless
``--quiet``). The switch lives in this process only: work handed to joblib workers reports
nothing itself, so with ``n_jobs > 1`` the lines come from the coordinating process, per batch.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TextIO

MIN_INTERVAL = 2.0  # seconds between two progress lines of one task (the first and last always show)


@dataclass(frozen=True)
class _Setting:
    interval: float
    stream: TextIO | None  # None: sys.stderr at the time of writing


_SETTING: ContextVar[_Setting | None] = ContextVar("qe_learner_progress", default=None)


@contextmanager
def reporting(
    enabled: bool = True, interval: float = MIN_INTERVAL, stream: TextIO | None = None
) -> Iterator[None]:
    """Within the block, long learner fits write progress lines to ``stream`` (default stderr)."""
    token = _SETTING.set(_Setting(interval, stream) if enabled else None)
    try:
        yield
    finally:
        _SETTING.reset(token)


def active() -> bool:
    """Whether progress lines are wanted here."""
    return _SETTING.get() is not None


def say(message: str) -> None:
    """One progress line, if progress is on."""
    setting = _SETTING.get()
    if setting is not None:
        print(message, file=setting.stream or sys.stderr, flush=True)


@dataclass
class Progress:
    """Counts ``done`` of ``total`` steps of one task and says so at most every ``interval`` seconds,
    with the elapsed time and a linear estimate of the time left."""

    what: str
    total: int
    unit: str
    started: float = field(default_factory=time.perf_counter)
    last: float = float("-inf")

    def step(self, done: int, detail: str = "") -> None:
        """Report that ``done`` steps are finished (``detail``: e.g. the best score so far)."""
        setting = _SETTING.get()
        if setting is None:
            return
        now = time.perf_counter()
        if done < self.total and now - self.last < setting.interval:
            return
        self.last = now
        elapsed = now - self.started
        left = f", ~{elapsed / done * (self.total - done):.0f} s left" if 0 < done < self.total else ""
        detail = f"; {detail}" if detail else ""
        say(f"{self.what}: {done}/{self.total} {self.unit} in {elapsed:.0f} s{left}{detail}")
