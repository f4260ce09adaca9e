"""The word ``sentence`` family: a few cheap sentence-level numbers of the pair and a sentence-level
prediction of how much of it is BAD, on every row.

Surface numbers beyond the core's lengths: the share of punctuation tokens on each side, the mean token
length on each side, the MT's type/token ratio, the share of MT tokens also in the source, and how many
more number tokens one side has than the other. From those, the core's IBM1 link summary (mean link
probability and NULL share, both ways) and, when the featurizer has them, the NMT sentence
log-probabilities (mean, lowest, ``</s>``), three ridge regressions (numpy, standardised inputs,
penalty ``ALPHA``) predict the sentence's share of BAD MT words, BAD gaps and BAD source words: a
sentence-level QE model's view given to every word. They read the tags, so a training sentence gets
the predictions of ridges fitted on the other folds; any other set those of ridges fitted on all of
training, whose means, scales and weights the model file holds as checked arrays.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from qe.predictors.check import F8, BadModel, check_array
from qe.wordmodel.family import Columns, Family, FamilyInput

SURFACE = (
    *("sent_mt_punct_share", "sent_src_punct_share", "sent_mt_token_length", "sent_src_token_length"),
    *("sent_mt_type_token", "sent_mt_in_src_share", "sent_number_diff"),
)
PREDICTED = ("sent_pred_mt_bad", "sent_pred_gap_bad", "sent_pred_src_bad")
NAMES = (*SURFACE, *PREDICTED)
COLUMNS = dict.fromkeys(("target", "gaps", "source"), NAMES)
ALPHA = 10.0
TARGETS = ("target", "gaps", "source")


def _punct(token: str) -> bool:
    return not any(c.isalnum() for c in token)


def inputs(inp: FamilyInput) -> tuple[np.ndarray, np.ndarray]:
    """Per sentence, the surface numbers (``SURFACE``) and the ridges' inputs (those, the lengths, the
    IBM1 link summary and the NMT sentence values when given)."""
    surface, extra = [], []
    for k, (src, mt) in enumerate(zip(inp.data.src, inp.data.mt, strict=True)):
        n, m = len(mt), len(src)
        low_src = {w.lower() for w in src}
        links = inp.links[k]
        surface.append(
            [
                np.mean([_punct(w) for w in mt]) if n else 0.0,
                np.mean([_punct(w) for w in src]) if m else 0.0,
                np.mean([len(w) for w in mt]) if n else 0.0,
                np.mean([len(w) for w in src]) if m else 0.0,
                len({w.lower() for w in mt}) / n if n else 0.0,
                np.mean([w.lower() in low_src for w in mt]) if n else 0.0,
                sum(any(c.isdigit() for c in w) for w in mt) - sum(any(c.isdigit() for c in w) for w in src),
            ]
        )
        row = [
            n,
            m,
            n / max(m, 1),
            float(links.mt_prob.mean()) if n else 0.0,
            float(links.src_prob.mean()) if m else 0.0,
            float((links.mt_to_src < 0).mean()) if n else 0.0,
            float((links.src_to_mt < 0).mean()) if m else 0.0,
        ]
        if inp.nmt is not None:
            row += np.nan_to_num(np.asarray(inp.nmt.sentence[k], dtype=float), nan=0.0).tolist()
        extra.append(row)
    surface_array = np.array(surface, dtype=np.float64).reshape(len(inp.data), len(SURFACE))
    return surface_array, np.hstack(
        [surface_array, np.array(extra, dtype=np.float64).reshape(len(inp.data), -1)]
    )


def bad_shares(inp: FamilyInput) -> np.ndarray:
    """Per training sentence, its share of BAD MT words, gaps and source words (0 for no row)."""
    out = np.zeros((len(inp.data), len(TARGETS)))
    for column, kind in enumerate(TARGETS):
        flags = np.asarray(inp.bad[kind], dtype=np.float64)
        starts = np.concatenate([[0], np.cumsum(inp.lengths(kind))])
        for k in range(len(inp.data)):
            if starts[k + 1] > starts[k]:
                out[k, column] = flags[starts[k] : starts[k + 1]].mean()
    return out


def ridge(x: np.ndarray, y: np.ndarray) -> dict[str, np.ndarray]:
    """Ridge regressions of each column of ``y`` on standardised ``x`` (closed form)."""
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale = np.where(scale > 0, scale, 1.0)
    z = (x - mean) / scale
    gram = z.T @ z + ALPHA * np.eye(z.shape[1])
    weights = np.linalg.solve(gram, z.T @ (y - y.mean(axis=0)))
    return {"mean": mean, "scale": scale, "weights": weights, "intercept": y.mean(axis=0)}


def predict(model: dict[str, np.ndarray], x: np.ndarray) -> np.ndarray:
    """The ridges' predictions for the rows of ``x``."""
    return ((x - model["mean"]) / model["scale"]) @ model["weights"] + model["intercept"]


