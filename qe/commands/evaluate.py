"""``qe evaluate --gold FILE --pred FILE``: score any predictions file with the WMT12 metrics."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from qe.data import parse_label, read_labels
from qe.errors import QEInputError
from qe.io import read_lines
from qe.metrics import evaluate


def read_predictions(path: Path) -> np.ndarray:
    """Scores from ``id<TAB>score`` (with header), one score per line, or WMT12 submission lines.

    WMT12 lines (``METHOD<TAB>SEGID<TAB>SCORE<TAB>RANK``) are put in SEGID order; a ranking-only
    submission (all scores 0) is turned into scores from its ranks (rank 1 = best).
    """
    lines = read_lines(path)
    first = lines[0].split("\t")
    if [f.strip().lower() for f in first] == ["id", "score"]:
        return np.array(
            [parse_label(line.split("\t")[-1], path, i, None) for i, line in enumerate(lines[1:], 2)]
        )
    if len(first) == 4:
        rows = []
        for number, line in enumerate(lines, 1):
            fields = line.split("\t")
            if len(fields) != 4:
                raise QEInputError(f"expected 4 tab-separated fields, found {len(fields)}", path, number)
            segment, score, rank = (parse_label(v, path, number, None) for v in fields[1:])
            rows.append((segment, score, rank))
        rows.sort()
        scores = np.array([r[1] for r in rows])
        if np.all(scores == 0):
            scores = -np.array([r[2] for r in rows])
        return scores
    return read_labels(path)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "evaluate",
        help="score predictions against gold labels (MAE, RMSE, DeltaAvg, Spearman, ...)",
        description="Score predictions as the official WMT12 scorer does (MAE/RMSE with errors rounded "
        "to 2 decimals, DeltaAvg, Spearman), plus Pearson and error shares.",
    )
    parser.add_argument("--gold", type=Path, required=True, help="gold labels, one per line")
    parser.add_argument(
        "--pred", type=Path, required=True, help="predictions: id<TAB>score, one per line, or WMT12"
    )
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    gold = read_labels(args.gold)
    pred = read_predictions(args.pred)
    if len(gold) != len(pred):
        raise QEInputError(f"has {len(pred)} predictions but {args.gold} has {len(gold)} labels", args.pred)
    metrics = evaluate(gold, pred)
    if args.json:
        print(json.dumps(metrics, indent=2))
    else:
        for key, value in metrics.items():
            print(f"{key:22s} {value:.4f}" if isinstance(value, float) else f"{key:22s} {value}")
    return 0
