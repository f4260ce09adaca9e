"""The word ``spelling`` family: whether Hunspell's dictionary of the language knows each MT word (and
each source word).

``qe.resources.spelling`` (Debian's dictionaries through ``libhunspell``, words checked as written,
case included). Per MT word: unknown (a word with a letter and no digit the target dictionary does not
know; numbers and punctuation are 0), unknown but also a source token (a copied name, or a word left
untranslated), and its neighbours' unknown flags; per gap, its neighbours'; per source word, the same
with the source dictionary. Every row also gets the share of unknown MT words (source words for
source rows). Nothing is fitted and no tag is read; the dictionaries are the system's, found by name
at tagging time (the model file records which). A pair one of whose languages has no installed
dictionary is refused in one line naming the language.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from qe.infra.errors import QEInputError
from qe.resources.spelling import SpellChecker, checker, find_dictionary, is_word
from qe.wordmodel.family import Columns, Family, FamilyInput, load_names, save_names

COLUMNS = {
    "target": (
        "spell_unknown",
        "spell_unknown_copied",
        "spell_left_unknown",
        "spell_right_unknown",
        "spell_share",
    ),
    "gaps": ("spell_left_unknown", "spell_right_unknown", "spell_share"),
    "source": ("spell_src_unknown", "spell_src_unknown_copied", "spell_src_share"),
}
_NAME = re.compile(r"[a-z]{2,3}(_[A-Za-z0-9]{2,8})?")


def refuse(src_lang: str | None, tgt_lang: str | None) -> str | None:
    """Why the pair cannot be spell-checked here (a language without a dictionary), or None."""
    for role, lang in (("source", src_lang), ("target", tgt_lang)):
        if lang is None:
            return f"the spelling family needs the {role} language (src_lang / tgt_lang)"
        try:
            find_dictionary(lang)
        except QEInputError as exc:
            return f"the spelling family cannot serve {role} language {lang!r}: {exc.message}"
    return None


def _unknown(spell: SpellChecker, tokens: list[str]) -> np.ndarray:
    return np.array([is_word(t) and not spell.is_correct(t) for t in tokens], dtype=float)


def _all(state: dict[str, str], inp: FamilyInput) -> Columns:
    mt_check, src_check = checker(state["mt"]), checker(state["src"])
    rows: dict[str, list[np.ndarray]] = {kind: [] for kind in COLUMNS}
    for src, mt in zip(inp.data.src, inp.data.mt, strict=True):
        n, m = len(mt), len(src)
        mt_bad, src_bad = _unknown(mt_check, mt), _unknown(src_check, src)
        low_src, low_mt = {w.casefold() for w in src}, {w.casefold() for w in mt}
        copied = mt_bad * np.array([w.casefold() in low_src for w in mt], dtype=float)
        src_copied = src_bad * np.array([w.casefold() in low_mt for w in src], dtype=float)
        left, right = np.r_[np.nan, mt_bad], np.r_[mt_bad, np.nan]
        share = float(mt_bad.mean()) if n else np.nan
        src_share = float(src_bad.mean()) if m else np.nan
        rows["target"].append(
            np.column_stack([mt_bad, copied, left[:n], right[1:], np.full(n, share)]).reshape(n, 5)
        )
        rows["gaps"].append(np.column_stack([left, right, np.full(n + 1, share)]).reshape(n + 1, 3))
        rows["source"].append(np.column_stack([src_bad, src_copied, np.full(m, src_share)]).reshape(m, 3))
    return {
        kind: np.concatenate(parts) if parts else np.zeros((0, len(COLUMNS[kind])))
        for kind, parts in rows.items()
    }


def fit(inp: FamilyInput) -> tuple[dict[str, str], Columns]:
    """The dictionaries of the pair's languages (refused when one is missing), and the columns."""
    problem = refuse(inp.src_lang, inp.tgt_lang)
    if problem is not None:
        raise QEInputError(problem)
    assert inp.src_lang is not None and inp.tgt_lang is not None
    state = {
        side: find_dictionary(lang)[1].stem for side, lang in (("src", inp.src_lang), ("mt", inp.tgt_lang))
    }
    return state, _all(state, inp)


def transform(state: dict[str, str], inp: FamilyInput) -> Columns:
    """The columns of any set with the dictionaries the model was trained with."""
    return _all(state, inp)


def load(arrays: dict[str, np.ndarray], numbers: Any) -> dict[str, str]:
    """The dictionary names of :func:`save_names` (``en_US``, ``de_DE``), checked to be plain names."""
    return load_names(
        "spelling", arrays, numbers, {"src", "mt"}, _NAME, ("a src and an mt dictionary", "a dictionary name")
    )


FAMILY = Family(
    name="spelling",
    columns=COLUMNS,
    reads_tags=False,
    needs="Hunspell (libhunspell) and the dictionaries of both languages (/usr/share/hunspell, $DICPATH)",
    fit=fit,
    transform=transform,
    save=save_names,
    load=load,
    refuse=refuse,
)
