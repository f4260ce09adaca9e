"""``qe predict --model PATH --src FILE --mt FILE``: score new translations with a saved model, streaming.

The input is read and scored chunk by chunk (``--chunk-size`` pairs) on ``--jobs`` processes or a
Dask cluster (``--backend dask [--scheduler ADDRESS]``), and the output is written as chunks
finish, so memory does not grow with the input (see ``qe.stream``). With ``--out`` an
interrupted run continues with ``--resume``.

The model file is read once and the families bound once per process, in one ``qe.model.scoring``
context: the parent builds it for its checks and scores with it; forked workers inherit it, other
workers build their own once. Each input is read once: scanned whole, its checked bytes then cut
into chunks (an input beyond ``qe.stream.inputs.MEMORY_BUDGET`` is read again, chunk by chunk).

The ``wmt12`` format ranks every sentence against all others, so for that format alone the scores
are kept until the end (as 8-byte floats in the partial file, not in memory) and the ranked lines
are written once the last chunk is scored: N floats are read back, nothing else.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from qe.commands import Command, register_command
from qe.commands.options import (
    add_input_options,
    add_streaming_options,
    check_ids_of_input,
    given_inputs,
    streaming_options,
)
from qe.infra.io import atomic_write
from qe.infra.outputs import check_output_file
from qe.model.catalog import ModelOption
from qe.stream import (
    AppendSink,
    Chunk,
    ChunkTask,
    Sink,
    TextSink,
    preload_state,
    run_stream,
)
from qe.text.langid import check_language, script_findings

if TYPE_CHECKING:  # numpy, the model and the metrics (scikit-learn) are imported when scoring
    import numpy as np

    from qe.model.scoring import Scored, ScoringContext

TSV_HEADER = "id\tscore\n"


def arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``qe predict``."""
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
    parser.add_argument(
        "--words",
        action="store_true",
        help="tag words OK/BAD instead of scoring sentences: --model is a word model (model.qwords of qe run "
        "with a [words] config); --src and --mt are tokenized, tokens separated by whitespace as in "
        "MLQE-PE's files; writes JSONL, one object per pair: id, mt_tags, mt_bad_probability, gap_tags, "
        "gap_bad_probability (N+1 gaps, not interleaved), src_tags, src_bad_probability; "
        "--nmt-tokens and --nmt-logprobs exactly when the model was trained with them",
    )
    parser.add_argument(
        "--alignments",
        type=Path,
        metavar="FILE",
        help="with --words: the source-MT word alignments of each pair (i-j pairs, 0-based, a line per pair, "
        "as MLQE-PE's .src-mt.alignments), exactly when the word model has the aligned family",
    )
    add_input_options(parser)
    add_streaming_options(parser)
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


COMMAND = register_command(
    Command(
        name="predict",
        help="score new source / MT pairs with a saved model",
        description="Compute the features a saved model needs from raw text and write one score per "
        "sentence (tsv: id<TAB>score with a header; wmt12: the official submission lines with ranks). "
        "Streams: memory stays flat however large the input.",
        arguments=arguments,
        handler=lambda args: run(args),  # defined below
    )
)


def format_tsv_rows(start: int, scores) -> str:
    """``id<TAB>score`` rows for scores of the pairs numbered from ``start`` (0-based)."""
    return "".join(f"{start + k}\t{s:.6f}\n" for k, s in enumerate(scores))


@dataclass
class Tally:
    """The scores written by this run and how many of them were clipped (counted as chunks are written)."""

    scored: int = 0
    clipped: int = 0

    def scores(self, result: Scored) -> np.ndarray:
        """``result``'s scores, counted."""
        self.scored += len(result.scores)
        self.clipped += result.clipped
        return result.scores


@dataclass(frozen=True)
class PredictTask(ChunkTask):
    """Score chunks with a saved model: its scoring context is built once per worker process."""

    model: str
    resources: str | None = None
    inputs_json: str = "{}"  # the declared inputs given (input name -> file)
    input_paths_json: str = "{}"  # src, mt and line input name -> file, so families can name a bad line
    strict_json: str = ""  # with --strict: {"src"/"mt": [language, what, file]}, checked on every chunk

    def setup(self) -> ScoringContext:
        from qe.model.scoring import ScoringContext

        return ScoringContext.open(self.model, resources=self.resources, inputs=json.loads(self.inputs_json))

    def process(self, context: ScoringContext, chunk: Chunk) -> Scored:
        from qe.features.base import Pairs

        for role, (language, what, path) in (
            json.loads(self.strict_json) if self.strict_json else {}
        ).items():
            findings = script_findings(chunk.lines[role], language, what, path, chunk.start + 1)
            if findings:  # --strict: every chunk, not only the first (a bad line 50,000 is refused too)
                raise findings[0]
        extra = {name: lines for name, lines in chunk.lines.items() if name not in ("src", "mt")}
        paths = json.loads(self.input_paths_json)
        origins = {name: (paths[name], chunk.start + 1) for name in chunk.lines if name in paths}
        pairs = Pairs.of(
            chunk.lines["src"], chunk.lines["mt"], extra=extra, start=chunk.start, origins=origins
        )
        return context.score(pairs)


