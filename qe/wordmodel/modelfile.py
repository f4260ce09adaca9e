"""The saved word model (``.qwords``): everything needed to tag new (source, MT) pairs, read as data.

One zip (``qe.wordmodel.archive``: ``manifest.json`` and checked ``.npy`` members, nothing pickled)
holds the featurizer's fitted state (its two IBM1 tables and five BAD-rate tables,
``qe.wordmodel.state``, its settings and whether NMT log-probabilities are features), the three
gradient-boosting classifiers as tree arrays (``qe.wordmodel.boosted``) with their baselines, the three
BAD thresholds, each kind's column names, and the training signature (data files' sha256, settings,
versions). :func:`load_word_model` checks all of it before anything is tagged: a threshold outside
[0, 1], a classifier built for another number of columns, settings out of range or a tree that could
send a walk astray is one ``QEInputError`` line naming the file. The same model gives the same bytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from qe.infra.errors import QEInputError
from qe.predictors.check import BadModel, check_number
from qe.wordmodel.archive import read_archive, write_archive
from qe.wordmodel.boosted import TREE_ARRAYS, BoostedTrees, boosted_trees, tree_arrays
from qe.wordmodel.familystate import family_arrays, family_state
from qe.wordmodel.features import KINDS, FeatureTables, WordFeaturizer, column_names
from qe.wordmodel.nmtprobs import WordLogprobs
from qe.wordmodel.state import lexicon_arrays, lexicon_of, rate_arrays, rates_of
from qe.wordmodel.tagger import WordTagger
from qe.words.files import WordLevelData

FORMAT = "qe-word-model"
VERSION = 1
SUFFIX = ".qwords"
TAGGER_SETTINGS = ("seed", "max_iter", "learning_rate", "max_leaf_nodes", "min_samples_leaf", "held_out")
"""The tagger's settings the manifest records (not needed to tag)."""
FEATURIZER_SETTINGS = {  # name -> (low, high): the featurizer's settings a file may give
    "folds": (2, 100),
    "seed": (0, 2**32 - 1),
    "strength": (1e-9, 1e9),
    "iterations": (0, 100),
}


@dataclass
class WordModel:
    """A loaded word model: its featurizer (fitted state restored), one checked classifier and one
    BAD threshold per kind, and its manifest (settings, signature)."""

    featurizer: WordFeaturizer
    classifiers: dict[str, BoostedTrees]
    thresholds: dict[str, float]
    manifest: dict[str, Any]

    @property
    def nmt(self) -> bool:
        """Whether the model reads NMT log-probabilities of the MT words."""
        return bool(self.featurizer.nmt_)

    def bad_probability(self, tables: FeatureTables) -> dict[str, np.ndarray]:
        """Per kind, each row's probability of BAD."""
        return {kind: self.classifiers[kind].probability(tables.tables[kind]) for kind in KINDS}

    def tag(
        self, data: WordLevelData, nmt: WordLogprobs | None = None
    ) -> tuple[FeatureTables, dict[str, np.ndarray]]:
        """The feature tables of ``data`` and each row's probability of BAD, per kind; ``nmt`` exactly
        when the model was trained with NMT log-probabilities."""
        tables = self.featurizer.transform(data, nmt)
        return tables, self.bad_probability(tables)


def save_word_model(
    path: str | Path, featurizer: WordFeaturizer, tagger: WordTagger, signature: dict[str, Any]
) -> None:
    """Write a fitted featurizer and tagger (thresholds chosen) as one model file, atomically;
    ``signature`` (JSON values) records what made it."""
    if not hasattr(featurizer, "rates_") or not hasattr(tagger, "models_"):
        raise QEInputError("only a fitted featurizer and tagger are saved")
    arrays = lexicon_arrays(featurizer.lexicon_)
    rate_table, rate_numbers = rate_arrays(featurizer.rates_)
    arrays |= rate_table
    kinds = {}
    for kind in KINDS:
        baseline, trees = tree_arrays(tagger.models_[kind])
        arrays |= {f"{kind}_{name}": values for name, values in trees.items()}
        kinds[kind] = {
            "baseline": baseline,
            "threshold": float(tagger.thresholds_[kind]),
            "iterations": int(tagger.iterations_[kind]),
            "columns": list(column_names(kind, featurizer.nmt_, featurizer.families)),
        }
    manifest = {
        "format": FORMAT,
        "version": VERSION,
        "nmt": bool(featurizer.nmt_),
        "featurizer": {name: getattr(featurizer, name) for name in FEATURIZER_SETTINGS},
        "rates": rate_numbers,
        "kinds": kinds,
        "tagger": {name: getattr(tagger, name) for name in TAGGER_SETTINGS},
        "signature": signature,
    }
    if featurizer.families:
        family_table, family_numbers = family_arrays(featurizer)
        arrays |= family_table
        manifest |= family_numbers
    write_archive(path, manifest, arrays)


