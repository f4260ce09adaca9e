"""How many entries a per-word or per-sentence memo keeps before it empties itself.

A batch run keeps many (each distinct word computed once); a long-running service caps them all
(``qe serve``), so that its memory stops growing with the distinct words it has seen. Every memo of
qe that outlives a request calls :func:`make_room` before it grows. Imports nothing of qe.
"""

from __future__ import annotations

_cap: int | None = None


def memo_limit(own: int) -> int:
    """A memo's size limit: ``own`` (its batch-run limit), or this process's cap when lower."""
    return own if _cap is None else min(own, _cap)


def make_room(memo: dict, own: int, adding: int = 1) -> None:
    """Empty ``memo`` when ``adding`` more entries would take it past :func:`memo_limit` of ``own``."""
    if len(memo) + adding > memo_limit(own):
        memo.clear()


def cap_memos(entries: int | None) -> None:
    """Cap every memo of this process at ``entries`` (None: each memo's own limit)."""
    global _cap
    if entries is not None and (not isinstance(entries, int) or entries < 1):
        raise ValueError(f"a memo cap is a positive number of entries, got {entries!r}")
    _cap = entries
