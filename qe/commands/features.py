"""``qe features``: print the feature catalogue, or extract feature families from raw text to a table."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from qe.errors import QEInputError
from qe.io import atomic_write, read_lines


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "features",
        help="list the feature catalogue, or extract features from source / MT files",
        description="With --list: print every feature (family, name, definition, resource). Otherwise "
        "extract the given families for line-aligned --src / --mt files into --out (TSV or parquet).",
    )
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
        help="a family setting, e.g. baseline17.quest_compat=true (repeatable; VALUE parsed as JSON)",
    )
    parser.add_argument("--decoder-nbest", type=Path, help="Moses n-best list for the decoder family")
    parser.add_argument("--decoder-trace", type=Path, help="Moses 1-best trace for the decoder family")
    parser.add_argument("--decoder-search-graph", type=Path, help="Moses search graph for the decoder family")
    parser.add_argument("--pseudo-ref", type=Path, help="a second MT output for the pseudoref family")
    parser.add_argument("--jobs", type=int, default=1, help="parallel processes (joblib)")
    parser.add_argument("--batch-size", type=int, default=1000, help="pairs per batch")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.set_defaults(func=run)


def parse_settings(items: list[str]) -> dict[str, dict[str, Any]]:
    """``family.key=value`` strings to per-family settings (values parsed as JSON, else strings)."""
    settings: dict[str, dict[str, Any]] = {}
    for item in items:
        name, sep, raw = item.partition("=")
        family, dot, key = name.partition(".")
        if not sep or not dot or not family or not key:
            raise QEInputError(f"--set expects FAMILY.KEY=VALUE, got {item!r}")
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            value = raw
        settings.setdefault(family, {})[key] = value
    return settings


def catalogue(markdown: bool = False) -> str:
    """Every registered feature: family, column name, definition, resource."""
    from qe.features.extractor import load_builtin_families

    rows = []
    for name, cls in sorted(load_builtin_families().items()):
        for spec in cls.catalogue():
            rows.append((name, f"{name}.{spec.name}", spec.description, spec.resource or "-"))
    if markdown:
        lines = ["| family | feature | definition | resource |", "|---|---|---|---|"]
        lines += [f"| {f} | `{c}` | {d} | {r} |" for f, c, d, r in rows]
        return "\n".join(lines)
    return "\n".join(f"{c:45s} {d}  [{r}]" for _, c, d, r in rows)


def run(args: argparse.Namespace) -> int:
    if args.list:
        print(catalogue(args.markdown))
        return 0
    for option in ("src", "mt", "out"):
        if getattr(args, option) is None:
            raise QEInputError(f"--{option} is required (or use --list)")
    if args.out.suffix not in {".tsv", ".parquet"}:
        raise QEInputError("--out must end in .tsv or .parquet", args.out)
    from qe.features.extractor import extract_features, make_families

    src, mt = read_lines(args.src), read_lines(args.mt)
    if len(src) != len(mt):
        raise QEInputError(
            f"has {len(mt)} lines but {args.src} has {len(src)}", args.mt, min(len(src), len(mt)) + 1
        )
    settings = parse_settings(args.set)
    decoder = {
        "nbest": args.decoder_nbest,
        "trace": args.decoder_trace,
        "search_graph": args.decoder_search_graph,
    }
    settings.setdefault("decoder", {}).update({k: str(v) for k, v in decoder.items() if v is not None})
    extra: dict[str, list[Any]] = {}
    if args.pseudo_ref is not None:
        pseudo = read_lines(args.pseudo_ref)
        if len(pseudo) != len(src):
            raise QEInputError(f"has {len(pseudo)} lines but {args.src} has {len(src)}", args.pseudo_ref)
        extra["pseudo_ref"] = pseudo
    families = make_families([f.strip() for f in args.families.split(",") if f.strip()], settings)
    resources = None
    if args.resources is not None:
        from qe.resources.bundle import open_bundle

        resources = open_bundle(args.resources)
    table = extract_features(
        families,
        [str(i) for i in range(len(src))],
        src,
        mt,
        resources=resources,
        extra=extra,
        batch_size=args.batch_size,
        n_jobs=args.jobs,
        progress=not args.quiet,
    )
    if args.out.suffix == ".parquet":
        with atomic_write(args.out, "wb") as handle:
            table.to_parquet(handle, index=False)
    else:
        with atomic_write(args.out) as handle:
            table.to_csv(handle, sep="\t", index=False, float_format="%.6g")
    return 0