def load_word_model(path: str | Path) -> WordModel:
    """Read and check a model file :func:`save_word_model` wrote; anything else is one
    ``QEInputError`` line naming the file."""
    manifest, arrays = read_archive(path, FORMAT, VERSION)
    try:
        return _model(manifest, arrays)
    except BadModel as exc:
        raise QEInputError(f"not a usable word model: {exc}", path) from None
    except KeyError as exc:
        raise QEInputError(f"not a usable word model: it lacks {str(exc)[:60]}", path) from None


def _model(manifest: dict[str, Any], arrays: dict[str, np.ndarray]) -> WordModel:
    nmt = manifest.get("nmt")
    if not isinstance(nmt, bool):
        raise BadModel("manifest.json: nmt is not true or false")
    settings = manifest.get("featurizer")
    if not isinstance(settings, dict) or set(settings) != set(FEATURIZER_SETTINGS):
        raise BadModel(f"manifest.json: featurizer is not {', '.join(FEATURIZER_SETTINGS)}")
    values = {}
    for name, (low, high) in FEATURIZER_SETTINGS.items():
        value = check_number(settings[name], f"featurizer.{name}", low, high)
        values[name] = value if name == "strength" else int(value)
        if name != "strength" and value != int(value):
            raise BadModel(f"featurizer.{name} is not an integer")
    families, languages, states, family_members = family_state(manifest, arrays)
    featurizer = WordFeaturizer(**values, families=families, languages=languages)
    featurizer.nmt_ = nmt
    featurizer.family_states_ = states
    featurizer.lexicon_ = lexicon_of(arrays)
    featurizer.rates_ = rates_of(arrays, manifest.get("rates"))
    kinds = manifest.get("kinds")
    if not isinstance(kinds, dict) or set(kinds) != set(KINDS):
        raise BadModel(f"manifest.json: kinds are not {', '.join(KINDS)}")
    classifiers, thresholds = {}, {}
    for kind in KINDS:
        entry = kinds[kind]
        if not isinstance(entry, dict) or set(entry) != {"baseline", "threshold", "iterations", "columns"}:
            raise BadModel(f"manifest.json: kinds.{kind} is not a baseline, threshold, iterations, columns")
        columns = column_names(kind, nmt, families)
        if entry["columns"] != list(columns):
            raise BadModel(f"kinds.{kind}.columns are not the {len(columns)} columns this qe makes")
        thresholds[kind] = check_number(entry["threshold"], f"kinds.{kind}.threshold", 0.0, 1.0)
        trees = {name: arrays[f"{kind}_{name}"] for name in TREE_ARRAYS}
        classifiers[kind] = boosted_trees(kind, entry["baseline"], trees, len(columns))
    expected = {
        *_state_names(),
        *(f"{kind}_{name}" for kind in KINDS for name in TREE_ARRAYS),
        *family_members,
    }
    if set(arrays) != expected:
        extra = sorted(set(arrays) - expected)[:3]
        raise BadModel(f"it holds arrays a word model does not: {', '.join(extra)}")
    return WordModel(featurizer, classifiers, thresholds, manifest)


def _state_names() -> list[str]:
    from qe.wordmodel.features import RATES
    from qe.wordmodel.state import TABLES

    names = [f"{t}_{a}" for t in TABLES for a in ("src_words", "tgt_words", "rows", "cols", "probs")]
    return names + [f"rate_{r}_{a}" for r in RATES for a in ("keys", "seen", "bad")]
