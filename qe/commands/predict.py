"""``qe predict --model PATH --src FILE --mt FILE``: score new translations with a saved model, streaming.

The input is read and scored chunk by chunk (``--chunk-size`` pairs) on ``--jobs`` processes or a
Dask cluster (``--backend dask [--scheduler ADDRESS]``), and the output is written as chunks
finish, so memory does not grow with the input (see ``qe.streaming``). With ``--out`` an
interrupted run continues with ``--resume``.

The ``wmt12`` format ranks every sentence against all others, so for that format alone the scores
are kept until the end (as 8-byte floats in the partial file, not in memory) and the ranked lines
are written once the last chunk is scored: N floats are read back, nothing else.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from qe.catalog import ModelOption
from qe.commands.options import (
    add_input_options,
    add_streaming_options,
    check_ids_of_input,
    given_inputs,
    streaming_options,
)
from qe.io import atomic_write, sha256_file
from qe.langid import check_language, script_findings
from qe.outputs import check_output_file
from qe.streaming import (
    AppendSink,
    Chunk,
    ChunkTask,
    Sink,
    TextSink,
    clear_text_memos,
    preload_state,
    run_stream,
)

if TYPE_CHECKING:  # numpy, the model and the metrics (scikit-learn) are imported when scoring
    import numpy as np

TSV_HEADER = "id\tscore\n"


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "predict",
        help="score new source / MT pairs with a saved model",
        description="Compute the features a saved model needs from raw text and write one score per "
        "sentence (tsv: id<TAB>score with a header; wmt12: the official submission lines with ranks). "
        "Streams: memory stays flat however large the input.",
    )
    parser.add_argument(
        "--model",
        action=ModelOption,
        required=True,
        metavar="NAME|PATH",
        help="a ready-made model's name (qe models list) or a model file written by qe run",
    )
    parser.add_argument("--src", type=Path, required=True, help="source sentences, one per line")
    parser.add_argument("--mt", type=Path, required=True, help="machine translations, one per line")
    parser.add_argument(
        "--format",
        choices=["tsv", "wmt12"],
        default="tsv",
        help="output format (wmt12 ranks all sentences: its scores are kept to the end, 8 bytes each)",
    )
    parser.add_argument("--out", type=Path, help="output file (default: standard output)")
    parser.add_argument("--resources", type=Path, help="resource bundle (default: the one the model names)")
    parser.add_argument("--method", default="QE_qe", help="METHOD column of the wmt12 format (TEAM_DESC)")
    parser.add_argument("--no-language-check", action="store_true", help="skip the language check")
    parser.add_argument(
        "--strict",
        action="store_true",
        help="refuse (exit 2) instead of warning when lines are in another script than the model's "
        "languages or hold only emoji / symbols (warnings look at the first chunk; --strict at every one)",
    )
    add_input_options(parser)
    add_streaming_options(parser)
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.set_defaults(func=run)


def format_tsv_rows(start: int, scores) -> str:
    """``id<TAB>score`` rows for scores of the pairs numbered from ``start`` (0-based)."""
    return "".join(f"{start + k}\t{s:.6f}\n" for k, s in enumerate(scores))


@dataclass(frozen=True)
class ScoredChunk:
    """One chunk's scores (each checked to be a finite number, then clipped to the training label
    range) and how many of them the range clipped."""

    scores: np.ndarray
    clipped: int


@dataclass
class Tally:
    """The scores written by this run and how many of them were clipped (counted as chunks are written)."""

    scored: int = 0
    clipped: int = 0

    def scores(self, result: ScoredChunk) -> np.ndarray:
        """``result``'s scores, counted."""
        self.scored += len(result.scores)
        self.clipped += result.clipped
        return result.scores


@dataclass(frozen=True)
class PredictTask(ChunkTask):
    """Score chunks with a saved model: the model and its resources load once per worker process."""

    model: str
    resources: str | None = None
    file_inputs_json: str = "{}"
    input_paths_json: str = "{}"  # src, mt and line input name -> file, so families can name a bad line
    strict_json: str = ""  # with --strict: {"src"/"mt": [language, what, file]}, checked on every chunk

    def setup(self) -> Any:
        from qe.model import QEModel

        model = QEModel.load(self.model)
        resources = model.open_resources(self.resources)
        families = [f.bind(resources) for f in model.make_families(json.loads(self.file_inputs_json))]
        return model, resources, families

    def process(self, state: Any, chunk: Chunk) -> ScoredChunk:
        model, resources, families = state
        for role, (language, what, path) in (
            json.loads(self.strict_json) if self.strict_json else {}
        ).items():
            findings = script_findings(chunk.lines[role], language, what, path, chunk.start + 1)
            if findings:  # --strict: every chunk, not only the first (a bad line 50,000 is refused too)
                raise findings[0]
        extra = {name: lines for name, lines in chunk.lines.items() if name not in ("src", "mt")}
        paths = json.loads(self.input_paths_json)
        table = model.features(
            chunk.lines["src"],
            chunk.lines["mt"],
            ids=chunk.ids,
            resources=resources,
            families=families,
            extra=extra,
            origins={name: (paths[name], chunk.start + 1) for name in chunk.lines if name in paths},
            whole=False,
        )
        clear_text_memos(families, resources)
        return ScoredChunk(*model.checked_scores(table, first_line=chunk.start + 1))


