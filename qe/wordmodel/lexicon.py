"""IBM1 alignments of a sentence both ways, for word features: each MT word's most probable source
word under t(mt | src) and each source word's most probable MT word under t(src | mt), with the
probability of that link. The two tables are trained on the training split's own source and MT
(lowercased; the tags play no part, so nothing leaks from them)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from qe.words.ibm1 import NULL, IBM1Table


@dataclass(frozen=True)
class SentenceLinks:
    """``mt_to_src[j]``: source index of MT word j (-1 = NULL), ``mt_prob[j]`` its t(mt_j | src);
    ``src_to_mt[i]`` and ``src_prob[i]`` the same the other way, t(src_i | mt)."""

    mt_to_src: np.ndarray
    mt_prob: np.ndarray
    src_to_mt: np.ndarray
    src_prob: np.ndarray


@dataclass(frozen=True)
class Lexicon:
    """t(mt | src) (``s2t``) and t(src | mt) (``t2s``)."""

    s2t: IBM1Table
    t2s: IBM1Table

    @classmethod
    def train(cls, src: list[list[str]], mt: list[list[str]], iterations: int = 5) -> Lexicon:
        """Both tables from the sentence pairs with two non-empty sides, lowercased."""
        pairs = [(_lower(s), _lower(t)) for s, t in zip(src, mt, strict=True) if s and t]
        low_src, low_mt = [s for s, _ in pairs], [t for _, t in pairs]
        return cls(IBM1Table.train(low_src, low_mt, iterations), IBM1Table.train(low_mt, low_src, iterations))

    def links(self, src: list[str], mt: list[str]) -> SentenceLinks:
        """The Viterbi links of one sentence both ways (an empty side links everything to NULL)."""
        low_src, low_mt = _lower(src), _lower(mt)
        mt_to_src, mt_prob = _viterbi(self.s2t, low_src, low_mt)
        src_to_mt, src_prob = _viterbi(self.t2s, low_mt, low_src)
        return SentenceLinks(mt_to_src, mt_prob, src_to_mt, src_prob)


def _viterbi(table: IBM1Table, given: list[str], words: list[str]) -> tuple[np.ndarray, np.ndarray]:
    links = table.viterbi_alignment(given, words)
    probs = [table.prob(given[i] if i >= 0 else NULL, w) for i, w in zip(links, words, strict=True)]
    return np.asarray(links, dtype=np.int64), np.asarray(probs, dtype=np.float64)


def _lower(tokens: list[str]) -> list[str]:
    # lowercased, no token can be spelled as the tables' reserved empty word NULL
    return [w.lower() for w in tokens]
