"""``qe features``: print the feature catalogue, or extract feature families from raw text to a table.

Extraction streams (see ``qe.stream``): the inputs are read ``--chunk-size`` pairs at a time,
extracted on ``--jobs`` processes or a Dask cluster, and the table is written as chunks finish
(TSV appended; parquet one row group per chunk), so memory stays flat; ``--resume`` continues
an interrupted run.
"""

from __future__ import annotations

import argparse
import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from qe.commands import Command, register_command
from qe.commands.options import (
    add_input_options,
    add_streaming_options,
    check_ids_of_input,
    given_inputs,
    streaming_options,
)
from qe.config.rules import Int, first_repeated
from qe.features.memos import clear_text_memos
from qe.infra.errors import QEInputError
from qe.infra.io import parse_bounded
from qe.infra.outputs import check_output_file
from qe.stream import (
    Chunk,
    ChunkTask,
    ParquetSink,
    Sink,
    TextSink,
    preload_state,
    run_stream,
)


def arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``qe features``."""
    parser.add_argument("--list", action="store_true", help="print the feature catalogue and exit")
    parser.add_argument("--markdown", action="store_true", help="with --list: a markdown table")
    parser.add_argument("--src", type=Path, help="source sentences, one per line")
    parser.add_argument("--mt", type=Path, help="machine translations, one per line")
    parser.add_argument(
        "--families", default="baseline17", help="comma-separated families (default baseline17)"
    )
    parser.add_argument("--resources", type=Path, help="resource bundle directory (qe resources build)")
    parser.add_argument("--out", type=Path, help="output table: .tsv or .parquet")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="FAMILY.KEY=VALUE",
        help="a family setting, e.g. baseline17.quest_compat=true (repeatable; VALUE parsed as JSON, "
        "a bare word as text)",
    )
    add_input_options(parser)
    parser.add_argument("--batch-size", type=int, default=1000, help="pairs per family call within a chunk")
    add_streaming_options(parser)
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


COMMAND = register_command(
    Command(
        name="features",
        help="list the feature catalogue, or extract features from source / MT files",
        description="With --list: print every feature (family, name, definition, resource). Otherwise "
        "extract the given families for line-aligned --src / --mt files into --out (TSV or parquet).",
        arguments=arguments,
        handler=lambda args: run(args),  # defined below
    )
)


def parse_settings(items: list[str]) -> dict[str, dict[str, Any]]:
    """``family.key=value`` strings to per-family settings (values parsed as JSON, else strings)."""
    settings: dict[str, dict[str, Any]] = {}
    for item in items:
        name, sep, raw = item.partition("=")
        family, dot, key = name.partition(".")
        if not sep or not dot or not family or not key:
            raise QEInputError(f"--set expects FAMILY.KEY=VALUE, got {item!r}")
        try:
            value = parse_bounded(json.loads, raw, None, f"--set {name}")
        except json.JSONDecodeError as exc:
            if raw.lstrip()[:1] in ('"', "[", "{"):  # meant as JSON: taking it as a word would hide the typo
                raise QEInputError(
                    f"--set {name}={raw}: not valid JSON ({exc.msg}, character {exc.pos})"
                ) from None
            value = raw
        settings.setdefault(family, {})[key] = value
    return settings


def catalogue(markdown: bool = False) -> str:
    """Every registered feature: family, column name, definition, resource."""
    from qe.features.registry import registered_families

    rows = []
    for name, cls in sorted(registered_families().items()):
        for spec in cls.catalogue():
            rows.append((name, f"{name}.{spec.name}", spec.description, spec.resource or "-"))
    if markdown:
        lines = ["| family | feature | definition | resource |", "|---|---|---|---|"]
        lines += [f"| {f} | `{c}` | {d} | {r} |" for f, c, d, r in rows]
        return "\n".join(lines)
    return "\n".join(f"{c:45s} {d}  [{r}]" for _, c, d, r in rows)


@dataclass(frozen=True)
class FeatureTask(ChunkTask):
    """Extract feature families from chunks; families are made and bound and the resource bundle opened
    once per worker process (the parent's, made for its checks, are handed over with ``preload_state``).

    ``output`` is ``tsv`` (the chunk's rows as TSV text, no header) or ``parquet`` (a DataFrame).
    """

    families: tuple[str, ...]
    settings_json: str
    resources: str | None
    output: str = "tsv"
    batch_size: int = 1000
    input_paths_json: str = "{}"  # src, mt and line input name -> file, so families can name a bad line

    def setup(self) -> Any:
        from qe.features.registry import make_families

        families = make_families(self.families, json.loads(self.settings_json))
        resources = None
        if self.resources is not None:
            from qe.bundle import open_bundle

            resources = open_bundle(self.resources)
        for family in families:
            family.bind(resources)
        return families, resources

    def process(self, state: Any, chunk: Chunk) -> Any:
        from qe.features.base import Pairs
        from qe.features.extractor import extract_features

        families, resources = state
        extra = {name: lines for name, lines in chunk.lines.items() if name not in ("src", "mt")}
        paths = json.loads(self.input_paths_json)
        origins = {name: (paths[name], chunk.start + 1) for name in chunk.lines if name in paths}
        src, mt = chunk.lines["src"], chunk.lines["mt"]
        table = extract_features(
            families,
            Pairs.of(src, mt, extra=extra, origins=origins, ids=chunk.ids, start=chunk.start),
            resources=resources,
            batch_size=self.batch_size,
            n_jobs=1,
            progress=False,
            whole=False,
            bind=False,  # bound once, in setup: a rebind drops what a family built for the last chunk
        )
        clear_text_memos(families, resources)
        if self.output == "parquet":
            return table
        return table.to_csv(None, sep="\t", index=False, header=False, float_format="%.6g")


def run(args: argparse.Namespace) -> int:
    if args.list:
        print(catalogue(args.markdown))
        return 0
    for option in ("src", "mt", "out"):
        if getattr(args, option) is None:
            raise QEInputError(f"--{option} is required (or use --list)")
    if args.out.suffix not in {".tsv", ".parquet"}:
        raise QEInputError("--out must end in .tsv or .parquet", args.out)
    Int(1).check(args.batch_size, "--batch-size", None)
    from qe.features.registry import check_line_inputs, check_unread_inputs, make_families, route_inputs

    given = given_inputs(args)
    check_output_file(args.out, [args.src, args.mt, args.resources, *given.values()])

    names = tuple(f.strip() for f in args.families.split(",") if f.strip())
    if not names:
        raise QEInputError("--families names no family (e.g. --families baseline17,lm; --list shows them)")
    twice = first_repeated(names)
    if twice is not None:
        raise QEInputError(f"--families lists {twice!r} twice")
    lines, settings = route_inputs(list(names), given, parse_settings(args.set))
    resources = None
    if args.resources is not None:
        from qe.bundle import open_bundle

        resources = open_bundle(args.resources)  # refuses a bad bundle before any work
    families = [family.bind(resources) for family in make_families(names, settings)]
    from qe.doctor import tagless

    tagless.say(tagless.family_losses(families, resources))  # once, before any extraction
    check_line_inputs(families, lines, resources)
    check_unread_inputs(families, lines)
    columns = [column for family in families for column in family.column_names()]
    output = "parquet" if args.out.suffix == ".parquet" else "tsv"
    task = FeatureTask(
        names,
        json.dumps(settings, sort_keys=True),
        None if resources is None else str(Path(args.resources).resolve()),
        output,
        args.batch_size,
        json.dumps({name: str(path) for name, path in {"src": args.src, "mt": args.mt, **lines}.items()}),
    )
    preload_state(task, (families, resources))  # what task.setup() would make and bind again
    if output == "parquet":
        sink: Sink = ParquetSink(args.out)
    else:
        sink = TextSink(args.out, lambda chunk, text: text, "\t".join(columns) + "\n")
    inputs = {"src": args.src, "mt": args.mt, **lines}
    job = {
        "command": "features",
        "families": list(names),
        "settings": settings,
        "resources": None if resources is None else resources.signature(),
        "output": output,
    }
    run_stream(
        inputs,
        task,
        sink,
        job=job,
        check_count=functools.partial(check_ids_of_input, families),
        desc="features " + ",".join(names),
        **streaming_options(args),
    )
    return 0
