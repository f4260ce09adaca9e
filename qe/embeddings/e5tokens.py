"""The token head's input: a (source words, MT words) pair as one e5 input with a gap marker between
MT words, and where each word, gap and source word lies in it (MicroTransQuest's layout).

``<s> passage: s1 s2 ... </s></s> _ m1 _ m2 _ ... _ mN _ </s>``: the source behind the ``passage:``
prefix the sentence cross-encoder reads, then the MT with the gap marker ``_`` before the first word,
between words and after the last (N+1 gaps, as the WMT ``.tags`` have). ``_`` is MicroTransQuest's
marker; in the e5 (XLM-R) vocabulary it is the single piece ``▁_`` (id 101, a common piece) whether
it stands alone or not, so each gap is exactly one piece, whose last-layer vector is the gap's.

Each word is tokenized on its own (``content_ids``: its normalised form behind a metaspace), so its
pieces are known and never shared with a neighbour; a word always has at least one piece (a word that
normalises to nothing, such as U+FEFF alone, is the lone piece ``▁``). A word's vector is the **mean
of its pieces' vectors** rather than its first piece's (MicroTransQuest labels the first piece): in
XLM-R's vocabulary a word often starts with a lone ``▁`` piece (every CJK word not in the vocabulary
whole, ``柏格林`` -> ``▁ 柏 格 林``), which carries nothing of the word.

Inputs longer than the encoder's 512 positions are cut by whole words from the end, always from the
side with more pieces (the MT's gaps counted, the MT on a tie), the rule of ``truncate_pair`` at word
level. A cut MT word takes the gap before it along; the gap after the last kept MT word stays. Words
and gaps cut have no span (``-1``): their probability is NaN, which the word tagger takes as missing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from qe.embeddings.e5tokenizer import PASSAGE, E5Tokenizer

KINDS = ("target", "gaps", "source")
"""MT words, gaps, source words (``qe.wordmodel.features.KINDS``)."""
GAP_MARKER = "_"
GAP_PIECE = "\u2581_"
POOLING = "mean"
"""How a word's pieces make its vector (recorded in the model files)."""


@dataclass(frozen=True)
class TokenLayout:
    """One pair's token ids and, per kind, each slot's piece span ``[start, stop)`` in them (``(-1, -1)``
    for a slot cut off by the 512-token limit): ``target`` N rows, ``gaps`` N+1, ``source`` M."""

    ids: list[int]
    spans: dict[str, np.ndarray]

    def slots(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every kept slot, kinds in ``KINDS`` order: its kind index (0-2), its start and its stop."""
        kind, start, stop = [], [], []
        for index, name in enumerate(KINDS):
            spans = self.spans[name]
            kept = spans[spans[:, 0] >= 0]
            kind.append(np.full(len(kept), index, dtype=np.int64))
            start.append(kept[:, 0])
            stop.append(kept[:, 1])
        return np.concatenate(kind), np.concatenate(start), np.concatenate(stop)


def gap_id(tokenizer: E5Tokenizer) -> int:
    """The gap marker's piece id; an e5 vocabulary where ``_`` is not one piece is refused."""
    ids = tokenizer.content_ids(GAP_MARKER)
    if len(ids) != 1 or tokenizer.pieces[ids[0]] != GAP_PIECE:
        raise ValueError(f"the e5 vocabulary has no single piece {GAP_PIECE!r} for the gap marker")
    return ids[0]


def token_layout(tokenizer: E5Tokenizer, src: Sequence[str], mt: Sequence[str]) -> TokenLayout:
    """The input of one pair of token lists (see the module docstring), cut to ``tokenizer.max_tokens``."""
    prefix = tokenizer.content_ids(PASSAGE.rstrip())
    src_pieces = [tokenizer.content_ids(word) for word in src]
    mt_pieces = [tokenizer.content_ids(word) for word in mt]
    budget = tokenizer.max_tokens - 4 - len(prefix)  # <s>, </s></s>, </s>
    keep_src, keep_mt = _kept([len(p) for p in src_pieces], [len(p) for p in mt_pieces], budget)
    gap = gap_id(tokenizer)
    ids = [tokenizer.bos, *prefix]
    source = np.full((len(src), 2), -1, dtype=np.int64)
    for k in range(keep_src):
        source[k] = len(ids), len(ids) + len(src_pieces[k])
        ids += src_pieces[k]
    ids += [tokenizer.eos, tokenizer.eos]
    target = np.full((len(mt), 2), -1, dtype=np.int64)
    gaps = np.full((len(mt) + 1, 2), -1, dtype=np.int64)
    for k in range(keep_mt):
        gaps[k] = len(ids), len(ids) + 1
        ids.append(gap)
        target[k] = len(ids), len(ids) + len(mt_pieces[k])
        ids += mt_pieces[k]
    gaps[keep_mt] = len(ids), len(ids) + 1
    ids += [gap, tokenizer.eos]
    return TokenLayout(ids, {"target": target, "gaps": gaps, "source": source})


def _kept(src: list[int], mt: list[int], budget: int) -> tuple[int, int]:
    """How many source and MT words (from the start) fit ``budget`` pieces, the MT's gaps counted: the
    side with more pieces loses its last word until they fit (the MT on a tie)."""
    keep_src, keep_mt = len(src), len(mt)
    src_cost, mt_cost = sum(src), sum(mt) + len(mt) + 1
    while src_cost + mt_cost > budget:
        if keep_src and (src_cost > mt_cost or not keep_mt):
            keep_src -= 1
            src_cost -= src[keep_src]
        else:
            keep_mt -= 1
            mt_cost -= mt[keep_mt] + 1
    return keep_src, keep_mt


def pooling_rows(layout: TokenLayout) -> tuple[np.ndarray, np.ndarray]:
    """Per kept slot its kind index and its row of mean weights over the input's pieces, (slots,
    len(ids)) float32 (1 / pieces on the slot's own pieces, 0 elsewhere)."""
    kind, start, stop = layout.slots()
    rows = np.zeros((len(kind), len(layout.ids)), dtype=np.float32)
    for row, (a, b) in enumerate(zip(start.tolist(), stop.tolist(), strict=True)):
        rows[row, a:b] = np.float32(1.0 / (b - a))
    return kind, rows
