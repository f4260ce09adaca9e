"""Error types that the CLI turns into one clear line and exit code 2."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

LINE_BREAKS = {ord(c): repr(c)[1:-1] for c in "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"}
"""Every character ``str.splitlines`` breaks at, and its escape (``\\r``): a message quoting a
stranger's text (a header, a file name) stays one line."""


class QEInputError(Exception):
    """Bad input or usage: reported as one line naming the file (and line), exit code 2."""

    def __init__(self, message: str, path: str | Path | None = None, line: int | None = None):
        self.message = message
        self.path = None if path is None else str(path)
        self.line = line
        super().__init__(self.__str__())

    def __str__(self) -> str:
        where = ""
        if self.path is not None:
            where = self.path if self.line is None else f"{self.path}:{self.line}"
            where += ": "
        return f"{where}{self.message}".translate(LINE_BREAKS)


@contextlib.contextmanager
def naming(path: str | Path) -> Iterator[None]:
    """Inside the block, an error that names no file names ``path`` (the config it came from)."""
    try:
        yield
    except QEInputError as exc:
        if exc.path is not None:
            raise
        raise QEInputError(exc.message, path) from None


def refusal(call: Callable[[], object]) -> str | None:
    """The message of the ``QEInputError`` that ``call()`` raises, or None if it raises none: to
    list every missing piece at once instead of stopping at the first."""
    try:
        call()
    except QEInputError as exc:
        return exc.message
    return None


def require(missing: list[str], what: str, path: Any = None) -> None:
    """One QEInputError naming every missing piece (nothing when none is)."""
    if missing:
        raise QEInputError(f"{what}: {len(missing)} missing piece(s): " + " | ".join(missing), path)


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread so that it unwinds (removing staged output) like Ctrl-C."""
