"""The word ``edits`` family: how often this (source word, MT word) pair, linked by IBM1, was edited in
the training post-edits, cross-fitted.

How often a *word* was edited is already the core family's type rates (``qe.wordmodel.typerates``:
each MT word type's, bigram's and source word type's BAD rate in the training tags, which are the
post-edits' verdicts, cross-fitted over the featurizer's folds); they are not repeated here. What this
family adds is the rate of the *linked pair*: an MT word's key is its lowercased form with that of the
source word its t(mt | src) link points to (the empty word for NULL), a source word's key is its form
with its t(src | mt) MT word's; the rate is the pair's smoothed BAD rate and the log count, counted
on the training rows of the other folds for a training row (the links are the featurizer's, also
cross-fitted), on all of training for any other set. So "Bank" -> "Bank" and "bank" -> "Ufer" are told
apart where the word's own rate mixes them.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

from qe.infra.arrays import pack_lines
from qe.predictors.check import BadModel
from qe.wordmodel.family import Columns, Family, FamilyInput
from qe.wordmodel.state import checked_rates
from qe.wordmodel.typerates import TypeRates, out_of_fold

COLUMNS = {
    "target": ("edit_pair_rate", "edit_pair_seen_log"),
    "source": ("edit_src_pair_rate", "edit_src_pair_seen_log"),
}
TABLES = {"target": "mt_pair", "source": "src_pair"}
STRENGTH = 2.0


def pair_keys(inp: FamilyInput) -> dict[str, list[str]]:
    """Each MT word's and each source word's (linked word, word) key, lowercased, tab-joined."""
    keys: dict[str, list[str]] = {"target": [], "source": []}
    for src, mt, links in zip(inp.data.src, inp.data.mt, inp.links, strict=True):
        low_src, low_mt = [w.lower() for w in src], [w.lower() for w in mt]
        keys["target"] += [
            f"{low_src[i] if i >= 0 else ''}\t{w}"
            for i, w in zip(links.mt_to_src.tolist(), low_mt, strict=True)
        ]
        keys["source"] += [
            f"{w}\t{low_mt[j] if j >= 0 else ''}"
            for j, w in zip(links.src_to_mt.tolist(), low_src, strict=True)
        ]
    return keys


def _columns(values: dict[str, tuple[np.ndarray, np.ndarray]], inp: FamilyInput) -> Columns:
    out = {
        kind: np.column_stack([rate, np.log1p(seen)]).reshape(-1, 2) for kind, (rate, seen) in values.items()
    }
    out["gaps"] = np.zeros((inp.rows("gaps"), 0))
    return out


def cross_fitted_rates(
    keys: dict[str, list[str]], inp: FamilyInput
) -> tuple[dict[str, TypeRates], dict[str, tuple[np.ndarray, np.ndarray]]]:
    """Per kind of ``keys`` (one key per training row): the rates of all of training, and each training
    row's (rate, times seen) counted on the other folds, seen scaled to all of training."""
    assert inp.folds is not None
    state, values = {}, {}
    scale = inp.n_folds / (inp.n_folds - 1)
    for kind, kind_keys in keys.items():
        bad = np.asarray(inp.bad[kind], dtype=bool)
        state[kind] = TypeRates.fit(kind_keys, bad, STRENGTH)
        rate, seen = out_of_fold(kind_keys, bad, np.repeat(inp.folds, inp.lengths(kind)), STRENGTH)
        values[kind] = (rate, seen * scale)
    return state, values


def save_tables(
    state: dict[str, TypeRates], tables: dict[str, str]
) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Rate tables (kind -> table name) as arrays (keys, seen, bad: ``qe.wordmodel.state``'s layout) and
    their priors."""
    arrays, numbers = {}, {}
    for kind, name in tables.items():
        table = state[kind]
        keys = list(table.seen)
        arrays[f"{name}_keys"] = pack_lines(keys, "pair key", name)
        arrays[f"{name}_seen"] = np.array([table.seen[k] for k in keys], dtype="<i8")
        arrays[f"{name}_bad"] = np.array([table.bad.get(k, 0) for k in keys], dtype="<i8")
        numbers[name] = {"prior": float(table.prior), "strength": float(table.strength)}
    return arrays, numbers


def load_tables(
    arrays: dict[str, np.ndarray], numbers: Any, tables: dict[str, str], family: str
) -> dict[str, TypeRates]:
    """The tables :func:`save_tables` wrote for ``family``, checked as the core rates are."""
    expected = {f"{name}_{part}" for name in tables.values() for part in ("keys", "seen", "bad")}
    if set(arrays) != expected or not isinstance(numbers, dict) or set(numbers) != set(tables.values()):
        raise BadModel(f"the {family} family's arrays or numbers are not its pair tables")
    return {
        kind: checked_rates(arrays, numbers, name, f"{family}_{name}", f"families.{family}")
        for kind, name in tables.items()
    }


def fit(inp: FamilyInput) -> tuple[dict[str, TypeRates], Columns]:
    """The pair rates of all of training, and the training rows' rates from the other folds."""
    state, values = cross_fitted_rates(pair_keys(inp), inp)
    return state, _columns(values, inp)


def transform(state: dict[str, TypeRates], inp: FamilyInput) -> Columns:
    """The rates of any set from all of training."""
    keys = pair_keys(inp)
    return _columns({kind: state[kind].rates(keys[kind]) for kind in COLUMNS}, inp)


FAMILY = Family(
    name="edits",
    columns=COLUMNS,
    reads_tags=True,
    needs="the training tags (cross-fitted) and the IBM1 links",
    fit=fit,
    transform=transform,
    save=partial(save_tables, tables=TABLES),  # both tables' keys and counts, and their priors
    load=partial(load_tables, tables=TABLES, family="edits"),
)
