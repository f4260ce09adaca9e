"""The record of one word feature family, and what a family reads of a set.

A family gives columns to some of the three kinds (MT words ``target``, ``gaps``, ``source``): it is
fitted on the training set (``fit``: its state, and the training rows' columns, cross-fitted over the
featurizer's sentence folds when it reads tags or would otherwise know its own training sentences too
well) and then makes the columns of any set (``transform``: from its state, as for dev, test and new
pairs). Its state is saved in the ``.qwords`` model as checked arrays and JSON numbers (``save`` /
``load``), never as a file another program would load. ``refuse`` says in one line why the family
cannot serve a language pair here (a dictionary or a model not installed), or None. A family with
settings of its own (``tokenhead``) reads them from ``FamilyInput.settings`` (its ``[words.<name>]``
table) when it is fitted; what it makes of them is in its state.

The two blocks the word model had before families (``core`` and ``nmt``) are computed by
``WordFeaturizer`` itself, unchanged, so their columns stay byte-identical; their records
(``qe.wordmodel.families``) have no ``fit`` / ``transform`` of their own.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from qe.predictors.check import BadModel
from qe.wordmodel.lexicon import SentenceLinks
from qe.wordmodel.nmtprobs import WordLogprobs
from qe.words.files import WordLevelData

KINDS = ("target", "gaps", "source")


def quiet(text: str) -> None:
    """Where a family's progress lines go when nobody reads them."""


@dataclass(frozen=True)
class FamilyInput:
    """One set as a family sees it: the sentences (tags only on training), their IBM1 links both ways
    (cross-fitted on training), the NMT log-probabilities (or None), the languages (or None), and on
    training each sentence's fold (``folds``, of ``n_folds``), each kind's BAD flags (``bad``), the
    family's own settings (``settings``, empty for most) and where its progress lines go (``say``)."""

    data: WordLevelData
    links: list[SentenceLinks]
    nmt: WordLogprobs | None = None
    src_lang: str | None = None
    tgt_lang: str | None = None
    folds: np.ndarray | None = None
    n_folds: int = 0
    bad: Mapping[str, np.ndarray] = field(default_factory=dict)
    settings: Mapping[str, Any] = field(default_factory=dict)
    say: Callable[[str], None] = field(default=quiet)

    @property
    def training(self) -> bool:
        """Whether this is the training set (folds given: cross-fit)."""
        return self.folds is not None

    def lengths(self, kind: str) -> np.ndarray:
        """How many rows of ``kind`` each sentence has (N MT words, N + 1 gaps, the source words)."""
        if kind == "source":
            return np.array([len(s) for s in self.data.src], dtype=np.int64)
        extra = 1 if kind == "gaps" else 0
        return np.array([len(m) + extra for m in self.data.mt], dtype=np.int64)

    def rows(self, kind: str) -> int:
        """How many rows ``kind`` has in this set."""
        return int(self.lengths(kind).sum())


Columns = dict[str, np.ndarray]
"""kind -> (rows of that kind x the family's columns of that kind), rows in the set's order."""


def _no_refusal(src_lang: str | None, tgt_lang: str | None) -> str | None:
    return None


@dataclass(frozen=True)
class Family:
    """A word feature family: its name, its columns per kind (kinds it gives none to are absent),
    whether it reads the training tags, what it needs, and how it is fitted, applied, saved, loaded."""

    name: str
    columns: Mapping[str, tuple[str, ...]]
    reads_tags: bool
    needs: str
    fit: Callable[[FamilyInput], tuple[Any, Columns]] | None = None
    transform: Callable[[Any, FamilyInput], Columns] | None = None
    save: Callable[[Any], tuple[dict[str, np.ndarray], dict[str, Any]]] | None = None
    load: Callable[[dict[str, np.ndarray], Any], Any] | None = None
    refuse: Callable[[str | None, str | None], str | None] = _no_refusal
    needs_alignments: bool = False
    """Whether it reads the sets' own source-MT alignments (every split, and when tagging)."""

    @property
    def kinds(self) -> tuple[str, ...]:
        """The kinds this family gives columns to, in ``KINDS`` order."""
        return tuple(kind for kind in KINDS if self.columns.get(kind))

    def names(self, kind: str) -> tuple[str, ...]:
        """Its column names of ``kind`` (none for a kind it does not feed)."""
        return tuple(self.columns.get(kind, ()))


def save_names(state: dict[str, str]) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """The state of a family that keeps only names (dictionaries, an Apertium pair): no array, the names
    in the manifest."""
    return {}, dict(state)


def load_names(
    family: str,
    arrays: dict[str, np.ndarray],
    numbers: Any,
    keys: set[str],
    pattern: re.Pattern[str],
    refusals: tuple[str, str],
) -> dict[str, str]:
    """The names :func:`save_names` wrote for ``family``: exactly ``keys``, each a plain name matching
    ``pattern`` (never a path); ``refusals``: what the keys should hold and what one name is."""
    what, item = refusals
    if arrays:
        raise BadModel(f"the {family} family has no arrays")
    if not isinstance(numbers, dict) or set(numbers) != keys:
        raise BadModel(f"manifest.json: families.{family} is not {what}")
    for key, name in numbers.items():
        if not isinstance(name, str) or not pattern.fullmatch(name):
            raise BadModel(f"families.{family}.{key} is not {item}")
    return dict(numbers)
