"""``qe predict --model PATH --src FILE --mt FILE``: score new translations with a saved model."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from qe.errors import QEInputError
from qe.io import atomic_write, read_lines
from qe.langid import check_language
from qe.metrics import ranks_from_scores
from qe.model import QEModel


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "predict",
        help="score new source / MT pairs with a saved model",
        description="Compute the features a saved model needs from raw text and write one score per "
        "sentence (tsv: id<TAB>score with a header; wmt12: the official submission lines with ranks).",
    )
    parser.add_argument("--model", type=Path, required=True, help="model file written by qe run / qe train")
    parser.add_argument("--src", type=Path, required=True, help="source sentences, one per line")
    parser.add_argument("--mt", type=Path, required=True, help="machine translations, one per line")
    parser.add_argument("--format", choices=["tsv", "wmt12"], default="tsv", help="output format")
    parser.add_argument("--out", type=Path, help="output file (default: standard output)")
    parser.add_argument("--resources", type=Path, help="resource bundle (default: the one the model names)")
    parser.add_argument("--method", default="QE_qe", help="METHOD column of the wmt12 format (TEAM_DESC)")
    parser.add_argument("--no-language-check", action="store_true", help="skip the language check")
    parser.add_argument("--jobs", type=int, default=1, help="parallel processes")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.set_defaults(func=run)


def format_scores(scores, fmt: str, method: str) -> str:
    """Output text: ``id<TAB>score`` rows, or WMT12 ``METHOD<TAB>SEGID<TAB>SCORE<TAB>RANK`` lines."""
    if fmt == "wmt12":
        ranks = ranks_from_scores(scores)
        return "".join(
            f"{method}\t{i}\t{s:.6f}\t{r}\n" for i, (s, r) in enumerate(zip(scores, ranks, strict=True), 1)
        )
    return "id\tscore\n" + "".join(f"{i}\t{s:.6f}\n" for i, s in enumerate(scores))


def run(args: argparse.Namespace) -> int:
    model = QEModel.load(args.model)
    src, mt = read_lines(args.src), read_lines(args.mt)
    if len(src) != len(mt):
        raise QEInputError(
            f"has {len(mt)} lines but {args.src} has {len(src)}", args.mt, min(len(src), len(mt)) + 1
        )
    langs = model.manifest.get("languages") or {}
    if not args.no_language_check:
        check_language(src, langs.get("src", ""), "the source file", str(args.src))
        check_language(mt, langs.get("tgt", ""), "the MT file", str(args.mt))
    resources = model.open_resources(args.resources)
    scores = model.predict(src, mt, resources=resources, n_jobs=args.jobs, progress=not args.quiet)
    text = format_scores(scores, args.format, args.method)
    if args.out is None:
        sys.stdout.write(text)
    else:
        with atomic_write(args.out) as handle:
            handle.write(text)
    return 0
