"""Streaming readers for Moses decoder logs: n-best lists, the 1-best trace, search and word graphs.

Each ``summarize_*`` reader makes one pass over its file and keeps only per-sentence statistics in
a :class:`LogIndex` keyed by Moses' 0-based sentence id, so memory grows with the number of
sentences, never with the number of lines, and sentences can then be looked up in any order.
The reader modules are ``qe.decoder.nbest``, ``qe.decoder.trace`` and ``qe.decoder.search_graph``;
this package root holds only what they share.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Generic, Literal, TypeVar

from qe.infra.errors import QEInputError
from qe.infra.io import UTF8_BOM

T = TypeVar("T")

TruncatedPolicy = Literal["error", "drop"]
TRUNCATED_POLICIES = ("error", "drop")

Status = Literal["present", "empty", "missing"]


@dataclass
class LogIndex(Generic[T]):
    """Per-sentence statistics of one Moses log, keyed by Moses sentence id.

    ``dropped`` holds the ids whose entries were cut off by a truncated last line (only with
    ``truncated="drop"``); ``max_id`` is the largest id seen (``-1`` for a log with no entries).
    """

    path: Path
    kind: str
    stats: dict[int, T] = field(default_factory=dict)
    dropped: set[int] = field(default_factory=set)
    max_id: int = -1

    def __len__(self) -> int:
        return len(self.stats)

    def __contains__(self, sent_id: object) -> bool:
        return sent_id in self.stats

    def get(self, sent_id: int) -> T | None:
        """The statistics of one sentence, or ``None`` when the log has no entry for it."""
        return self.stats.get(sent_id)

    def status(self, sent_id: int) -> Status:
        """``present``; ``empty`` (no entry although later ids have one: Moses produced nothing for
        it); or ``missing`` (beyond the end of the log, negative, or lost to truncation)."""
        if sent_id in self.stats:
            return "present"
        if 0 <= sent_id <= self.max_id and sent_id not in self.dropped:
            return "empty"
        return "missing"

    def ids(self) -> list[int]:
        """The sentence ids that have an entry, in increasing order."""
        return sorted(self.stats)


class Truncated(Exception):
    """Internal signal: the file's last line has no newline (the file was cut off)."""

    def __init__(self, line: int):
        super().__init__(line)
        self.line = line


def check_truncated_policy(policy: str) -> None:
    """Refuse an unknown truncation policy with a clear message."""
    if policy not in TRUNCATED_POLICIES:
        raise QEInputError(f"truncated must be one of {', '.join(TRUNCATED_POLICIES)}, not {policy!r}")


def open_log(path: str | Path, kind: str) -> IO[bytes]:
    """Open a decoder log for binary streaming, positioned after a leading UTF-8 BOM; a missing,
    empty or not regular file (a directory, a device, a pipe) is refused with a clear error."""
    path = Path(path)
    if not path.exists():
        raise QEInputError(f"{kind} not found", path)
    if not path.is_file():
        raise QEInputError(f"{kind} is not a regular file", path)
    if path.stat().st_size == 0:
        raise QEInputError(f"{kind} is empty", path)
    handle = path.open("rb", buffering=1 << 20)
    if handle.peek(len(UTF8_BOM))[: len(UTF8_BOM)] == UTF8_BOM:
        handle.seek(len(UTF8_BOM))
    return handle


def decode_line(raw: bytes, path: Path, line: int) -> str:
    """Decode one line as strict UTF-8 (without its line break), naming file and line on failure."""
    try:
        return raw.decode("utf-8").rstrip("\r\n")
    except UnicodeDecodeError as exc:
        raise QEInputError(f"invalid UTF-8 at byte {exc.start}", path, line) from None


def truncated_error(path: Path, line: int, kind: str) -> QEInputError:
    """The error for a log whose last line was cut off (no final newline)."""
    return QEInputError(
        f"{kind} ends in an unfinished line (no newline at end of file): the file looks truncated; "
        "re-run Moses or accept missing values (missing='nan')",
        path,
        line,
    )


__all__ = [
    "TRUNCATED_POLICIES",
    "LogIndex",
    "Status",
    "Truncated",
    "TruncatedPolicy",
    "check_truncated_policy",
    "decode_line",
    "open_log",
    "truncated_error",
]


def iter_parsed_lines(
    path: str | Path, kind: str, parse: Callable[[str, int], T], truncated: str = "error"
) -> Iterator[T]:
    """Stream a log one parsed line at a time: ``parse(text, line)`` per line, parse errors and a
    truncated last line (no final newline) reported with file and line, or the latter skipped
    with ``truncated="drop"``."""
    check_truncated_policy(truncated)
    path = Path(path)
    with open_log(path, kind) as handle:
        for number, raw in enumerate(handle, 1):
            if not raw.endswith(b"\n"):
                if truncated == "drop":
                    return
                raise truncated_error(path, number, kind)
            try:
                yield parse(decode_line(raw, path, number), number)
            except ValueError as exc:
                raise QEInputError(str(exc), path, number) from None
