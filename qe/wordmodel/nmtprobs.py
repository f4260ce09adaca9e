"""The NMT model's own log-probabilities per MT *word*: glass-box input of the word tagger.

MLQE-PE ships, per pair and split, the MT in the NMT model's subword pieces (``word-probas/mt.*``,
BPE with ``@@`` continuation marks, or SentencePiece with ``▁`` word starts) and one natural-log
probability per piece plus one for ``</s>`` (``word-probas/word_probas.*``; every train and dev line
of the seven pairs holds exactly one value more than pieces). The word-level MT (``post-editing/*.mt``) is the
same translation tokenized differently: Moses escapes in the pieces (``&quot;``, ``&apos;``,
``@-@`` for an inner hyphen) and, for en-zh, another Chinese segmentation (``柏@@ 格@@ 林`` against
``柏 格林``). Pieces are therefore mapped to words by *character offsets*: both sides are reduced
to their characters without spaces, piece marks dropped and escapes unescaped, and a word takes
every piece that covers one of its characters (a piece straddling two words goes to both). When
the two character strings still differ (the NMT output and the word-level MT are not the same text:
25 lines of ru-en's train and dev; en-zh train line 6778 ends in a dangling ``@@``), they are aligned
with ``difflib`` and a word whose characters match no piece has no value (NaN features).

:func:`read_word_probas` reads and checks a pair of files (line counts equal, one value per piece
plus one, each value a finite log-probability); the first fault is one ``QEInputError`` naming file
and line. :func:`word_logprobs` maps them onto the word-level MT; :func:`load_word_logprobs` does
both for a registered MLQE-PE split (files located, and fetched with their checksum, by the
dataset registry, roles ``nmt_tokens`` and ``nmt_logprobs``).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from qe.data.fetch import ensure_file, resolve_data_dir
from qe.data.registry import registered_dataset
from qe.infra.errors import QEInputError
from qe.infra.io import read_lines
from qe.nmt import parse_logprobs

WORD_COLUMNS = ("sum", "min", "mean", "pieces")
"""Per MT word: the sum, lowest and mean log-probability of its pieces, and how many it has."""
SENTENCE_COLUMNS = ("mean", "min", "eos")
"""Per sentence: the mean and lowest piece log-probability (without ``</s>``) and that of ``</s>``."""

ESCAPES = {
    "&quot;": '"',
    "&apos;": "'",
    "&amp;": "&",
    "&lt;": "<",
    "&gt;": ">",
    "&#91;": "[",
    "&#93;": "]",
    "&#124;": "|",
    "@-@": "-",
}
"""Moses tokenizer escapes (and its aggressive hyphen split) as they appear in the pieces."""
_ESCAPE = re.compile("|".join(re.escape(key) for key in ESCAPES))
BPE_MARK, SP_MARK = "@@", "\u2581"


@dataclass(frozen=True)
class PieceLine:
    """One sentence of the NMT output: its pieces and their log-probabilities (one more, ``</s>``)."""

    pieces: list[str]
    logprobs: np.ndarray


@dataclass
class MappingStats:
    """How well the pieces matched the word-level MT: ``lines_differ`` lines whose joined pieces are
    not token for token the MT, ``tokens_differ`` MT tokens not spelt by exactly one joined word,
    ``lines_realigned`` lines whose characters differ even after unescaping (aligned by ``difflib``),
    ``words_unmapped`` MT words left without a piece."""

    lines: int = 0
    tokens: int = 0
    lines_differ: int = 0
    tokens_differ: int = 0
    lines_realigned: int = 0
    words_unmapped: int = 0

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class WordLogprobs:
    """``words[k]``: sentence k's (N words x ``WORD_COLUMNS``) array (NaN and 0 pieces for a word
    without a piece); ``sentence``: (sentences x ``SENTENCE_COLUMNS``)."""

    words: list[np.ndarray]
    sentence: np.ndarray
    stats: MappingStats = field(default_factory=MappingStats)

    def __len__(self) -> int:
        return len(self.words)


def read_word_probas(tokens: str | Path, logprobs: str | Path) -> list[PieceLine]:
    """Read the pieces and log-probability files, checked line by line (one value per piece + 1)."""
    piece_lines = read_lines(tokens)
    value_lines = read_lines(logprobs)
    if len(value_lines) != len(piece_lines):
        raise QEInputError(
            f"has {len(value_lines)} lines but {tokens} has {len(piece_lines)}: the files must align "
            "line by line",
            logprobs,
            min(len(value_lines), len(piece_lines)) + 1,
        )
    out = []
    for number, (text, values) in enumerate(zip(piece_lines, value_lines, strict=True), start=1):
        pieces = text.split()
        try:
            parsed = parse_logprobs(values)
        except ValueError as exc:
            raise QEInputError(str(exc), logprobs, number) from None
        if len(parsed) != len(pieces) + 1:
            raise QEInputError(
                f"{len(parsed)} log-probabilities for {len(pieces)} pieces (expected one per piece "
                "and one for </s>)",
                logprobs,
                number,
            )
        out.append(PieceLine(pieces, parsed))
    return out


def _characters(texts: list[str], strip_marks: bool) -> tuple[str, np.ndarray]:
    """The texts' characters run together (piece marks dropped if asked, escapes unescaped) and,
    for each character, the index of the text it came from."""
    chars: list[str] = []
    owner: list[int] = []
    for index, text in enumerate(texts):
        if strip_marks:
            text = text.removesuffix(BPE_MARK).replace(SP_MARK, "")
        chars.append(text)
        owner += [index] * len(text)
    raw, owner_raw = "".join(chars), np.array(owner, dtype=np.int64)
    keep, out = [], []
    last = 0
    for match in _ESCAPE.finditer(raw):
        out.append(raw[last : match.start()])
        keep += range(last, match.start())
        out.append(ESCAPES[match.group()])
        keep.append(match.start())
        last = match.end()
    out.append(raw[last:])
    keep += range(last, len(raw))
    return "".join(out), owner_raw[np.array(keep, dtype=np.int64)]


def _joined_words(pieces: list[str]) -> list[str]:
    """The pieces joined into the NMT's words (``@@`` continues a word, ``▁`` starts one)."""
    if any(SP_MARK in piece for piece in pieces):
        return "".join(pieces).replace(SP_MARK, " ").split()
    return " ".join(pieces).replace(BPE_MARK + " ", "").split()


