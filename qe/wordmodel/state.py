"""A word featurizer's fitted state as plain arrays, and back: the two IBM1 tables of its
``Lexicon`` and its ``TypeRates``.

Words and rate keys are stored as their UTF-8 bytes joined by newlines in a ``uint8`` array
(``qe.infra.arrays.pack_lines``), the rest as numbers. Reading back checks every array: the
vocabularies decode, hold no empty or repeated word and as many words as the entries use; entry
indices lie inside them and are unique; probabilities are finite and in [0, 1]; counts are
non-negative integers with ``bad <= seen``; the prior is a rate and the smoothing strength positive.
"""

from __future__ import annotations

import numpy as np

from qe.infra.arrays import pack_lines
from qe.predictors.check import F8, BadModel, check_array, check_number
from qe.wordmodel.features import RATES
from qe.wordmodel.lexicon import Lexicon
from qe.wordmodel.typerates import TypeRates
from qe.words.ibm1 import NULL, IBM1Table

I4, I8, U1 = np.dtype("<i4"), np.dtype("<i8"), np.dtype("|u1")
TABLES = ("s2t", "t2s")


def lexicon_arrays(lexicon: Lexicon) -> dict[str, np.ndarray]:
    """Each table's vocabularies and CSR entries (``s2t_src_words``, ``s2t_rows``, ...)."""
    out = {}
    for name in TABLES:
        table: IBM1Table = getattr(lexicon, name)
        out[f"{name}_src_words"] = pack_lines(table._src_words, "source word", name)
        out[f"{name}_tgt_words"] = pack_lines(table._tgt_words, "target word", name)
        out[f"{name}_rows"] = np.repeat(np.arange(len(table._src_words), dtype=I4), np.diff(table._indptr))
        out[f"{name}_cols"] = table._cols.astype(I4)
        out[f"{name}_probs"] = table._probs.astype(F8)
    return out


def rate_arrays(rates: dict[str, TypeRates]) -> tuple[dict[str, np.ndarray], dict[str, dict[str, float]]]:
    """Each rate's keys and counts as arrays, and its prior and strength (for the manifest)."""
    arrays, numbers = {}, {}
    for name in RATES:
        table = rates[name]
        keys = list(table.seen)
        arrays[f"rate_{name}_keys"] = pack_lines(keys, "rate key", name)
        arrays[f"rate_{name}_seen"] = np.array([table.seen[k] for k in keys], dtype=I8)
        arrays[f"rate_{name}_bad"] = np.array([table.bad.get(k, 0) for k in keys], dtype=I8)
        numbers[name] = {"prior": float(table.prior), "strength": float(table.strength)}
    return arrays, numbers


def words(blob: np.ndarray, what: str) -> list[str]:
    """The strings of a :func:`~qe.infra.arrays.pack_lines` array: UTF-8, none empty or repeated."""
    check_array(blob, what, U1, (None,))
    if not blob.size:
        return []
    try:
        items = blob.tobytes().decode("utf-8").split("\n")
    except UnicodeDecodeError:
        raise BadModel(f"{what} is not UTF-8") from None
    if "" in items:
        raise BadModel(f"{what} holds an empty entry")
    if len(set(items)) != len(items):
        raise BadModel(f"{what} holds an entry twice")
    return items


def lexicon_of(arrays: dict[str, np.ndarray]) -> Lexicon:
    """The :class:`Lexicon` of :func:`lexicon_arrays`' arrays, checked."""
    tables = {}
    for name in TABLES:
        src = words(arrays[f"{name}_src_words"], f"{name}_src_words")
        tgt = words(arrays[f"{name}_tgt_words"], f"{name}_tgt_words")
        rows = check_array(arrays[f"{name}_rows"], f"{name}_rows", I4, (None,))
        cols = check_array(arrays[f"{name}_cols"], f"{name}_cols", I4, (len(rows),))
        probs = check_array(arrays[f"{name}_probs"], f"{name}_probs", F8, (len(rows),), finite=True)
        inside = (rows >= 0) & (rows < len(src)) & (cols >= 0) & (cols < len(tgt))
        if not inside.all():
            raise BadModel(f"{name} has an entry whose word index lies outside its vocabularies")
        if ((probs < 0) | (probs > 1)).any():
            raise BadModel(f"{name} has a probability outside [0, 1]")
        if NULL not in src:
            raise BadModel(f"{name} has no empty word ({NULL})")
        try:
            tables[name] = IBM1Table(src, tgt, rows, cols, probs, null=True)
        except ValueError:
            raise BadModel(f"{name} has the same (source, target) entry twice") from None
    return Lexicon(tables["s2t"], tables["t2s"])


def rates_of(arrays: dict[str, np.ndarray], numbers: object) -> dict[str, TypeRates]:
    """The :class:`TypeRates` of :func:`rate_arrays`' arrays and numbers, checked."""
    if not isinstance(numbers, dict) or set(numbers) != set(RATES):
        raise BadModel(f"manifest.json's rates are not {', '.join(RATES)}")
    arrays = {name.removeprefix("rate_"): values for name, values in arrays.items()}
    return {name: checked_rates(arrays, numbers, name, f"rate_{name}", "rates") for name in RATES}


def checked_rates(
    arrays: dict[str, np.ndarray], numbers: dict, name: str, what: str, section: str = "families.edits"
) -> TypeRates:
    """One :class:`TypeRates` from ``arrays[name_keys / _seen / _bad]`` and ``numbers[name]`` (prior,
    strength), checked; ``what`` names its arrays and ``section`` its numbers in a refusal."""
    entry = numbers[name]
    if not isinstance(entry, dict) or set(entry) != {"prior", "strength"}:
        raise BadModel(f"manifest.json: {section}.{name} is not a prior and a strength")
    prior = check_number(entry["prior"], f"{section}.{name}.prior", 0.0, 1.0)
    strength = check_number(entry["strength"], f"{section}.{name}.strength", 1e-9, 1e9)
    keys = words(arrays[f"{name}_keys"], f"{what}_keys")
    seen = check_array(arrays[f"{name}_seen"], f"{what}_seen", I8, (len(keys),))
    bad = check_array(arrays[f"{name}_bad"], f"{what}_bad", I8, (len(keys),))
    if (bad < 0).any() or (bad > seen).any():
        raise BadModel(f"{what} counts are not 0 <= bad <= seen")
    return TypeRates(
        dict(zip(keys, seen.tolist(), strict=True)),
        dict(zip(keys, bad.tolist(), strict=True)),
        prior,
        strength,
    )
