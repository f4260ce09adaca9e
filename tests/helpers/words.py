"""Small word-level sets written as letters: each row (src, mt, MT tags, gap tags, source tags), one
letter a tag, ``B`` for BAD and ``G`` for OK."""

from __future__ import annotations

from qe.words.files import WordLevelData

B, G = "BAD", "OK"


def lettered(rows: list[tuple[str, str, str, str, str]]) -> WordLevelData:
    """A tagged :class:`WordLevelData` from rows of (src, mt, MT tags, gap tags, source tags)."""
    tag = {"B": B, "G": G}
    return WordLevelData(
        src=[r[0].split() for r in rows],
        mt=[r[1].split() for r in rows],
        mt_tags=[tuple(tag[c] for c in r[2]) for r in rows],
        gap_tags=[tuple(tag[c] for c in r[3]) for r in rows],
        src_tags=[tuple(tag[c] for c in r[4]) for r in rows],
    )
