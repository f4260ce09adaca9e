"""Reading a word-level run directory (``qe run`` with a ``[words]`` config) for a report, checked: its
``metrics.json`` by a rule, each scored split's predictions file line by line
(``qe.words.predictions``) and against the metrics, so that an edited or mixed-up file is one line
naming it instead of a report that contradicts itself."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from qe.config.rules import Anything, Bool, Fields, Int, List, Number, Optional, Str, TablesOf, check
from qe.evaluation.wordmetrics import METRIC_NAMES, word_scores
from qe.infra.errors import QEInputError
from qe.infra.outputs import WORD_PREDICTIONS
from qe.report.rundir import own_file, read_config, read_json
from qe.words.predictions import KIND_FIELDS, KIND_NAMES, SentencePredictions, read_word_predictions

WORD_MODEL = "model.qwords"
KINDS = tuple(KIND_FIELDS)
SPLITS = tuple(WORD_PREDICTIONS)
OLD_RUN = " (a run written before qe saved word predictions: run `qe run CONFIG` again)"
TOLERANCE = 1e-5
"""How far a figure of metrics.json (rounded to 6 decimals) may lie from the one its split's tags give."""

KIND_METRICS = Fields(
    {**{name: Number(0, 1) for name in METRIC_NAMES}, "mcc": Number(-1, 1), "tags": Int(0)},
    (*METRIC_NAMES, "tags"),
    others=Anything(),
)
SPLIT_METRICS = Fields(dict.fromkeys(KINDS, KIND_METRICS), KINDS, others=Anything())
TOKEN_HEAD = {"seconds": Number(0), "best_epoch": Int(0), "heldout_mcc": Number(-1, 1)}
"""What metrics.json says of the ``tokenhead`` family's token head (``qe.wordmodel.tokenheadfamily``)."""
WORD_METRICS_JSON = Fields(
    {
        "level": Str(("word",)),
        "dev": SPLIT_METRICS,
        "test": Optional(SPLIT_METRICS),
        "thresholds": Fields(dict.fromkeys(KINDS, Number(0, 1)), KINDS, others=Anything()),
        "threshold_chosen_on": Optional(Str()),
        "iterations": Optional(TablesOf(Int(0))),
        "learners": Optional(TablesOf(Str(("hgb", "crf")))),
        "crf_l2": Optional(TablesOf(Number(0))),
        "nmt_features": Optional(Bool()),
        "families": Optional(List(Str())),
        "token_head": Optional(Fields(TOKEN_HEAD, tuple(TOKEN_HEAD))),
        "train_sentences": Optional(Int(0)),
        "training_s": Optional(Number(0)),
        "signature": Optional(Str()),
    },
    ("level", "dev", "thresholds"),
    others=Anything(),
)
"""What a report reads of a word run's ``metrics.json``: per split and kind the four figures and the tag
count, the thresholds, and what the overview shows."""


@dataclass
class WordRun:
    """A word run directory as a report reads it: config (None if absent), metrics, and per scored split
    the sentences of its predictions file."""

    path: Path
    config: dict[str, Any] | None
    metrics: dict[str, Any]
    predictions: dict[str, list[SentencePredictions]]


def is_word_run(run_dir: str | Path) -> bool:
    """Whether ``run_dir`` holds a word-level run: a word model, a word predictions file, or a
    ``config.toml`` with a ``[words]`` table (an unreadable one does not count here)."""
    path = Path(run_dir)
    if not path.is_dir():
        return False
    if any((path / name).is_file() for name in (WORD_MODEL, *WORD_PREDICTIONS.values())):
        return True
    try:
        config = read_config(path)
    except QEInputError:
        return False
    return isinstance(config, dict) and isinstance(config.get("words"), dict)


def load_word_run(run_dir: str | Path) -> WordRun:
    """Read and check a word run directory: ``metrics.json``, ``config.toml`` and the predictions of
    every split the metrics score; a missing or faulty file is one ``QEInputError`` naming it."""
    path = Path(run_dir)
    metrics_path = _required(path, "metrics.json")
    metrics = check(WORD_METRICS_JSON, read_json(metrics_path, "metrics.json"), metrics_path)
    config = read_config(path)
    predictions = {}
    for split in SPLITS:
        scored = metrics.get(split) is not None
        if not scored:
            if own_file(path, WORD_PREDICTIONS[split]) is not None:
                raise QEInputError(
                    f"has no {split} metrics but {WORD_PREDICTIONS[split]} is here", metrics_path
                )
            continue
        predictions_path = _required(path, WORD_PREDICTIONS[split], OLD_RUN)
        sentences = read_word_predictions(predictions_path)
        _check_agreement(metrics[split], sentences, split, metrics_path, predictions_path)
        predictions[split] = sentences
    return WordRun(path, config, metrics, predictions)


def _required(folder: Path, name: str, hint: str = "") -> Path:
    """``folder/name``, which a word run's report cannot do without (``hint``: why it may be missing)."""
    path = own_file(folder, name)
    if path is None:
        raise QEInputError(f"not found: a word run's report reads it{hint}", folder / name)
    return path


def _check_agreement(
    figures: dict[str, Any],
    sentences: list[SentencePredictions],
    split: str,
    metrics_path: Path,
    predictions_path: Path,
) -> None:
    """Refuse a predictions file whose tag counts differ from metrics.json's, or a metrics.json whose
    figures its tags do not give (edited, or from another run)."""
    for kind in KINDS:
        given = figures[kind]
        count = sum(sentence.size(kind) for sentence in sentences)
        if count != given["tags"]:
            raise QEInputError(
                f"holds {count:,} {KIND_NAMES[kind]} tags but metrics.json counts {given['tags']:,} "
                f"for {split}",
                predictions_path,
            )
        scores = word_scores([s.gold[kind] for s in sentences], [s.tags[kind] for s in sentences]).as_dict()
        for name in METRIC_NAMES:
            if not math.isclose(given[name], scores[name], rel_tol=0.0, abs_tol=TOLERANCE):
                raise QEInputError(
                    f"{split}.{kind}.{name} = {given[name]} but the tags of {predictions_path.name} give "
                    f"{scores[name]:.6f}: the files are from different runs or edited",
                    metrics_path,
                )
