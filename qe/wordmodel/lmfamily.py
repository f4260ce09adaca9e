"""The word ``lm`` family: how a trigram language model of the training split's own MT (and source)
sees each word, cross-fitted.

Two modified Kneser-Ney models (``qe.wordmodel.arpa``: ``lmplz``, then held as arrays), one on the
training MT and one on the training source, both lowercased. Per MT word: its log10 probability given
the words before, the length of the n-gram matched (KenLM's back-off behaviour: 1 = only the word
itself was known in that place, 3 = the whole trigram), whether it is unknown, and the same of its
left and right neighbours (right of the last word: ``</s>``); per gap: the words on both sides (the
n-gram across the gap shows whether the two words were ever seen together); per source word: its
probability, n-gram length, unknown flag and the n-gram length of the word after it. Every row also
gets the sentence's mean log10 probability per token (MT; source for source rows).

The models read no tag, but a model trained on a sentence knows its n-grams: a training sentence is
scored by the models trained on the other folds (one pair of models per fold), dev and test by the
models of all of training, which the ``.qwords`` file holds as checked arrays.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from qe.infra.errors import QEInputError
from qe.predictors.check import BadModel, check_number
from qe.wordmodel.arpa import ArpaModel, model_of, train_arrays
from qe.wordmodel.family import Columns, Family, FamilyInput

ORDER = 3
SIDES = ("mt", "src")
COLUMNS = {
    "target": (
        *("lm_logprob", "lm_ngram", "lm_oov", "lm_left_logprob", "lm_left_ngram"),
        *("lm_right_logprob", "lm_right_ngram", "lm_sentence_mean"),
    ),
    "gaps": ("lm_left_logprob", "lm_left_ngram", "lm_right_logprob", "lm_right_ngram", "lm_sentence_mean"),
    "source": ("lm_src_logprob", "lm_src_ngram", "lm_src_oov", "lm_src_right_ngram", "lm_src_sentence_mean"),
}


def refuse(src_lang: str | None, tgt_lang: str | None) -> str | None:
    """Why the models cannot be trained here (KenLM's ``lmplz`` not found), or None."""
    from qe.resources.lm import find_kenlm_binary

    try:
        find_kenlm_binary("lmplz")
    except QEInputError as exc:
        return f"the lm families need KenLM's lmplz to train: {exc.message}"
    return None


def _lower(sentences: list[list[str]]) -> list[list[str]]:
    return [[w.lower() for w in words] for words in sentences]


def _sentences(inp: FamilyInput) -> dict[str, list[list[str]]]:
    return {"mt": _lower(inp.data.mt), "src": _lower(inp.data.src)}


def _train(sentences: dict[str, list[list[str]]], keep: np.ndarray, what: str) -> dict[str, ArpaModel]:
    return {
        side: train_arrays([sentences[side][k] for k in np.flatnonzero(keep)], ORDER, f"{what} {side}")
        for side in SIDES
    }


def fit(inp: FamilyInput) -> tuple[dict[str, ArpaModel], Columns]:
    """The models of all of training, and the training rows' columns from the other folds' models."""
    sentences = _sentences(inp)
    everything = np.ones(len(inp.data), dtype=bool)
    state = _train(sentences, everything, "word lm")
    assert inp.folds is not None
    scores: list[dict[str, np.ndarray]] = [{} for _ in range(len(inp.data))]
    for fold in range(inp.n_folds):
        models = _train(sentences, inp.folds != fold, f"word lm fold {fold}")
        for k in np.flatnonzero(inp.folds == fold).tolist():
            scores[k] = {side: models[side].scores(sentences[side][k]) for side in SIDES}
    return state, _columns(scores)


def transform(state: dict[str, ArpaModel], inp: FamilyInput) -> Columns:
    """The columns of any set from the models of all of training."""
    sentences = _sentences(inp)
    scores = [{side: state[side].scores(sentences[side][k]) for side in SIDES} for k in range(len(inp.data))]
    return _columns(scores)


def _columns(scores: list[dict[str, np.ndarray]]) -> Columns:
    """Every kind's columns from each sentence's (tokens + ``</s>``) x (log10 prob, n-gram, OOV)."""
    rows: dict[str, list[np.ndarray]] = {kind: [] for kind in COLUMNS}
    for sentence in scores:
        mt, src = sentence["mt"], sentence["src"]
        n, m = len(mt) - 1, len(src) - 1
        mt_mean, src_mean = float(mt[:, 0].mean()), float(src[:, 0].mean())
        left = np.vstack([np.full((1, 3), np.nan), mt[:-1]])  # left of word j: word j - 1 (NaN first)
        rows["target"].append(
            np.column_stack([mt[:n], left[:n, :2], mt[1:, :2], np.full(n, mt_mean)]).reshape(n, 8)
        )
        rows["gaps"].append(
            np.column_stack([left[:, :2], mt[:, :2], np.full(n + 1, mt_mean)]).reshape(n + 1, 5)
        )
        rows["source"].append(np.column_stack([src[:m], src[1:, 1], np.full(m, src_mean)]).reshape(m, 5))
    return {
        kind: np.concatenate(parts) if parts else np.zeros((0, len(COLUMNS[kind])))
        for kind, parts in rows.items()
    }


def save(state: dict[str, ArpaModel]) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Both models as arrays (``mt_vocab``, ``mt_1_grams``, ... ``src_...``) and their order."""
    arrays = {f"{side}_{name}": values for side in SIDES for name, values in state[side].arrays().items()}
    return arrays, {"order": ORDER}


def load(arrays: dict[str, np.ndarray], numbers: Any) -> dict[str, ArpaModel]:
    """The two models of :func:`save`'s arrays, checked (``qe.wordmodel.arpa.model_of``)."""
    if not isinstance(numbers, dict) or set(numbers) != {"order"}:
        raise BadModel("manifest.json: families.lm is not an order")
    order = check_number(numbers["order"], "families.lm.order", 2, 6)
    if order != int(order):
        raise BadModel("families.lm.order is not an integer")
    parts: dict[str, dict[str, np.ndarray]] = {side: {} for side in SIDES}
    for name, values in arrays.items():
        side, _, rest = name.partition("_")
        if side not in parts:
            raise BadModel(f"lm_{name} is not an array of the lm family")
        parts[side][rest] = values
    return {side: model_of(parts[side], int(order), f"lm_{side}") for side in SIDES}


FAMILY = Family(
    name="lm",
    columns=COLUMNS,
    reads_tags=False,
    needs="KenLM's lmplz to train (QE_KENLM_BIN); tagging reads the model file's arrays only",
    fit=fit,
    transform=transform,
    save=save,
    load=load,
    refuse=refuse,
)
