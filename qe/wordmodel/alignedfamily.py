"""The word ``aligned`` family: what the user's own source-MT word alignments say (MLQE-PE's
``.src-mt.alignments``, or any aligner's ``i-j`` lines), for users who have them when they tag.

The core family links words by IBM1 trained on the training split; an aligner such as SimAlign
(which made MLQE-PE's) links them better, and the gold source tags were made through an alignment.
This family reads the data's alignments of each set, so a model with it needs them at prediction
time too (``qe predict --words --alignments``); it refuses a set without them in one line.

- **MT word**: how many source words it is aligned to (0: nothing in the source asked for it), whether
  the IBM1 link agrees with one of them, its distortion (relative position against the mean of its
  source words', NaN when unaligned), the most MT words one of its source words is aligned to, and
  the cross-fitted BAD rate and log count of its (aligned source words, MT word) pair.
- **Gap**: whether the MT words on each side are unaligned (NaN at the ends), and how many unaligned
  source words lie between the source words aligned to the nearest aligned MT word on its left and
  those of the nearest on its right: an untranslated stretch the gap may be missing.
- **Source word**: the same counts, agreement, distortion and fan-out the other way, its (source word,
  aligned MT words) pair's cross-fitted rate and log count, the highest pair rate among its aligned
  MT words (a source word is BAD when an MT word it is aligned to was substituted) and, with the NMT
  log-probabilities, its aligned MT words' lowest piece and mean log-probability (else 0).
- Every row: the sentence's share of unaligned source words and of unaligned MT words.

Pair keys are lowercased, the aligned words joined by spaces in sentence order (the empty string for
none), the two sides tab-joined; rates are counted as the ``edits`` family counts its IBM1 pairs
(``qe.wordmodel.editsfamily``): a training row's from the other folds, any other set's from all of
training.
"""

from __future__ import annotations

from functools import partial

import numpy as np

from qe.infra.errors import QEInputError
from qe.wordmodel.editsfamily import cross_fitted_rates, load_tables, save_tables
from qe.wordmodel.family import Columns, Family, FamilyInput
from qe.wordmodel.lexicon import SentenceLinks
from qe.wordmodel.typerates import TypeRates

SENTENCE = ("al_src_unaligned_share", "al_mt_unaligned_share")
COLUMNS = {
    "target": (
        *("al_src_count", "al_unaligned", "al_ibm1_agrees", "al_distortion", "al_src_fanout"),
        *("al_pair_rate", "al_pair_seen_log", *SENTENCE),
    ),
    "gaps": ("al_left_unaligned", "al_right_unaligned", "al_skipped_src", *SENTENCE),
    "source": (
        *("al_mt_count", "al_unaligned", "al_ibm1_agrees", "al_distortion", "al_mt_fanout"),
        *("al_pair_rate", "al_pair_seen_log", "al_max_mt_pair_rate", "al_mt_nmt_min", "al_mt_nmt_mean"),
        *SENTENCE,
    ),
}
TABLES = {"target": "mt_pair", "source": "src_pair"}


def _neighbours(alignment: tuple[tuple[int, int], ...], n_src: int, n_mt: int) -> tuple[list, list]:
    """Per source word its aligned MT indices, per MT word its aligned source indices, sorted."""
    to_mt: list[list[int]] = [[] for _ in range(n_src)]
    to_src: list[list[int]] = [[] for _ in range(n_mt)]
    for i, j in sorted(set(alignment)):
        to_mt[i].append(j)
        to_src[j].append(i)
    return to_mt, to_src


def _key(words: list[str], at: list[int], word: str) -> str:
    return " ".join(words[k] for k in at) + "\t" + word


def pair_keys(inp: FamilyInput) -> dict[str, list[str]]:
    """Each MT word's (aligned source words, MT word) key and each source word's (source word,
    aligned MT words) key, lowercased."""
    alignments = _alignments(inp)
    keys: dict[str, list[str]] = {"target": [], "source": []}
    for src, mt, alignment in zip(inp.data.src, inp.data.mt, alignments, strict=True):
        low_src, low_mt = [w.lower() for w in src], [w.lower() for w in mt]
        to_mt, to_src = _neighbours(alignment, len(src), len(mt))
        keys["target"] += [_key(low_src, to_src[j], w) for j, w in enumerate(low_mt)]
        keys["source"] += [w + "\t" + " ".join(low_mt[j] for j in to_mt[i]) for i, w in enumerate(low_src)]
    return keys


