"""The word ``lmclass`` family: the ``lm`` family's columns on word *classes* instead of words, a
5-gram model of each side's coarse POS sequence, cross-fitted the same way.

A word class model sees grammar where the word model sees only rare words: ``DET NOUN VERB`` is common
even when the words are not. The classes are spaCy's UPOS tags where the language has an installed
pipeline (``qe.wordmodel.wordnlp``: English here) and else Hunspell's word classes
(``qe.resources.wordclass``: German, from igerman98's affix flags). A side whose language has neither
(Chinese here: no spaCy pipeline installed, no Hunspell classes) gets columns of 0 (constant, not NaN:
scikit-learn's gradient boosting cannot bin a column that is all NaN); a pair with neither side tagged
is refused in one line. The columns are the ``lm`` family's names with ``lmc_`` for
``lm_`` (the OOV flag is 0 but for a class unseen in training). The taggers are the system's, named in
the model file and needed where it tags; the class models are arrays like the ``lm`` family's.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from qe.infra.errors import QEInputError
from qe.predictors.check import BadModel, check_number
from qe.resources.wordclass import available, word_tagger
from qe.wordmodel.arpa import ArpaModel, model_of, train_arrays
from qe.wordmodel.family import Columns, Family, FamilyInput
from qe.wordmodel.lmfamily import COLUMNS as WORD_COLUMNS
from qe.wordmodel.lmfamily import _columns
from qe.wordmodel.lmfamily import refuse as refuse_lmplz
from qe.wordmodel.wordnlp import analyse, ner_language

ORDER = 5
SIDES = ("mt", "src")
COLUMNS = {
    kind: tuple(name.replace("lm_", "lmc_", 1) for name in names) for kind, names in WORD_COLUMNS.items()
}
_TAGGER = re.compile(r"(spacy|hunspell):[a-z]{2,3}")


def tagger_for(lang: str | None) -> str | None:
    """``spacy:<lang>`` where a spaCy pipeline is installed, else ``hunspell:<lang>`` where Hunspell
    word classes are, else None."""
    if lang is None:
        return None
    code = lang.split("-")[0].lower()
    if ner_language(code):
        return f"spacy:{code}"
    if available(code):
        return f"hunspell:{code}"
    return None


def refuse(src_lang: str | None, tgt_lang: str | None) -> str | None:
    """Why neither side can be tagged with word classes here, or None."""
    problem = refuse_lmplz(src_lang, tgt_lang)
    if problem is not None:
        return problem
    if tagger_for(src_lang) is None and tagger_for(tgt_lang) is None:
        return (
            f"the lmclass family has no word-class tagger for {src_lang} or {tgt_lang} "
            "(a spaCy pipeline, or Hunspell classes: de)"
        )
    return None


def classes(tagger: str, sentences: list[list[str]]) -> list[list[str]]:
    """Each sentence's word classes by ``tagger`` (``spacy:en``, ``hunspell:de``)."""
    engine, _, lang = tagger.partition(":")
    if engine == "spacy":
        return [list(pos) for pos, _ in analyse(lang, sentences)]
    return word_tagger(lang).tag(sentences)


def _sequences(state: dict[str, Any], inp: FamilyInput) -> dict[str, list[list[str]] | None]:
    sides = {"mt": inp.data.mt, "src": inp.data.src}
    return {
        side: None if state["taggers"][side] is None else classes(state["taggers"][side], sides[side])
        for side in SIDES
    }


def _scores(models: dict[str, ArpaModel | None], sequences: dict, inp: FamilyInput, k: int) -> dict:
    sides = {"mt": inp.data.mt, "src": inp.data.src}
    return {
        side: np.zeros((len(sides[side][k]) + 1, 3))
        if models[side] is None
        else models[side].scores(sequences[side][k])
        for side in SIDES
    }


def fit(inp: FamilyInput) -> tuple[dict[str, Any], Columns]:
    """The class models of all of training, and the training rows' columns from the other folds'."""
    problem = refuse(inp.src_lang, inp.tgt_lang)
    if problem is not None:
        raise QEInputError(problem)
    assert inp.folds is not None
    state: dict[str, Any] = {"taggers": {"mt": tagger_for(inp.tgt_lang), "src": tagger_for(inp.src_lang)}}
    sequences = _sequences(state, inp)

    def train(keep: np.ndarray, what: str) -> dict[str, ArpaModel | None]:
        return {
            side: None
            if sequences[side] is None
            else train_arrays([sequences[side][k] for k in np.flatnonzero(keep)], ORDER, f"{what} {side}")
            for side in SIDES
        }

    state["models"] = train(np.ones(len(inp.data), dtype=bool), "word class lm")
    scores: list[dict] = [{} for _ in range(len(inp.data))]
    for fold in range(inp.n_folds):
        models = train(inp.folds != fold, f"word class lm fold {fold}")
        for k in np.flatnonzero(inp.folds == fold).tolist():
            scores[k] = _scores(models, sequences, inp, k)
    return state, _columns(scores)


def transform(state: dict[str, Any], inp: FamilyInput) -> Columns:
    """The columns of any set from the class models of all of training."""
    sequences = _sequences(state, inp)
    return _columns([_scores(state["models"], sequences, inp, k) for k in range(len(inp.data))])


def save(state: dict[str, Any]) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """The tagged sides' class models as arrays, and the taggers and order."""
    arrays = {
        f"{side}_{name}": values
        for side in SIDES
        if state["models"][side] is not None
        for name, values in state["models"][side].arrays().items()
    }
    return arrays, {"order": ORDER, "taggers": dict(state["taggers"])}


def load(arrays: dict[str, np.ndarray], numbers: Any) -> dict[str, Any]:
    """The state of :func:`save`, checked: tagger names, the order, each tagged side's model arrays."""
    if not isinstance(numbers, dict) or set(numbers) != {"order", "taggers"}:
        raise BadModel("manifest.json: families.lmclass is not an order and taggers")
    order = check_number(numbers["order"], "families.lmclass.order", 2, 6)
    taggers = numbers["taggers"]
    if not isinstance(taggers, dict) or set(taggers) != set(SIDES):
        raise BadModel("families.lmclass.taggers is not an mt and a src tagger")
    for side, name in taggers.items():
        if name is not None and (not isinstance(name, str) or not _TAGGER.fullmatch(name)):
            raise BadModel(f"families.lmclass.taggers.{side} is not a word-class tagger name")
    parts: dict[str, dict[str, np.ndarray]] = {side: {} for side in SIDES}
    for name, values in arrays.items():
        side, _, rest = name.partition("_")
        if side not in parts or taggers[side] is None:
            raise BadModel(f"lmclass_{name} is not an array of the lmclass family")
        parts[side][rest] = values
    models = {
        side: None if taggers[side] is None else model_of(parts[side], int(order), f"lmclass_{side}")
        for side in SIDES
    }
    return {"taggers": dict(taggers), "models": models}


FAMILY = Family(
    name="lmclass",
    columns=COLUMNS,
    reads_tags=False,
    needs="lmplz to train; a word-class tagger per side (spaCy pipeline, or Hunspell classes for de)",
    fit=fit,
    transform=transform,
    save=save,
    load=load,
    refuse=refuse,
)
