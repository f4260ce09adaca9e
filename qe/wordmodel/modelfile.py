"""The saved word model (``.qwords``): everything needed to tag new (source, MT) pairs, read as data.

One zip (``qe.wordmodel.archive``: ``manifest.json`` and checked ``.npy`` members, nothing pickled)
holds the featurizer's fitted state (its two IBM1 tables and five BAD-rate tables,
``qe.wordmodel.state``, its settings and whether NMT log-probabilities are features), per kind its
learner (``learner``: ``"hgb"``, gradient-boosting trees as arrays, ``qe.wordmodel.boosted``, with their
baseline; or ``"crf"``, a linear-chain CRF's standardiser and weights, ``qe.wordmodel.crf``), the three
BAD thresholds, each kind's column names and the dev figures of the learners it was chosen among, and
the training signature (data files' sha256, settings, versions). A kind without ``learner`` (a file
written before the CRF) is gradient boosting. :func:`load_word_model` checks all of it before anything
is tagged: a threshold outside [0, 1], a classifier built for another number of columns, settings out
of range, a tree that could send a walk astray, a CRF weight that is not finite or beyond
``qe.wordmodel.crf.MAX_WEIGHT``, an unknown learner is one ``QEInputError`` line naming the file. The
same model gives the same bytes.
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
from qe.wordmodel.crf import CHAIN_ARRAYS, ChainModel, chain_arrays, chain_model
from qe.wordmodel.families import needs_alignments
from qe.wordmodel.familystate import family_arrays, family_state
from qe.wordmodel.features import KINDS, FeatureTables, WordFeaturizer, column_names
from qe.wordmodel.nmtprobs import WordLogprobs
from qe.wordmodel.state import lexicon_arrays, lexicon_of, rate_arrays, rates_of
from qe.wordmodel.tagger import LEARNERS, WordTagger
from qe.words.files import WordLevelData

FORMAT = "qe-word-model"
VERSION = 1
SUFFIX = ".qwords"
TAGGER_SETTINGS = (
    "seed",
    "max_iter",
    "learning_rate",
    "max_leaf_nodes",
    "min_samples_leaf",
    "held_out",
    "learner",
)
"""The tagger's settings the manifest records (not needed to tag)."""
LEARNER_KEYS = {  # learner -> the manifest keys of a kind using it
    "hgb": {"learner", "baseline", "threshold", "iterations", "columns", "candidates"},
    "crf": {"learner", "l2", "threshold", "columns", "candidates"},
}
BEFORE_CRF_KEYS = {"baseline", "threshold", "iterations", "columns"}
"""A kind's keys in a file written before the CRF (no ``learner``: gradient boosting)."""
MEMBERS = {"hgb": TREE_ARRAYS, "crf": {f"crf_{name}": None for name in CHAIN_ARRAYS}}
"""Each learner's array members of a kind (``<kind>_<name>``)."""
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
    classifiers: dict[str, BoostedTrees | ChainModel]
    thresholds: dict[str, float]
    manifest: dict[str, Any]

    @property
    def nmt(self) -> bool:
        """Whether the model reads NMT log-probabilities of the MT words."""
        return bool(self.featurizer.nmt_)

    @property
    def alignments(self) -> bool:
        """Whether tagging reads the pairs' own source-MT alignments (the ``aligned`` family)."""
        return needs_alignments(self.featurizer.families)

    @property
    def learners(self) -> dict[str, str]:
        """Per kind, its learner: ``"hgb"`` or ``"crf"``."""
        return {kind: _learner_of(model) for kind, model in self.classifiers.items()}

    def bad_probability(self, tables: FeatureTables) -> dict[str, np.ndarray]:
        """Per kind, each row's probability of BAD (a CRF's marginals need the sentences' lengths)."""
        out = {}
        for kind in KINDS:
            model = self.classifiers[kind]
            if isinstance(model, ChainModel):
                out[kind] = model.probability(tables.tables[kind], tables.lengths[kind])
            else:
                out[kind] = model.probability(tables.tables[kind])
        return out

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
    if not hasattr(featurizer, "rates_") or not hasattr(tagger, "fitted_"):
        raise QEInputError("only a fitted featurizer and tagger are saved")
    arrays = lexicon_arrays(featurizer.lexicon_)
    rate_table, rate_numbers = rate_arrays(featurizer.rates_)
    arrays |= rate_table
    kinds = {}
    models = tagger.models_  # refuses learner = "auto" before dev has chosen
    for kind in KINDS:
        entry, members = _kind_entry(kind, tagger, models[kind])
        arrays |= {f"{kind}_{name}": values for name, values in members.items()}
        kinds[kind] = {
            **entry,
            "threshold": float(tagger.thresholds_[kind]),
            "columns": list(column_names(kind, featurizer.nmt_, featurizer.families)),
            "candidates": {
                learner: {key: float(value) for key, value in figures.items()}
                for learner, figures in tagger.candidates_[kind].items()
            },
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


def _kind_entry(kind: str, tagger: WordTagger, model: Any) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """A kind's learner-specific manifest entries and array members."""
    learner = tagger.learners_[kind]
    if learner == "crf":
        members = {f"crf_{name}": values for name, values in chain_arrays(model.model_).items()}
        return {"learner": "crf", "l2": float(tagger.l2_[kind])}, members
    baseline, trees = tree_arrays(model)
    return {"learner": "hgb", "baseline": baseline, "iterations": int(tagger.iterations_[kind])}, trees


def _learner_of(model: BoostedTrees | ChainModel) -> str:
    return "crf" if isinstance(model, ChainModel) else "hgb"


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
        learner = _entry_learner(kind, kinds[kind])
        entry = kinds[kind]
        columns = column_names(kind, nmt, families)
        if entry["columns"] != list(columns):
            raise BadModel(f"kinds.{kind}.columns are not the {len(columns)} columns this qe makes")
        thresholds[kind] = check_number(entry["threshold"], f"kinds.{kind}.threshold", 0.0, 1.0)
        if learner == "crf":
            check_number(entry["l2"], f"kinds.{kind}.l2", 0.0, 1e6)
            crf = {name: arrays[f"{kind}_crf_{name}"] for name in CHAIN_ARRAYS}
            classifiers[kind] = chain_model(kind, crf, len(columns))
        else:
            trees = {name: arrays[f"{kind}_{name}"] for name in TREE_ARRAYS}
            classifiers[kind] = boosted_trees(kind, entry["baseline"], trees, len(columns))
    expected = {*_state_names(), *family_members}
    for kind, model in classifiers.items():
        expected |= {f"{kind}_{name}" for name in MEMBERS[_learner_of(model)]}
    if set(arrays) != expected:
        extra = sorted(set(arrays) - expected)[:3]
        raise BadModel(f"it holds arrays a word model does not: {', '.join(extra)}")
    return WordModel(featurizer, classifiers, thresholds, manifest)


def _entry_learner(kind: str, entry: Any) -> str:
    """A kind's learner, its manifest entry's keys checked against it (no ``learner``: a file written
    before the CRF, gradient boosting) and its ``candidates`` (dev figures, not needed to tag)."""
    if not isinstance(entry, dict):
        raise BadModel(f"manifest.json: kinds.{kind} is not a table")
    if "learner" not in entry:
        if set(entry) != BEFORE_CRF_KEYS:
            raise BadModel(f"manifest.json: kinds.{kind} is not a baseline, threshold, iterations, columns")
        return "hgb"
    learner = entry["learner"]
    if learner not in LEARNERS:
        raise BadModel(
            f"manifest.json: kinds.{kind}.learner = {str(learner)[:40]!r} is not one of {', '.join(LEARNERS)}"
        )
    if set(entry) != LEARNER_KEYS[learner]:
        raise BadModel(f"manifest.json: kinds.{kind} is not {', '.join(sorted(LEARNER_KEYS[learner]))}")
    candidates = entry["candidates"]
    if not isinstance(candidates, dict) or not set(candidates) <= set(LEARNERS):
        raise BadModel(f"manifest.json: kinds.{kind}.candidates is not a table by learner")
    for name, figures in candidates.items():
        if not isinstance(figures, dict) or len(figures) > 4:
            raise BadModel(f"manifest.json: kinds.{kind}.candidates.{name} is not a table of dev figures")
        for key, value in figures.items():
            check_number(value, f"kinds.{kind}.candidates.{name}.{str(key)[:20]}", -1.0, 1.0)
    return learner


def _state_names() -> list[str]:
    from qe.wordmodel.features import RATES
    from qe.wordmodel.state import TABLES

    names = [f"{t}_{a}" for t in TABLES for a in ("src_words", "tgt_words", "rows", "cols", "probs")]
    return names + [f"rate_{r}_{a}" for r in RATES for a in ("keys", "seen", "bad")]