def _alignments(inp: FamilyInput) -> list[tuple[tuple[int, int], ...]]:
    if inp.data.alignments is None:
        raise QEInputError(
            "the aligned word family reads source-MT alignments: give them for every split "
            "(alignments = ... in [words], --alignments for qe predict --words)"
        )
    return list(inp.data.alignments)


def _pairs(alignment: tuple[tuple[int, int], ...]) -> tuple[np.ndarray, np.ndarray]:
    """The distinct (source, MT) links of a sentence as two index arrays, sorted."""
    links = np.array(sorted(set(alignment)), dtype=np.int64).reshape(-1, 2)
    return links[:, 0], links[:, 1]


def _side(own: np.ndarray, other: np.ndarray, n_self: int, n_other: int, ibm1: np.ndarray) -> np.ndarray:
    """Count, unaligned flag, IBM1 agreement, distortion and fan-out of one side's words, from the
    links' indices on this side (``own``) and the other (``other``)."""
    count = np.bincount(own, minlength=n_self).astype(np.float64)
    agrees = np.zeros(n_self)
    agrees[own[other == np.asarray(ibm1, dtype=np.int64)[own]]] = 1.0
    widest = np.zeros(n_self)
    np.maximum.at(widest, own, np.bincount(other, minlength=n_other)[other].astype(np.float64))
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = np.bincount(own, weights=other, minlength=n_self) / count
        place = (np.arange(n_self) + 0.5) / n_self - (mean + 0.5) / n_other
    distortion = np.where(count > 0, np.abs(place), np.nan)
    return np.column_stack([count, (count == 0).astype(np.float64), agrees, distortion, widest])


def _skipped(src_at: np.ndarray, mt_at: np.ndarray, n_src: int, n_mt: int) -> np.ndarray:
    """Per gap (N + 1), the unaligned source words between the nearest aligned MT words around it."""
    last = np.full(n_mt, -1, dtype=np.int64)  # each MT word's last and first aligned source index
    first = np.full(n_mt, n_src, dtype=np.int64)
    np.maximum.at(last, mt_at, src_at)
    np.minimum.at(first, mt_at, src_at)
    aligned = np.bincount(mt_at, minlength=n_mt) > 0
    left_bound = np.full(n_mt + 1, -1, dtype=np.int64)  # the last source index aligned on the left
    for g in range(1, n_mt + 1):
        left_bound[g] = last[g - 1] if aligned[g - 1] else left_bound[g - 1]
    right_bound = np.full(n_mt + 1, n_src, dtype=np.int64)  # the first source index aligned on the right
    for g in range(n_mt - 1, -1, -1):
        right_bound[g] = first[g] if aligned[g] else right_bound[g + 1]
    unaligned = np.bincount(src_at, minlength=n_src) == 0
    before = np.r_[0, np.cumsum(unaligned)]  # unaligned source words before index i
    low, high = left_bound + 1, np.maximum(right_bound, left_bound + 1)
    return (before[high] - before[low]).astype(np.float64)


def sentence_columns(
    src: list[str], mt: list[str], alignment: tuple[tuple[int, int], ...], links: SentenceLinks
) -> Columns:
    """One sentence's columns of every kind but the pair rates (which need the training counts)."""
    n, m = len(mt), len(src)
    src_at, mt_at = _pairs(alignment)
    target = _side(mt_at, src_at, n, m, links.mt_to_src)
    source = _side(src_at, mt_at, m, n, links.src_to_mt)
    common = np.array(
        [source[:, 1].mean() if m else 0.0, target[:, 1].mean() if n else 0.0], dtype=np.float64
    )
    left = np.r_[np.nan, target[:, 1]]
    right = np.r_[target[:, 1], np.nan]
    gaps = np.column_stack([left, right, _skipped(src_at, mt_at, m, n), np.tile(common, (n + 1, 1))])
    return {
        "target": np.column_stack([target, np.tile(common, (n, 1))]).reshape(n, 7),
        "gaps": gaps.reshape(n + 1, len(COLUMNS["gaps"])),
        "source": np.column_stack([source, np.tile(common, (m, 1))]).reshape(m, 7),
    }


