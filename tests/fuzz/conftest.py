"""Property-based tests of the readers that take files a stranger can hand us.

Hypothesis profiles: ``ci`` (the default, a bounded number of examples so ``make test`` stays fast) and
``fuzz`` (``QE_FUZZ_EXAMPLES``, 10,000 by default, chosen by ``make fuzz``). Each test's examples are counted
and attached to its report (``user_properties``, which pytest-xdist carries back from its workers), so the
summary line of tests/conftest.py says how many were tried in one process or on many.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections import Counter
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings

from tests.helpers import FUZZ_EXAMPLES

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
    """Record one example tried against ``reader`` (attached to the running test's report)."""
    EXAMPLES[reader] += 1


@pytest.fixture(autouse=True)
def _report_examples(request: pytest.FixtureRequest) -> Iterator[None]:
    """Attach the examples this test tried, per reader, to its report (read by the summary line)."""
    EXAMPLES.clear()
    yield
    request.node.user_properties.append((FUZZ_EXAMPLES, dict(EXAMPLES)))


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
