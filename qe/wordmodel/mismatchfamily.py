"""The word ``mismatch`` family: numbers, capitalised words and named entities that one side has and
the other lacks.

- **Numbers**: a token's digit groups (``\\d+``: ``1,500`` -> 1 and 500); an MT number is unmatched
  when one of its groups is not among the source's, a source number when one of its groups is not
  among the MT's (so ``1.500`` / ``1,500`` match, ``15`` / ``16`` do not).
- **Capitalised words**: a token that starts with a capital and is not the sentence's first; an MT
  one is unmatched when its lowercased form is no source token's (a name changed or invented; in
  German every noun is capitalised, so there it says little), a source one when it is no MT token's
  (a name dropped or translated).
- **Named entities** (spaCy NER on the source, ``qe.wordmodel.wordnlp``): whether a source word lies
  in an entity and whether such a word is missing from the MT; whether an MT word's IBM1-linked
  source word lies in one, and whether the MT word copies an entity word. Only where the source
  language has an installed spaCy pipeline (here: English; MLQE-PE's de and zh targets have none, so
  entities are read on the source side only); otherwise those columns are 0 (constant: scikit-learn's
  gradient boosting cannot bin a column that is all NaN) and the family works on numbers and capitals
  alone.

Every row also gets the sentence's counts: source numbers, capitalised words and entity words
missing from the MT, and MT numbers missing from the source. Nothing is fitted and no tag is read.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from qe.predictors.check import BadModel
from qe.wordmodel.family import Columns, Family, FamilyInput
from qe.wordmodel.wordnlp import analyse, ner_language

_DIGITS = re.compile(r"\d+")
SENTENCE = ("mm_src_numbers_missing", "mm_src_caps_missing", "mm_src_entities_missing", "mm_mt_numbers_extra")
COLUMNS = {
    "target": (
        *("mm_number_unmatched", "mm_cap_unmatched", "mm_linked_src_cap", "mm_linked_src_entity"),
        *("mm_copies_entity", *SENTENCE),
    ),
    "gaps": ("mm_left_unmatched", "mm_right_unmatched", *SENTENCE),
    "source": (
        *("mm_src_number_missing", "mm_src_cap_missing", "mm_src_entity", "mm_src_entity_missing"),
        *SENTENCE,
    ),
}


def _groups(token: str) -> list[str]:
    return [g.lstrip("0") or "0" for g in _DIGITS.findall(token)]


def _capital(tokens: list[str]) -> np.ndarray:
    return np.array([k > 0 and t[:1].isupper() for k, t in enumerate(tokens)], dtype=bool)


def sentence_columns(
    src: list[str], mt: list[str], mt_to_src: np.ndarray, entity: np.ndarray | None
) -> Columns:
    """One sentence's columns of every kind; ``entity`` flags the source words in a named entity
    (None: no NER for the source language, entity columns 0)."""
    n, m = len(mt), len(src)
    low_src, low_mt = {w.lower() for w in src}, {w.lower() for w in mt}
    src_groups = {g for t in src for g in _groups(t)}
    mt_groups = {g for t in mt for g in _groups(t)}
    mt_number = np.array([any(g not in src_groups for g in _groups(t)) for t in mt], dtype=float)
    src_number = np.array([any(g not in mt_groups for g in _groups(t)) for t in src], dtype=float)
    mt_cap = _capital(mt) & np.array([t.lower() not in low_src for t in mt], dtype=bool)
    src_capital = _capital(src)
    src_cap = src_capital & np.array([t.lower() not in low_mt for t in src], dtype=bool)
    linked = np.asarray(mt_to_src, dtype=np.int64).reshape(n)
    has_link = linked >= 0
    linked_cap = np.where(has_link, src_capital[np.maximum(linked, 0)] if m else False, 0.0)
    if entity is None:  # 0, not NaN: gradient boosting cannot bin a column that is all NaN
        ent, ent_missing = np.zeros(m), np.zeros(m)
        linked_ent, copies = np.zeros(n), np.zeros(n)
        entities_missing = 0.0
    else:
        ent = np.asarray(entity, dtype=float).reshape(m)
        ent_missing = ent * np.array([t.lower() not in low_mt for t in src], dtype=float)
        linked_ent = np.where(has_link, ent[np.maximum(linked, 0)] if m else 0.0, 0.0)
        entity_words = {t.lower() for t, e in zip(src, ent.tolist(), strict=True) if e}
        copies = np.array([t.lower() in entity_words for t in mt], dtype=float)
        entities_missing = float(ent_missing.sum())
    common = np.array([src_number.sum(), src_cap.sum(), entities_missing, mt_number.sum()])
    unmatched = np.maximum(mt_number, mt_cap)
    left = np.r_[np.nan, unmatched]
    right = np.r_[unmatched, np.nan]
    return {
        "target": np.column_stack(
            [mt_number, mt_cap, linked_cap, linked_ent, copies, np.tile(common, (n, 1))]
        ).reshape(n, len(COLUMNS["target"])),
        "gaps": np.column_stack([left, right, np.tile(common, (n + 1, 1))]).reshape(
            n + 1, len(COLUMNS["gaps"])
        ),
        "source": np.column_stack([src_number, src_cap, ent, ent_missing, np.tile(common, (m, 1))]).reshape(
            m, len(COLUMNS["source"])
        ),
    }


def _all(state: dict[str, Any], inp: FamilyInput) -> Columns:
    entities = None
    if state["ner"] is not None:
        entities = [np.array(flags, dtype=bool) for _, flags in analyse(state["ner"], inp.data.src)]
    parts = [
        sentence_columns(src, mt, inp.links[k].mt_to_src, None if entities is None else entities[k])
        for k, (src, mt) in enumerate(zip(inp.data.src, inp.data.mt, strict=True))
    ]
    return {
        kind: np.concatenate([p[kind] for p in parts]) if parts else np.zeros((0, len(COLUMNS[kind])))
        for kind in COLUMNS
    }


def fit(inp: FamilyInput) -> tuple[dict[str, Any], Columns]:
    """Nothing to fit: the state says whether the source's entities are read (its language has a
    spaCy pipeline here)."""
    state = {"ner": inp.src_lang if ner_language(inp.src_lang) else None}
    return state, _all(state, inp)


def transform(state: dict[str, Any], inp: FamilyInput) -> Columns:
    """The columns of any set, entities read as in training."""
    return _all(state, inp)


def save(state: dict[str, Any]) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """No array; the manifest records the language whose entities are read (or null)."""
    return {}, {"ner": state["ner"]}


def load(arrays: dict[str, np.ndarray], numbers: Any) -> dict[str, Any]:
    """The state of :func:`save`, checked: a language code or null, and no array."""
    if arrays:
        raise BadModel("the mismatch family has no arrays")
    if not isinstance(numbers, dict) or set(numbers) != {"ner"}:
        raise BadModel("manifest.json: families.mismatch is not its ner language")
    ner = numbers["ner"]
    if ner is not None and (not isinstance(ner, str) or not re.fullmatch(r"[a-z]{2,3}", ner)):
        raise BadModel("families.mismatch.ner is not a language code")
    return {"ner": ner}


FAMILY = Family(
    name="mismatch",
    columns=COLUMNS,
    reads_tags=False,
    needs="spaCy with the source language's pipeline for the entity columns (else 0)",
    fit=fit,
    transform=transform,
    save=save,
    load=load,
)