class RankedScoresSink(AppendSink):
    """The wmt12 format: scores kept as float64 in the partial file, ranked and written at the end."""

    suffix = "scores"

    def __init__(self, target: Path | None, method: str, tally: Tally, block: int = 100_000) -> None:
        super().__init__(target)
        self.method = method
        self.tally = tally
        self.block = block
        self._memory: list[np.ndarray] = []  # standard output only: N floats

    def write(self, chunk: Chunk, result: ScoredChunk) -> int:
        import numpy as np

        scores = np.asarray(self.tally.scores(result), dtype="<f8")
        if self._handle is None:
            self._memory.append(scores)
            return 0
        return self.append(scores.tobytes())

    def _lines(self, scores: np.ndarray) -> Iterator[str]:
        from qe.metrics import ranks_from_scores

        ranks = ranks_from_scores(scores)
        for begin in range(0, len(scores), self.block):
            part = zip(scores[begin : begin + self.block], ranks[begin : begin + self.block], strict=True)
            yield "".join(f"{self.method}\t{begin + k}\t{s:.6f}\t{r}\n" for k, (s, r) in enumerate(part, 1))

    def finalize(self) -> None:
        import numpy as np

        if self.target is None:
            scores = np.concatenate(self._memory) if self._memory else np.empty(0)
            for text in self._lines(scores):
                sys.stdout.write(text)
            return
        self.close()
        scores = np.fromfile(self.partial, dtype="<f8")
        with atomic_write(self.target) as handle:
            for text in self._lines(scores):
                handle.write(text)
        self.partial.unlink()


def run(args: argparse.Namespace) -> int:
    from qe.features.registry import check_line_inputs, check_unread_inputs, route_inputs
    from qe.model import QEModel

    if args.out is not None:
        check_output_file(args.out, [args.model, args.src, args.mt, *given_inputs(args).values()])
    model = QEModel.load(args.model)
    given = given_inputs(args)
    lines, _ = route_inputs(model.manifest.get("families", []), given, {})
    file_inputs = {name: str(path) for name, path in given.items() if name not in lines}
    # refuses a model trained on precomputed tables, and bad inputs, before any work
    families = model.make_families(file_inputs)
    resources = model.open_resources(args.resources)  # checks the bundle's signature once, here
    if args.out is not None and model.manifest.get("resources"):
        check_output_file(args.out, [resources.path])  # never write into the bundle being read
    bound = [f.bind(resources) for f in families]
    check_line_inputs(bound, lines, resources)
    check_unread_inputs(bound, lines)
    check_ids_of_input(families, args.src)
    langs = model.manifest.get("languages") or {}

    def check_first(chunk: Chunk) -> None:
        """The language checks on the first chunk: another known language refuses; another script
        or emoji-only lines warn on stderr (refuse with --strict)."""
        if args.no_language_check:
            return
        findings = []
        for role, side, what, path in (
            ("src", "src", "the source file", args.src),
            ("mt", "tgt", "the MT file", args.mt),
        ):
            check_language(chunk.lines[role], langs.get(side, ""), what, str(path))
            findings += script_findings(
                chunk.lines[role], langs.get(side, ""), what, str(path), chunk.start + 1
            )
        for finding in findings:
            if args.strict:
                raise finding
            print(f"qe: warning: {finding}", file=sys.stderr)

    tally = Tally()
    if args.format == "wmt12":
        sink: Sink = RankedScoresSink(args.out, args.method, tally)
    else:
        sink = TextSink(
            args.out, lambda chunk, result: format_tsv_rows(chunk.start, tally.scores(result)), TSV_HEADER
        )
    strict = {
        "src": [langs.get("src", ""), "the source file", str(args.src)],
        "mt": [langs.get("tgt", ""), "the MT file", str(args.mt)],
    }
    task = PredictTask(
        str(args.model.resolve()),
        None if args.resources is None else str(args.resources.resolve()),
        json.dumps(file_inputs, sort_keys=True),
        json.dumps({name: str(path) for name, path in {"src": args.src, "mt": args.mt, **lines}.items()}),
        json.dumps(strict) if args.strict and not args.no_language_check else "",
    )
    preload_state(task, (model, resources, bound))  # what task.setup() would load again
    job = {
        "command": "predict",
        "model_sha256": sha256_file(args.model),
        "resources": resources.signature() if resources is not None else None,
        "format": args.format,
        "method": args.method if args.format == "wmt12" else None,
        "file_inputs": file_inputs,
    }
    run_stream(
        {"src": args.src, "mt": args.mt, **lines},
        task,
        sink,
        job=job,
        check_first=check_first,
        **streaming_options(args),
    )
    if tally.clipped:
        low, high = model.manifest["label_range"]
        print(
            f"qe: warning: {tally.clipped:,} of the {tally.scored:,} scores written were outside the "
            f"training label range [{low:g}, {high:g}] and were clipped to it",
            file=sys.stderr,
        )
    return 0
