"""One sentence's word-level tags: MT words, the gaps around them, source words; and the WMT
``.tags`` line that interleaves gaps and MT words (2N+1 tags for N MT tokens, gap first and last)."""

from __future__ import annotations

from dataclasses import dataclass

OK = "OK"
BAD = "BAD"
TAGS = (OK, BAD)


@dataclass(frozen=True)
class SentenceTags:
    """``mt``: one tag per MT token; ``gaps``: one per gap, ``len(mt) + 1`` (gap ``k`` stands before
    MT token ``k``); ``src``: one per source token (empty when the source is not tagged)."""

    mt: tuple[str, ...]
    gaps: tuple[str, ...]
    src: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if len(self.gaps) != len(self.mt) + 1:
            raise ValueError(f"{len(self.mt)} MT tags need {len(self.mt) + 1} gap tags, not {len(self.gaps)}")

    def interleaved(self) -> tuple[str, ...]:
        """The ``.tags`` order: gap, word, gap, ..., word, gap."""
        out = [self.gaps[0]]
        for word, gap in zip(self.mt, self.gaps[1:], strict=True):
            out += [word, gap]
        return tuple(out)


def split_interleaved(tags: list[str] | tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(MT-word tags, gap tags) of a ``.tags`` line's 2N+1 tags: words at odd positions, gaps at even."""
    if len(tags) % 2 != 1:
        raise ValueError(f"an interleaved tags line has an odd count (2N+1), not {len(tags)}")
    return tuple(tags[1::2]), tuple(tags[0::2])
