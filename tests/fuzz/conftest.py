"""Property-based tests of the readers that take files a stranger can hand us.

Hypothesis profiles: ``ci`` (the default, a bounded number of examples so ``make test`` stays fast) and
``fuzz`` (``QE_FUZZ_EXAMPLES``, 10,000 by default, chosen by ``make fuzz``). The summary line counts the
examples every property ran, so ``make fuzz`` prints how many were tried.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections import Counter
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    max_examples=int(os.environ.get("QE_FUZZ_CI_EXAMPLES", "40")),
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
settings.register_profile(
    "fuzz",
    max_examples=int(os.environ.get("QE_FUZZ_EXAMPLES", "10000")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
settings.load_profile("fuzz" if os.environ.get("QE_FUZZ") else "ci")

EXAMPLES: Counter[str] = Counter()


def count_example(reader: str) -> None:
    """Record one example tried against ``reader`` (printed in the summary)."""
    EXAMPLES[reader] += 1


@contextlib.contextmanager
def hang_guard(seconds: int, what: str) -> Iterator[None]:
    """Fail the example (an AssertionError, which Hypothesis shrinks) if ``what`` runs past ``seconds``."""

    def hung(signum: int, frame: object) -> None:
        raise AssertionError(f"{what} ran for more than {seconds} s: a hang")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Print the number of examples each reader was given."""
    for reader, count in sorted(EXAMPLES.items()):
        terminalreporter.write_line(f"fuzz: {reader}: {count} examples")
