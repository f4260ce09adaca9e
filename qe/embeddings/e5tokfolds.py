"""The token head cross-fitted (issue 34, build 3): the full model and one model per fold, each kept as
a checkpoint (``qe.infra.checkpoints``) once trained, so that a word-model run cut short resumes.

A run with the ``tokenhead`` family trains six token heads of about fifteen minutes each on 7,000
pairs; each, once trained, is kept under ``<cache>/checkpoints/tokenhead/``: its ``.qxtok`` bytes and,
beside them, its curve and the probabilities it gave its fold's pairs (JSON floats, read back to the
bit). The key hashes everything the training reads: the settings, the base model, the training pairs
and their tags, the pairs it scores. A restored head is read with every check of a ``.qxtok`` file; a
damaged checkpoint is dropped and the head trained again.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from qe.embeddings.e5encoder import E5Encoder
from qe.embeddings.e5frozen import Memo
from qe.embeddings.e5tokenfile import TokenHeadModel, TokenSettings, settings_record
from qe.embeddings.e5tokens import KINDS
from qe.embeddings.e5tokhead import Labels, TokenResult, Tokens, TokenTrainer
from qe.infra.checkpoints import checkpoint_key, hash_pairs, keep_bytes, read
from qe.infra.errors import QEInputError
from qe.predictors.check import BadModel

CHECKPOINTS = "tokenhead"
"""The checkpoints' folder under ``<cache>/checkpoints``."""
TRAINING_VERSION = 1
"""Part of a head's checkpoint key: raise it when a change to the training would change the model."""
_RESULT_KEYS = frozenset({"history", "best_epoch", "best_mcc", "pairs", "heldout_pairs", "scored"})


def cross_fitted(
    src: Tokens,
    mt: Tokens,
    labels: Labels,
    folds: np.ndarray,
    settings: TokenSettings,
    *,
    encoder: E5Encoder,
    log: Callable[[str], None] = print,
) -> tuple[TokenResult, dict[str, list[np.ndarray]], list[dict[str, object]]]:
    """The full model (all training pairs; it scores dev, test and new text), and each training pair's
    probabilities from the model of its fold (``folds[k]``: pair k's fold), trained on the other folds'
    pairs only; with each fold model's summary. The frozen layers run once per pair for all of them."""
    folds = np.asarray(folds, dtype=np.int64)
    if len(folds) != len(src):
        raise QEInputError(f"{len(folds)} fold numbers for {len(src)} training pairs")
    memo: Memo = {}
    log(f"token head: the full model on {len(src):,} pairs")
    full = _trained("the full model", src, mt, labels, settings, None, encoder, log, memo)
    out: dict[str, list[np.ndarray | None]] = {kind: [None] * len(src) for kind in KINDS}
    summaries = []
    for fold in range(int(folds.max()) + 1):
        inside, outside = np.flatnonzero(folds == fold), np.flatnonzero(folds != fold)
        if not len(inside):
            continue
        log(f"token head: fold {fold} model on {len(outside):,} pairs, scoring {len(inside):,}")
        result = _trained(
            f"fold {fold}",
            [src[k] for k in outside],
            [mt[k] for k in outside],
            {kind: [labels[kind][k] for k in outside] for kind in KINDS},
            settings,
            ([src[k] for k in inside], [mt[k] for k in inside]),
            encoder,
            log,
            memo,
        )
        summaries.append({"fold": fold, **result.summary()})
        for kind in KINDS:
            for j, k in enumerate(inside.tolist()):
                out[kind][k] = result.scored[kind][j]
    return full, out, summaries  # type: ignore[return-value]


def _trained(
    what: str,
    src: Tokens,
    mt: Tokens,
    labels: Labels,
    settings: TokenSettings,
    score: tuple[Tokens, Tokens] | None,
    encoder: E5Encoder,
    log: Callable[[str], None],
    memo: Memo,
) -> TokenResult:
    """One head trained on ``src`` / ``mt`` / ``labels`` (scoring ``score``), or restored from the
    checkpoint an earlier run kept of the same training."""
    key = result_key(settings, encoder, src, mt, labels, score)
    sizes = _slot_counts(score)
    restored = read(CHECKPOINTS, key, ".qxtok", lambda path, record: _result(path, record, encoder, sizes))
    if restored is not None:
        log(f"token head: {what} restored from its checkpoint")
        return restored
    trainer = TokenTrainer(src, mt, labels, settings, encoder=encoder, score=score, log=log, memo=memo)
    result = trainer.run()
    keep_bytes(CHECKPOINTS, key, ".qxtok", result.model.to_bytes(), _record(result))
    return result