class RankedScoresSink(AppendSink):
    """The wmt12 format: scores kept as float64 in the partial file, ranked and written at the end."""

    suffix = "scores"

    def __init__(self, target: Path | None, method: str, tally: Tally, block: int = 100_000) -> None:
        super().__init__(target)
        self.method = method
        self.tally = tally
        self.block = block
        self._memory: list[np.ndarray] = []  # standard output only: N floats

    def write(self, chunk: Chunk, result: Scored) -> int:
        import numpy as np

        scores = np.asarray(self.tally.scores(result), dtype="<f8")
        if self._handle is None:
            self._memory.append(scores)
            return 0
        return self.append(scores.tobytes())

    def _lines(self, scores: np.ndarray) -> Iterator[str]:
        from qe.evaluation.metrics import ranks_from_scores

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


def run_words(args: argparse.Namespace) -> int:
    """``qe predict --words``: tag each pair's words with a word model, JSONL out (atomically)."""
    from qe.infra.errors import QEInputError
    from qe.wordmodel.tagging import tag_files

    given = given_inputs(args)
    if args.alignments is not None:
        given["alignments"] = args.alignments
    others = sorted(set(given) - {"nmt_tokens", "nmt_logprobs", "alignments"})
    if others:
        flag = "--" + others[0].replace("_", "-")
        raise QEInputError(
            f"{flag} is not read by a word model (only --nmt-tokens, --nmt-logprobs and --alignments)"
        )
    streaming = args.jobs != 1 or args.backend != "loky" or args.scheduler or args.resume or args.chunk_size
    if args.format != "tsv" or args.resources is not None or streaming:
        raise QEInputError(
            "--words writes JSONL from one process: --format, --resources, --jobs, --backend, --scheduler, "
            "--chunk-size and --resume do not apply"
        )
    if args.out is not None:
        check_output_file(args.out, [args.model, args.src, args.mt, *given.values()])
    lines = tag_files(
        args.model,
        args.src,
        args.mt,
        given.get("nmt_tokens"),
        given.get("nmt_logprobs"),
        given.get("alignments"),
    )
    if args.out is None:
        for line in lines:
            sys.stdout.write(line)
        return 0
    with atomic_write(args.out) as handle:
        handle.writelines(lines)
    return 0


def run(args: argparse.Namespace) -> int:
    from qe.features.registry import check_line_inputs, check_unread_inputs
    from qe.model.scoring import ScoringContext

    if args.words:
        return run_words(args)
    if args.alignments is not None:
        from qe.infra.errors import QEInputError

        raise QEInputError("--alignments is read only by a word model: add --words")
    if Path(args.model).suffix == ".qwords":
        from qe.infra.errors import QEInputError

        raise QEInputError("is a word model: tag words with qe predict --words", args.model)
    given = given_inputs(args)
    if args.out is not None:
        check_output_file(args.out, [args.model, args.src, args.mt, *given.values()])
    # refuses a bad model, a model trained on precomputed tables, a bundle of another signature and
    # bad inputs before any work
    context = ScoringContext.open(args.model, resources=args.resources, inputs=given)
    model, resources, lines = context.model, context.resources, context.line_inputs
    if args.out is not None and model.manifest.resources:
        check_output_file(args.out, [resources.path])  # never write into the bundle being read
    check_line_inputs(context.families, lines, resources)
    check_unread_inputs(context.families, lines)
    langs = context.languages

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
        json.dumps({name: str(path) for name, path in given.items()}, sort_keys=True),
        json.dumps({name: str(path) for name, path in {"src": args.src, "mt": args.mt, **lines}.items()}),
        json.dumps(strict) if args.strict and not args.no_language_check else "",
    )
    preload_state(task, context)  # what task.setup() would build again
    job = {
        "command": "predict",
        "model_sha256": context.model_sha256,
        "resources": context.bundle_signature,
        "format": args.format,
        "method": args.method if args.format == "wmt12" else None,
        "file_inputs": {name: str(path) for name, path in given.items() if name not in lines},
    }
    run_stream(
        {"src": args.src, "mt": args.mt, **lines},
        task,
        sink,
        job=job,
        check_count=functools.partial(check_ids_of_input, context.families),
        check_first=check_first,
        **streaming_options(args),
    )
    if tally.clipped:
        low, high = model.manifest.label_range
        print(
            f"qe: warning: {tally.clipped:,} of the {tally.scored:,} scores written were outside the "
            f"training label range [{low:g}, {high:g}] and were clipped to it",
            file=sys.stderr,
        )
    return 0