def map_pieces(pieces: list[str], words: list[str]) -> tuple[list[list[int]], bool]:
    """For each word, the indices of the pieces covering its characters; and whether the two
    character strings had to be aligned (they differ even after unescaping)."""
    piece_chars, piece_owner = _characters(pieces, strip_marks=True)
    word_chars, word_owner = _characters(words, strip_marks=False)
    covered: list[set[int]] = [set() for _ in words]
    if piece_chars == word_chars:
        for word, piece in zip(word_owner.tolist(), piece_owner.tolist(), strict=True):
            covered[word].add(piece)
        realigned = False
    else:
        matcher = difflib.SequenceMatcher(None, word_chars, piece_chars, autojunk=False)
        for a, b, size in matcher.get_matching_blocks():
            for i in range(size):
                covered[int(word_owner[a + i])].add(int(piece_owner[b + i]))
        realigned = True
    return [sorted(pieces_of) for pieces_of in covered], realigned


def word_logprobs(lines: list[PieceLine], mt: list[list[str]], where: str | Path = "") -> WordLogprobs:
    """Each MT word's ``WORD_COLUMNS`` from its pieces, and each sentence's ``SENTENCE_COLUMNS``;
    ``mt`` is the word-level MT (as many sentences as ``lines``; ``where`` names it in an error)."""
    if len(lines) != len(mt):
        raise QEInputError(
            f"{len(lines)} lines of NMT log-probabilities for {len(mt)} MT sentences",
            where or None,
            min(len(lines), len(mt)) + 1,
        )
    stats = MappingStats(lines=len(mt))
    words_out, sentence = [], np.full((len(mt), len(SENTENCE_COLUMNS)), np.nan)
    for k, (line, words) in enumerate(zip(lines, mt, strict=True)):
        pieces_of, realigned = map_pieces(line.pieces, words)
        joined = _joined_words(line.pieces)
        stats.tokens += len(words)
        if joined != words:
            stats.lines_differ += 1
            stats.tokens_differ += _tokens_differ(joined, words)
        stats.lines_realigned += realigned
        values = line.logprobs[:-1]
        table = np.full((len(words), len(WORD_COLUMNS)), np.nan)
        for w, indices in enumerate(pieces_of):
            if indices:
                mine = values[indices]
                table[w] = (mine.sum(), mine.min(), mine.mean(), len(indices))
            else:
                table[w, 3] = 0.0
                stats.words_unmapped += 1
        words_out.append(table)
        if len(values):
            sentence[k] = (values.mean(), values.min(), line.logprobs[-1])
        else:
            sentence[k, 2] = line.logprobs[-1]
    return WordLogprobs(words_out, sentence, stats)


def _tokens_differ(joined: list[str], words: list[str]) -> int:
    """MT tokens not spelt, at the same (unescaped) character offset, by one of the joined NMT words."""

    def spans(tokens: list[str]) -> set[tuple[int, str]]:
        out, offset = set(), 0
        for token in tokens:
            out.add((offset, token))
            offset += len(_ESCAPE.sub(lambda match: ESCAPES[match.group()], token))
        return out

    return len(spans(words) - spans(joined))


def read_word_logprobs(tokens: str | Path, logprobs: str | Path, mt: list[list[str]]) -> WordLogprobs:
    """:func:`read_word_probas` then :func:`word_logprobs` onto the word-level MT ``mt``."""
    return word_logprobs(read_word_probas(tokens, logprobs), mt, logprobs)


def load_word_logprobs(
    pair: str, split: str, mt: list[list[str]], data_dir: str | Path | None = None
) -> WordLogprobs:
    """The per-word NMT log-probabilities of a split of ``mlqe-pe/<pair>``, mapped onto its
    word-level MT ``mt`` (``load_word_level(pair, split).mt``)."""
    dataset = registered_dataset(f"mlqe-pe/{pair}")
    split = dataset.split_name(split)
    root = resolve_data_dir(data_dir)
    entries = dataset.splits[split]
    path = {role: ensure_file(dataset, entries[role], root) for role in ("nmt_tokens", "nmt_logprobs")}
    return read_word_logprobs(path["nmt_tokens"], path["nmt_logprobs"], mt)