def result_key(
    settings: TokenSettings,
    encoder: E5Encoder,
    src: Tokens,
    mt: Tokens,
    labels: Labels,
    score: tuple[Tokens, Tokens] | None,
) -> str:
    """The sha256 of what a head's training reads: its settings, the base model, the training pairs
    (words apart) and their tags of each kind, and the pairs it scores."""
    scored = hashlib.sha256()
    if score:
        hash_pairs(scored, [_joined(s) for s in score[0]], [_joined(m) for m in score[1]])
    keyed = {
        **settings_record(settings),
        "base_model": encoder.model_id,
        "training": TRAINING_VERSION,
        "scores": scored.hexdigest() if score else None,
    }
    tags = [np.asarray(sentence, dtype=np.float64) for kind in KINDS for sentence in labels[kind]]
    flat = np.concatenate(tags) if tags else np.zeros(0)
    return checkpoint_key(keyed, [_joined(s) for s in src], [_joined(m) for m in mt], flat)


def _joined(tokens: Sequence[str]) -> str:
    """A sentence's words in one string, apart by a character no word holds (the unit separator)."""
    return "\x1f".join(tokens)


def _slot_counts(score: tuple[Tokens, Tokens] | None) -> dict[str, list[int]]:
    """Per kind, the number of slots of each scored pair: n MT words, n + 1 gaps, m source words."""
    pairs = list(zip(*score, strict=True)) if score else []
    return {
        "target": [len(m) for _, m in pairs],
        "gaps": [len(m) + 1 for _, m in pairs],
        "source": [len(s) for s, _ in pairs],
    }


def _record(result: TokenResult) -> dict[str, Any]:
    """A trained head's checkpoint record: its curve, best epoch and the probabilities it gave."""
    return {
        "history": result.history,
        "best_epoch": result.best_epoch,
        "best_mcc": result.best_mcc,
        "pairs": result.pairs,
        "heldout_pairs": result.heldout_pairs,
        "scored": {kind: [values.tolist() for values in lists] for kind, lists in result.scored.items()},
    }


def _result(
    path: Path, record: dict[str, Any], encoder: E5Encoder, sizes: dict[str, list[int]]
) -> TokenResult:
    """The head kept at ``path`` with its ``record``, every part checked (``ValueError`` otherwise)."""
    if set(record) != _RESULT_KEYS:
        raise ValueError("not a token head's record")
    try:
        model = TokenHeadModel.from_bytes(path.read_bytes(), encoder)
    except BadModel as exc:
        raise ValueError(str(exc)) from None
    history = record["history"]
    if not isinstance(history, list) or not all(_curve_row(row) for row in history):
        raise ValueError("not a training curve")
    best_epoch, pairs, heldout = (record[name] for name in ("best_epoch", "pairs", "heldout_pairs"))
    if any(isinstance(n, bool) or not isinstance(n, int) or n < 0 for n in (best_epoch, pairs, heldout)):
        raise ValueError("not counts")
    best_mcc = record["best_mcc"]
    if not _number(best_mcc) or not math.isfinite(best_mcc):
        raise ValueError("not an MCC")
    scored = _scored(record["scored"], sizes)
    return TokenResult(model, history, best_epoch, float(best_mcc), pairs, heldout, scored)


def _scored(scored: Any, sizes: dict[str, list[int]]) -> dict[str, list[np.ndarray]]:
    """The kept probabilities, each pair's as many as its slots, each in [0, 1] or NaN (a cut slot)."""
    if not any(sizes.values()):
        if scored != {}:
            raise ValueError("probabilities for no scored pairs")
        return {}
    if not isinstance(scored, dict) or set(scored) != set(KINDS):
        raise ValueError("not the three kinds' probabilities")
    out = {}
    for kind in KINDS:
        lists = scored[kind]
        if (
            not isinstance(lists, list)
            or [len(v) if isinstance(v, list) else -1 for v in lists] != sizes[kind]
        ):
            raise ValueError(f"not the scored pairs' {kind} slots")
        if not all(_number(x) for v in lists for x in v):
            raise ValueError(f"not the scored pairs' {kind} probabilities")
        values = [np.asarray(v, dtype=np.float64) for v in lists]
        for v in values:
            if ((v < 0) | (v > 1)).any():  # NaN compares False: a cut slot passes
                raise ValueError(f"a {kind} probability outside [0, 1]")
        out[kind] = values
    return out


def _number(value: Any) -> bool:
    """A JSON number (NaN included), not a bool."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def _curve_row(row: Any) -> bool:
    """One epoch of a training curve: names and numbers."""
    return isinstance(row, dict) and all(isinstance(k, str) and _number(v) for k, v in row.items())