def _columns(inp: FamilyInput, rates: dict[str, tuple[np.ndarray, np.ndarray]]) -> Columns:
    alignments = _alignments(inp)
    parts = [
        sentence_columns(src, mt, alignment, links)
        for src, mt, alignment, links in zip(inp.data.src, inp.data.mt, alignments, inp.links, strict=True)
    ]
    base = {
        kind: np.concatenate([p[kind] for p in parts]) if parts else np.zeros((0, 7))
        for kind in ("target", "source")
    }
    gaps = np.concatenate([p["gaps"] for p in parts]) if parts else np.zeros((0, len(COLUMNS["gaps"])))
    mt_rate, mt_seen = rates["target"]
    src_rate, src_seen = rates["source"]
    highest = _highest_aligned(inp, alignments, mt_rate)
    nmt = _aligned_nmt(inp, alignments)
    target = np.column_stack([base["target"][:, :5], mt_rate, np.log1p(mt_seen), base["target"][:, 5:]])
    source = np.column_stack(
        [base["source"][:, :5], src_rate, np.log1p(src_seen), highest, nmt, base["source"][:, 5:]]
    )
    return {
        "target": target.reshape(-1, len(COLUMNS["target"])),
        "gaps": gaps,
        "source": source.reshape(-1, len(COLUMNS["source"])),
    }


def _highest_aligned(
    inp: FamilyInput, alignments: list[tuple[tuple[int, int], ...]], mt_rate: np.ndarray
) -> np.ndarray:
    """Per source word, the highest pair rate among its aligned MT words (NaN when unaligned)."""
    out, start = [], 0
    for src, mt, alignment in zip(inp.data.src, inp.data.mt, alignments, strict=True):
        src_at, mt_at = _pairs(alignment)
        highest = np.full(len(src), np.nan)
        np.fmax.at(highest, src_at, mt_rate[start + mt_at])
        out.append(highest)
        start += len(mt)
    return np.concatenate(out) if out else np.zeros(0)


def _aligned_nmt(inp: FamilyInput, alignments: list[tuple[tuple[int, int], ...]]) -> np.ndarray:
    """Per source word, the lowest piece log-probability and the mean of the mean ones of its aligned
    MT words (NaN when unaligned or none is known; 0 for every row without NMT log-probabilities, as a
    constant)."""
    rows = sum(len(src) for src in inp.data.src)
    if inp.nmt is None:
        return np.zeros((rows, 2))
    out = []
    for k, (src, mt, alignment) in enumerate(zip(inp.data.src, inp.data.mt, alignments, strict=True)):
        words = np.asarray(inp.nmt.words[k], dtype=np.float64).reshape(len(mt), 4)
        src_at, mt_at = _pairs(alignment)
        low, mean = words[mt_at, 1], words[mt_at, 2]
        lowest = np.full(len(src), np.nan)
        np.fmin.at(lowest, src_at, low)
        known = ~np.isnan(mean)
        total = np.bincount(src_at[known], weights=mean[known], minlength=len(src))
        counted = np.bincount(src_at[known], minlength=len(src))
        with np.errstate(divide="ignore", invalid="ignore"):
            average = np.where((counted > 0) & ~np.isnan(lowest), total / counted, np.nan)
        out.append(np.column_stack([lowest, average]))
    return np.concatenate(out).reshape(rows, 2) if out else np.zeros((0, 2))


def fit(inp: FamilyInput) -> tuple[dict[str, TypeRates], Columns]:
    """The pair rates of all of training; the training rows' rates (and their aligned MT words' rates
    for source rows) from the other folds."""
    state, values = cross_fitted_rates(pair_keys(inp), inp)
    return state, _columns(inp, values)


def transform(state: dict[str, TypeRates], inp: FamilyInput) -> Columns:
    """The columns of any set, the rates from all of training."""
    keys = pair_keys(inp)
    return _columns(inp, {kind: state[kind].rates(keys[kind]) for kind in TABLES})


FAMILY = Family(
    name="aligned",
    columns=COLUMNS,
    reads_tags=True,
    needs="source-MT word alignments for every split and at prediction time (--alignments)",
    fit=fit,
    transform=transform,
    save=partial(save_tables, tables=TABLES),  # both pair tables' keys and counts, and their priors
    load=partial(load_tables, tables=TABLES, family="aligned"),
    needs_alignments=True,
)
