"""Clipped n-gram match counts of two sequences for all orders at once (BLEU words, chrF characters).

Per order n: the number of hypothesis n-grams that the reference also holds, each counted at most
as often as the reference holds it, i.e. the sum over distinct n-grams g of min(count_hyp(g),
count_ref(g)). For characters, symbols become dense ids packed into one int64 key per n-gram (id
bits per position, 3 bits for the order; no collision is possible) and one sort counts all orders
at once; short token lists are faster with Counters.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np

_ORDER_BITS = 3


def char_ids(hyp: str, ref: str) -> tuple[np.ndarray, np.ndarray, int]:
    """Dense ids (from 1) of the characters of two strings and the number of bits one id needs."""
    both = np.frombuffer((hyp + ref).encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    alphabet, inverse = np.unique(both, return_inverse=True)
    ids = inverse.astype(np.int64).reshape(-1) + 1
    return ids[: len(hyp)], ids[len(hyp) :], len(alphabet).bit_length()


def clipped_matches(hyp: np.ndarray, ref: np.ndarray, bits: int, max_order: int) -> list[int] | None:
    """Clipped match counts for orders 1..max_order (``None`` if the keys would not fit in int64)."""
    if bits * max_order + _ORDER_BITS + 1 > 63 or max_order >= 1 << _ORDER_BITS:
        return None
    if len(hyp) == 0 or len(ref) == 0:
        return [0] * max_order
    # One sort of both sides' keys, tagged with a side bit: each n-gram becomes one run holding its
    # hypothesis occurrences, then its reference occurrences.
    tagged = np.concatenate([_keys(hyp, bits, max_order) << 1, (_keys(ref, bits, max_order) << 1) | 1])
    tagged.sort()
    keys = tagged >> 1
    starts = np.empty(len(keys), dtype=bool)
    starts[0] = True
    np.not_equal(keys[1:], keys[:-1], out=starts[1:])
    run = np.cumsum(starts) - 1
    in_ref = np.bincount(run, weights=tagged & 1)
    matched = np.minimum(np.bincount(run) - in_ref, in_ref)
    orders = keys[starts] & ((1 << _ORDER_BITS) - 1)
    per_order = np.bincount(orders, weights=matched, minlength=max_order + 1)
    return [int(v) for v in per_order[1 : max_order + 1]]


def _keys(ids: np.ndarray, bits: int, max_order: int) -> np.ndarray:
    """One key per n-gram of every order: the ids packed high to low, then the order."""
    parts = []
    code = ids
    for n in range(1, max_order + 1):
        if n > 1:
            code = (code[:-1] << bits) | ids[n - 1 :]
        if len(code) == 0:
            break
        parts.append((code << _ORDER_BITS) | n)
    return np.concatenate(parts)


def clipped_matches_counter(hyp: Sequence, ref: Sequence, max_order: int) -> list[int]:
    """The same counts with Counters of n-gram tuples (faster for short token lists)."""
    matches = []
    for n in range(1, max_order + 1):
        h = Counter(zip(*[hyp[k:] for k in range(n)], strict=False))
        r = Counter(zip(*[ref[k:] for k in range(n)], strict=False))
        common = h.keys() & r.keys()
        matches.append(sum(map(min, map(h.__getitem__, common), map(r.__getitem__, common))))
    return matches


def char_ngram_matches(hyp: str, ref: str, max_order: int) -> list[int]:
    """Clipped character n-gram match counts for orders 1..max_order of two strings."""
    if not hyp or not ref:
        return [0] * max_order
    matches = clipped_matches(*char_ids(hyp, ref), max_order)
    return clipped_matches_counter(hyp, ref, max_order) if matches is None else matches
