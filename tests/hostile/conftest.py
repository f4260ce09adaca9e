"""The hostile catalogue: one test case per attack a stranger's file, option or request can make.

Each module holds one class of attack (see docs/security.md and docs/serve.md); every case fails on the
main branch it was written against and passes since. The summary line printed at the end of a run counts
the cases, so the next audit starts from the catalogue rather than from scratch.
"""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).parent


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Print how many catalogue cases ran, and how many of them held."""
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    root = terminalreporter.config.rootpath
    for outcome in counts:
        for report in terminalreporter.stats.get(outcome, []):
            ran = report.when == "call" or (outcome == "skipped" and report.when == "setup")
            if ran and HERE in (root / str(report.fspath)).parents:  # fspath is relative to the root
                counts[outcome] += 1
    total = sum(counts.values())
    if total:
        terminalreporter.write_line(
            f"hostile catalogue: {total} cases, {counts['passed']} held, "
            f"{counts['failed']} failed, {counts['skipped']} skipped"
        )
