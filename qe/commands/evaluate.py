"""``qe evaluate --gold FILE --pred FILE``: WMT12 metrics of predictions matched to the gold by id.

Gold files are one label per line (the WMT12 ``*.effort`` files) or a TSV whose header names an
``id`` and a ``score`` column (``qe run``'s ``predictions.tsv`` layout, or a dataset table).
Predictions come in three formats, each saying how its rows find their gold label:

* ``id<TAB>score`` with that header (``qe run``, ``qe predict``): by id. Against a one-label-per-line
  gold the ids are the 0-based line indices ``0 .. n-1``, as ``qe run`` and ``qe predict`` write them;
  against a TSV gold, its ``id`` column.
* WMT12 submission lines ``METHOD<TAB>SEGID<TAB>SCORE<TAB>RANK``: SEGID is the 1-based line number
  of the segment (the task's definition), so it names the gold's SEGID-th label.
* one score per line (no ids): by position; the counts must agree.

Every gold sentence must be scored exactly once: a duplicate, missing or unknown id is refused
(exit 2) naming the first one. DeltaAvg needs at least 4 sentences.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from qe.commands import Command, register_command
from qe.evaluation.metrics import METRICS, evaluate
from qe.infra.errors import QEInputError
from qe.infra.io import MAX_SCORE, is_score, parse_label, read_lines

MIN_SENTENCES = 4  # DeltaAvg averages over 2 .. N/2 quantiles
RANKING_METRICS = tuple(name for name, metric in METRICS.items() if metric.ranking)


@dataclass
class ScoreFile:
    """Values read from a gold or predictions file: with their ids (None: matched by position) and
    the file line of each row (for errors). ``style`` is ``plain``, ``tsv`` or ``wmt12``."""

    ids: list[str] | None
    values: np.ndarray
    lines: list[int]
    style: str
    ranking_only: bool = False  # a WMT12 submission with ranks and no scores: no MAE / RMSE


def _score(text: str, path: Path, line: int) -> float:
    value = parse_label(text, path, line, None, what="score")
    if not is_score(value):
        raise QEInputError(f"score {value:g} is beyond {MAX_SCORE:g}: not a prediction", path, line)
    return value


def _plain(path: Path, lines: list[str]) -> ScoreFile:
    """One score per line."""
    values = [_score(text, path, number) for number, text in enumerate(lines, 1)]
    return ScoreFile(None, np.array(values), list(range(1, len(lines) + 1)), "plain")


def _header_columns(line: str) -> dict[str, int] | None:
    """Column positions of a header naming ``id`` and ``score`` (case-insensitive), else None."""
    names = [field.strip().lower() for field in line.split("\t")]
    if "id" in names and "score" in names:
        return {name: names.index(name) for name in ("id", "score")}
    return None


def _read_tsv(path: Path, lines: list[str], columns: dict[str, int]) -> ScoreFile:
    width = len(lines[0].split("\t"))
    ids, values, numbers = [], [], []
    for number, line in enumerate(lines[1:], start=2):
        fields = line.split("\t")
        if len(fields) != width:
            raise QEInputError(f"expected {width} tab-separated fields, found {len(fields)}", path, number)
        ids.append(fields[columns["id"]].strip())
        values.append(_score(fields[columns["score"]], path, number))
        numbers.append(number)
    if not ids:
        raise QEInputError("has a header but no rows", path)
    return ScoreFile(ids, np.array(values), numbers, "tsv")


def _read_wmt12(path: Path, lines: list[str]) -> ScoreFile:
    ids, scores, ranks = [], [], []
    for number, line in enumerate(lines, 1):
        fields = line.split("\t")
        if len(fields) != 4:
            raise QEInputError(f"expected 4 tab-separated fields, found {len(fields)}", path, number)
        try:
            segment = int(fields[1])
        except ValueError:
            raise QEInputError(f"SEGID {fields[1]!r} is not a line number", path, number) from None
        ids.append(str(segment))
        scores.append(_score(fields[2], path, number))
        ranks.append(_score(fields[3], path, number))
    values = np.array(scores)
    ranking_only = bool(np.all(values == 0))
    if ranking_only:  # rank 1 = best
        values = -np.array(ranks)
    return ScoreFile(ids, values, list(range(1, len(lines) + 1)), "wmt12", ranking_only)


def read_predictions(path: Path) -> ScoreFile:
    """Scores from ``id<TAB>score`` (with header), WMT12 submission lines, or one score per line."""
    lines = read_lines(path)
    columns = _header_columns(lines[0])
    if columns is not None:
        return _read_tsv(path, lines, columns)
    if len(lines[0].split("\t")) == 4:
        return _read_wmt12(path, lines)
    return _plain(path, lines)


def read_gold(path: Path) -> ScoreFile:
    """Gold labels: a TSV with ``id`` and ``score`` columns, or one label per line (ids assigned by
    :func:`align` from the predictions' format)."""
    lines = read_lines(path)
    columns = _header_columns(lines[0])
    if columns is not None:
        return _read_tsv(path, lines, columns)
    return _plain(path, lines)


def align(gold: ScoreFile, pred: ScoreFile, gold_path: Path, pred_path: Path) -> np.ndarray:
    """The predictions in gold order, refusing duplicate, unknown and missing ids."""
    n = len(gold.values)
    if pred.ids is None:
        if len(pred.values) != n:
            raise QEInputError(
                f"has {len(pred.values)} predictions but {gold_path} has {n} labels", pred_path
            )
        return pred.values
    if pred.style == "wmt12":
        keys, described = [str(i) for i in range(1, n + 1)], f"SEGIDs 1 to {n}, its line numbers"
    elif gold.ids is None:
        keys, described = [str(i) for i in range(n)], f"ids 0 to {n - 1}, its line indices"
    else:
        keys, described = gold.ids, "the ids of its id column"
        seen_gold: dict[str, int] = {}
        for key, line in zip(keys, gold.lines, strict=True):
            if key in seen_gold:
                raise QEInputError(
                    f"id {key!r} appears twice (also on line {seen_gold[key]})", gold_path, line
                )
            seen_gold[key] = line
    position = {key: index for index, key in enumerate(keys)}
    out = np.full(n, np.nan)
    seen: dict[str, int] = {}
    for key, value, line in zip(pred.ids, pred.values, pred.lines, strict=True):
        if key in seen:
            raise QEInputError(f"id {key!r} appears twice (also on line {seen[key]})", pred_path, line)
        if key not in position:
            raise QEInputError(f"id {key!r} is not in {gold_path} ({described})", pred_path, line)
        seen[key] = line
        out[position[key]] = value
    missing = [key for key in keys if key not in seen]
    if missing:
        raise QEInputError(
            f"no prediction for id {missing[0]!r} of {gold_path} ({len(missing)} of {n} missing)", pred_path
        )
    return out


def arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``qe evaluate``."""
    parser.add_argument(
        "--gold", type=Path, required=True, help="gold labels: one per line, or a TSV with id and score"
    )
    parser.add_argument(
        "--pred",
        type=Path,
        required=True,
        help="predictions: id<TAB>score with a header, WMT12, or one per line",
    )
    parser.add_argument("--json", action="store_true", help="print JSON")


COMMAND = register_command(
    Command(
        name="evaluate",
        help="score predictions against gold labels (MAE, RMSE, DeltaAvg, Spearman, ...)",
        description="Score predictions as the official WMT12 scorer does (MAE/RMSE with errors rounded "
        "to 2 decimals, DeltaAvg, Spearman), plus Pearson and error shares. Rows are matched to the "
        "gold by id: id<TAB>score ids are 0-based line indices of a one-label-per-line gold (or the "
        "gold TSV's id column), WMT12 SEGIDs are 1-based line numbers; headerless scores match by "
        "position. Duplicate, missing and unknown ids are refused.",
        arguments=arguments,
        handler=lambda args: run(args),  # defined below
    )
)


def run(args: argparse.Namespace) -> int:
    gold = read_gold(args.gold)
    scored = read_predictions(args.pred)
    pred = align(gold, scored, args.gold, args.pred)
    if len(gold.values) < MIN_SENTENCES:
        raise QEInputError(
            f"has {len(gold.values)} sentence(s): DeltaAvg needs at least {MIN_SENTENCES}", args.gold
        )
    metrics = evaluate(gold.values, pred)
    if scored.ranking_only:  # the values are minus the ranks: only ranking metrics mean something
        metrics = {k: v for k, v in metrics.items() if k in RANKING_METRICS}
        print("qe: note: a ranking-only submission (every score 0): ranking metrics only", file=sys.stderr)
    if args.json:
        print(json.dumps(metrics, indent=2))
    else:
        for key, value in metrics.items():
            print(f"{key:22s} {value:.4f}" if isinstance(value, float) else f"{key:22s} {value}")
    return 0
