"""Small word-level sets written as letters: each row (src, mt, MT tags, gap tags, source tags), one
letter a tag, ``B`` for BAD and ``G`` for OK."""

from __future__ import annotations

from pathlib import Path

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


def predict_words_args(model: Path, src: Path, mt: Path, out: Path | None = None) -> list[str]:
    """``qe predict --words`` arguments (for ``qe.cli.main``), writing to ``out`` when given."""
    args = ["predict", "--words", "--model", str(model), "--src", str(src), "--mt", str(mt)]
    return [*args, "--out", str(out)] if out is not None else args
