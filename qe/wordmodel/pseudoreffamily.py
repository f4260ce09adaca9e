"""The word ``pseudoref`` family: whether each MT word appears in a second MT system's translation of
the source (Apertium, ``qe.resources.mt2``), a pseudo-reference.

Per MT word: whether its lowercased form is a token of the pseudo-reference (split into words and
punctuation marks), whether its bigram with the previous word is one, and its neighbours' flags;
per gap, whether the words on its two sides are adjacent in the pseudo-reference (nothing missing
between them, by that system's reading); per source word, whether its IBM1-linked MT word appears in
the pseudo-reference; every row the share of MT tokens that appear in it. Nothing is fitted and no
tag is read; the model file records the Apertium pair (``eng-spa``), which must be installed where it
tags.

Only pairs Apertium translates here: installed are ``eng-spa`` and ``spa-eng`` (WMT12 is en-es; none
of MLQE-PE's seven pairs has an Apertium pair, so on MLQE-PE the family is refused in one line).
"""

from __future__ import annotations

import re
from itertools import pairwise
from typing import Any

import numpy as np

from qe.infra.errors import QEInputError
from qe.resources.mt2 import Apertium, installed_pairs, pair_languages
from qe.wordmodel.family import Columns, Family, FamilyInput, load_names, save_names

COLUMNS = {
    "target": ("pr_in", "pr_bigram_in", "pr_left_in", "pr_right_in", "pr_share"),
    "gaps": ("pr_adjacent", "pr_left_in", "pr_right_in", "pr_share"),
    "source": ("pr_linked_in", "pr_share"),
}
_TOKEN = re.compile(r"\w+|[^\w\s]", re.UNICODE)
_PAIR = re.compile(r"[A-Za-z0-9_]+-[A-Za-z0-9_-]+")


def apertium_pair(src_lang: str | None, tgt_lang: str | None) -> str | None:
    """The installed Apertium pair translating ``src_lang`` into ``tgt_lang``, or None."""
    if src_lang is None or tgt_lang is None:
        return None
    want = (src_lang.split("-")[0].lower(), tgt_lang.split("-")[0].lower())
    return next((pair for pair in installed_pairs() if pair_languages(pair) == want), None)


def refuse(src_lang: str | None, tgt_lang: str | None) -> str | None:
    """Why no pseudo-reference can be made for the pair here, or None."""
    if apertium_pair(src_lang, tgt_lang) is None:
        have = ", ".join(installed_pairs()) or "none"
        return f"the pseudoref family needs an Apertium pair for {src_lang} -> {tgt_lang} (installed: {have})"
    return None


def tokens(text: str) -> list[str]:
    """A translation split into lowercased words and punctuation marks."""
    return [t.lower() for t in _TOKEN.findall(text)]


def sentence_columns(mt: list[str], pseudo: list[str], src_to_mt: np.ndarray) -> Columns:
    """One sentence's columns of every kind from its MT tokens and the pseudo-reference's tokens."""
    n = len(mt)
    low = [w.lower() for w in mt]
    have = set(pseudo)
    bigrams = set(pairwise(pseudo))
    inside = np.array([w in have for w in low], dtype=float)
    bigram = np.array([k > 0 and (low[k - 1], w) in bigrams for k, w in enumerate(low)], dtype=float)
    share = float(inside.mean()) if n else np.nan
    left, right = np.r_[np.nan, inside], np.r_[inside, np.nan]
    padded = ["<s>", *low, "</s>"]
    ends = {("<s>", pseudo[0]), (pseudo[-1], "</s>")} if pseudo else set()
    adjacent = np.array(
        [(a, b) in bigrams or (a, b) in ends for a, b in pairwise(padded)],
        dtype=float,
    )
    links = np.asarray(src_to_mt, dtype=np.int64)
    linked = np.where(links >= 0, inside[np.maximum(links, 0)] if n else 0.0, np.nan)
    m = len(links)
    return {
        "target": np.column_stack([inside, bigram, left[:n], right[1:], np.full(n, share)]).reshape(n, 5),
        "gaps": np.column_stack([adjacent, left, right, np.full(n + 1, share)]).reshape(n + 1, 4),
        "source": np.column_stack([linked, np.full(m, share)]).reshape(m, 2),
    }


def _all(state: dict[str, str], inp: FamilyInput) -> Columns:
    translations = Apertium(state["pair"]).translate([" ".join(s) for s in inp.data.src])
    parts = [
        sentence_columns(mt, tokens(text), links.src_to_mt)
        for mt, text, links in zip(inp.data.mt, translations, inp.links, strict=True)
    ]
    return {
        kind: np.concatenate([p[kind] for p in parts]) if parts else np.zeros((0, len(COLUMNS[kind])))
        for kind in COLUMNS
    }


def fit(inp: FamilyInput) -> tuple[dict[str, str], Columns]:
    """The pair's Apertium direction (refused when none is installed), and the columns."""
    problem = refuse(inp.src_lang, inp.tgt_lang)
    if problem is not None:
        raise QEInputError(problem)
    state = {"pair": str(apertium_pair(inp.src_lang, inp.tgt_lang))}
    return state, _all(state, inp)


def transform(state: dict[str, str], inp: FamilyInput) -> Columns:
    """The columns of any set, translated by the pair the model was trained with."""
    return _all(state, inp)


def load(arrays: dict[str, np.ndarray], numbers: Any) -> dict[str, str]:
    """The pair name of :func:`save_names`, checked to be a plain pair name."""
    return load_names(
        "pseudoref", arrays, numbers, {"pair"}, _PAIR, ("an Apertium pair", "an Apertium pair name")
    )


FAMILY = Family(
    name="pseudoref",
    columns=COLUMNS,
    reads_tags=False,
    needs="Apertium with a pair translating the source into the MT's language (here: eng-spa, spa-eng)",
    fit=fit,
    transform=transform,
    save=save_names,
    load=load,
    refuse=refuse,
)