def _columns(surface: np.ndarray, predicted: np.ndarray, inp: FamilyInput) -> Columns:
    per_sentence = np.hstack([surface, predicted])
    out = {}
    for kind in TARGETS:
        out[kind] = np.repeat(per_sentence, inp.lengths(kind), axis=0).reshape(-1, len(NAMES))
    return out


def fit(inp: FamilyInput) -> tuple[dict[str, np.ndarray], Columns]:
    """The ridges of all of training, and the training sentences' predictions from the other folds'."""
    assert inp.folds is not None
    surface, x = inputs(inp)
    y = bad_shares(inp)
    predicted = np.zeros_like(y)
    for fold in range(inp.n_folds):
        inside = inp.folds == fold
        if inside.any() and (~inside).any():
            predicted[inside] = predict(ridge(x[~inside], y[~inside]), x[inside])
    return ridge(x, y), _columns(surface, predicted, inp)


def transform(state: dict[str, np.ndarray], inp: FamilyInput) -> Columns:
    """The columns of any set, predicted by the ridges of all of training."""
    surface, x = inputs(inp)
    if x.shape[1] != len(state["mean"]):
        raise BadModel(f"the sentence family's ridges take {len(state['mean'])} inputs, not {x.shape[1]}")
    return _columns(surface, predict(state, x), inp)


def save(state: dict[str, np.ndarray]) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """The ridges' input means, scales, weights and intercepts."""
    return {name: np.asarray(values, dtype=F8) for name, values in state.items()}, {}


def load(arrays: dict[str, np.ndarray], numbers: Any) -> dict[str, np.ndarray]:
    """The ridges of :func:`save`, checked: finite, positive scales, consistent shapes."""
    if set(arrays) != {"mean", "scale", "weights", "intercept"} or numbers != {}:
        raise BadModel("the sentence family's arrays are not a mean, scale, weights and intercept")
    mean = check_array(arrays["mean"], "sentence_mean", F8, (None,), finite=True)
    if not len(SURFACE) + 7 <= len(mean) <= len(SURFACE) + 10:
        raise BadModel("sentence_mean is not one value per ridge input")
    scale = check_array(arrays["scale"], "sentence_scale", F8, (len(mean),), finite=True)
    if (scale <= 0).any():
        raise BadModel("sentence_scale holds a scale that is not positive")
    weights = check_array(arrays["weights"], "sentence_weights", F8, (len(mean), len(TARGETS)), finite=True)
    intercept = check_array(arrays["intercept"], "sentence_intercept", F8, (len(TARGETS),), finite=True)
    return {"mean": mean, "scale": scale, "weights": weights, "intercept": intercept}


FAMILY = Family(
    name="sentence",
    columns=COLUMNS,
    reads_tags=True,
    needs="the training tags (cross-fitted); nothing at tagging time",
    fit=fit,
    transform=transform,
    save=save,
    load=load,
)
