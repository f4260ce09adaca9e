"""Reading word-level QE files: tokenised source and MT, and any of the WMT ``.tags`` (gaps and MT
words interleaved), ``.source_tags``, ``.src-mt.alignments`` and post-edits, from any paths (a
user's own files) or from a registered MLQE-PE split.

Every file is checked whole before anything is returned: strict UTF-8, one line per sentence in
every file, 2N+1 tags for N MT tokens, N source tags for N source tokens, only OK / BAD, alignment
pairs ``i-j`` inside both sentences. The first fault is one ``QEInputError`` naming file and line.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from qe.data.fetch import ensure_file, resolve_data_dir
from qe.data.registry import registered_dataset
from qe.data.sets.wmt20_mlqe import WORD_LEVEL
from qe.infra.errors import QEInputError
from qe.infra.io import read_lines
from qe.words.tags import TAGS, split_interleaved


@dataclass(frozen=True)
class WordLevelData:
    """Token lists per sentence, and whichever of the tags, alignments and post-edits were read
    (None when not given). ``alignments[k]`` holds 0-based (source, MT) token index pairs."""

    src: list[list[str]]
    mt: list[list[str]]
    mt_tags: list[tuple[str, ...]] | None = None
    gap_tags: list[tuple[str, ...]] | None = None
    src_tags: list[tuple[str, ...]] | None = None
    alignments: list[tuple[tuple[int, int], ...]] | None = None
    post_edits: list[list[str]] | None = None
    files: dict[str, str] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.src)


def read_word_level(
    src: str | Path,
    mt: str | Path,
    *,
    tags: str | Path | None = None,
    source_tags: str | Path | None = None,
    alignments: str | Path | None = None,
    post_edits: str | Path | None = None,
) -> WordLevelData:
    """Read and check line-aligned word-level files (one tokenised sentence or tags line per line)."""
    src_tokens = [line.split() for line in read_lines(src)]
    mt_tokens = [line.split() for line in read_lines(mt)]
    _same_count(src, len(src_tokens), mt, len(mt_tokens))
    files = {"src": str(src), "mt": str(mt)}
    mt_tags = gap_tags = src_tags = pairs = pe_tokens = None
    if tags is not None:
        lines = _tag_lines(tags, src, len(src_tokens), [2 * len(words) + 1 for words in mt_tokens], "2N+1")
        mt_tags, gap_tags = [], []
        for line in lines:
            words, gaps = split_interleaved(line)
            mt_tags.append(words)
            gap_tags.append(gaps)
        files["tags"] = str(tags)
    if source_tags is not None:
        src_tags = _tag_lines(source_tags, src, len(src_tokens), [len(words) for words in src_tokens], "N")
        files["source_tags"] = str(source_tags)
    if alignments is not None:
        pairs = _alignments(alignments, src, src_tokens, mt_tokens)
        files["alignments"] = str(alignments)
    if post_edits is not None:
        pe_tokens = [line.split() for line in read_lines(post_edits)]
        _same_count(src, len(src_tokens), post_edits, len(pe_tokens))
        files["post_edits"] = str(post_edits)
    return WordLevelData(src_tokens, mt_tokens, mt_tags, gap_tags, src_tags, pairs, pe_tokens, files)


def load_word_level(pair: str, split: str, data_dir: str | Path | None = None) -> WordLevelData:
    """The word-level files of a split of ``mlqe-pe/<pair>`` (``train``, ``dev``, ``test20``/``test``),
    fetched when absent, read and checked by :func:`read_word_level`."""
    dataset = registered_dataset(f"mlqe-pe/{pair}")
    split = dataset.split_name(split)
    root = resolve_data_dir(data_dir)
    entries = dataset.splits[split]
    path = {
        role: ensure_file(dataset, entries[role], root) for role in ("src", "mt", "post_edits", *WORD_LEVEL)
    }
    return read_word_level(
        path["src"],
        path["mt"],
        tags=path["word_tags"],
        source_tags=path["source_tags"],
        alignments=path["src_mt_alignments"],
        post_edits=path["post_edits"],
    )


def _same_count(first: str | Path, first_len: int, path: str | Path, length: int) -> None:
    """Refuse a file whose line count differs from the source's, at the first unmatched line."""
    if length != first_len:
        raise QEInputError(
            f"has {length} lines but {first} has {first_len}: word-level files must align line by line",
            path,
            min(length, first_len) + 1,
        )


def _tag_lines(
    path: str | Path, src: str | Path, count: int, expected: list[int], rule: str
) -> list[tuple[str, ...]]:
    """Each line's tags, checked: only OK / BAD, and as many as ``expected`` says for that line."""
    lines = read_lines(path)
    _same_count(src, count, path, len(lines))
    out = []
    for number, (line, want) in enumerate(zip(lines, expected, strict=True), start=1):
        tags = tuple(line.split())
        unknown = next((tag for tag in tags if tag not in TAGS), None)
        if unknown is not None:
            raise QEInputError(f"unknown tag {unknown[:40]!r} (expected OK or BAD)", path, number)
        if len(tags) != want:
            raise QEInputError(
                f"{len(tags)} tags where {rule} = {want} are expected for this sentence", path, number
            )
        out.append(tags)
    return out


def _alignments(
    path: str | Path, src: str | Path, src_tokens: list[list[str]], mt_tokens: list[list[str]]
) -> list[tuple[tuple[int, int], ...]]:
    """Each line's ``i-j`` pairs, checked: two non-negative integers, inside both sentences."""
    lines = read_lines(path, allow_empty_lines=True)
    _same_count(src, len(src_tokens), path, len(lines))
    out = []
    for number, line in enumerate(lines, start=1):
        n_src, n_mt = len(src_tokens[number - 1]), len(mt_tokens[number - 1])
        pairs = []
        for item in line.split():
            left, dash, right = item.partition("-")
            if not (dash and left.isascii() and left.isdigit() and right.isascii() and right.isdigit()):
                raise QEInputError(f"malformed alignment {item[:40]!r} (expected i-j, 0-based)", path, number)
            i, j = int(left), int(right)
            if i >= n_src or j >= n_mt:
                raise QEInputError(
                    f"alignment {item} out of range: the source has {n_src} tokens, the MT {n_mt}",
                    path,
                    number,
                )
            pairs.append((i, j))
        out.append(tuple(pairs))
    return out
