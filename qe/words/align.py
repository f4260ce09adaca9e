"""The TER alignment of an MT sentence to its post-edit without shifts: a minimum word edit distance
(unit costs for substitution, insertion, deletion), case-insensitive, as ``tercom -d 0`` computes it
for the WMT word-level tags.

Among equally cheap alignments one is chosen the way tercom (and sacreBLEU's port of it) reads its
trace: backwards from the last cell, preferring a match or substitution, then the deletion of an MT
word, then the insertion of a post-edit word. So where a run of edits could put an inserted word
before or after a substituted one, the substitution takes the later word and the insertions come
first: the gap tagged BAD is the one before the substituted MT word, as in the shipped MLQE-PE tags.
tercom's beam (20 cells around the diagonal) is not applied: the alignment here is the exact minimum.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class EditAlignment:
    """Where each MT word and each post-edit word went.

    ``mt_to_pe[i]`` is the post-edit word MT word ``i`` is matched or substituted with, or -1 when it
    is deleted; ``matched[i]`` says whether that pair is equal (case-insensitively);
    ``insertions[k]`` counts the post-edit words inserted in gap ``k`` (before MT word ``k``; gap
    ``N`` is after the last). ``cost`` is the number of edits.
    """

    mt_to_pe: tuple[int, ...]
    matched: tuple[bool, ...]
    insertions: tuple[int, ...]
    cost: int


def edit_distance_matrix(mt: list[str], pe: list[str]) -> np.ndarray:
    """``D[i, j]``: the fewest edits turning ``mt[:i]`` into ``pe[:j]`` (words compared as given).

    Row by row in numpy: the diagonal and vertical moves are elementwise, and the horizontal
    (insertion) chain ``D[i, j] = min_k (T[k] + j - k)`` is a running minimum of ``T - arange``.
    """
    n, m = len(mt), len(pe)
    ids: dict[str, int] = {}
    pe_ids = np.array([ids.setdefault(w, len(ids)) for w in pe], dtype=np.int64)
    steps = np.arange(m + 1, dtype=np.int64)
    table = np.empty((n + 1, m + 1), dtype=np.int64)
    table[0] = steps
    for i, word in enumerate(mt, start=1):
        prev = table[i - 1]
        best = np.empty(m + 1, dtype=np.int64)
        best[0] = prev[0] + 1
        best[1:] = np.minimum(prev[:-1] + (pe_ids != ids.get(word, -1)), prev[1:] + 1)
        table[i] = np.minimum.accumulate(best - steps) + steps
    return table


def align_to_post_edit(mt: list[str], pe: list[str], case_sensitive: bool = False) -> EditAlignment:
    """The shift-free TER alignment of MT tokens to post-edit tokens, ties broken as tercom does."""
    a = mt if case_sensitive else [w.lower() for w in mt]
    b = pe if case_sensitive else [w.lower() for w in pe]
    table = edit_distance_matrix(a, b)
    mt_to_pe = [-1] * len(a)
    matched = [False] * len(a)
    insertions = [0] * (len(a) + 1)
    i, j = len(a), len(b)
    while i > 0 or j > 0:
        here = table[i, j]
        if i > 0 and j > 0 and table[i - 1, j - 1] + (a[i - 1] != b[j - 1]) == here:
            i, j = i - 1, j - 1
            mt_to_pe[i] = j
            matched[i] = a[i] == b[j]
        elif i > 0 and table[i - 1, j] + 1 == here:
            i -= 1  # MT word deleted
        else:
            j -= 1  # post-edit word inserted after MT word i - 1: gap i
            insertions[i] += 1
    return EditAlignment(tuple(mt_to_pe), tuple(matched), tuple(insertions), int(table[-1, -1]))
