"""``qe models``: build the ready-made models by name (``qe models build [NAME...]``) and list them
(``qe models list``); ``qe predict --model NAME`` scores with one (see :mod:`qe.model.catalog`)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from qe.commands import Command, register_command
from qe.model.catalog import CATALOG, listing, models_dir, record


def arguments(parser: argparse.ArgumentParser) -> None:
    """``qe models build`` and ``qe models list``, each with its own arguments and handler."""
    sub = parser.add_subparsers(dest="models_command", metavar="ACTION")
    folder_help = "models directory (default $QE_MODELS_DIR, else models/)"

    build = sub.add_parser(
        "build",
        help="train and register ready-made models (all of them without NAME)",
        description="For each NAME (default: every ready-made model): build its resource bundle if it "
        "is missing, run its experiment config as `qe run` does (into MODELS/runs/NAME), and register "
        "the model as MODELS/NAME.skops with a manifest MODELS/NAME.json. A model already built from "
        "the same configs is kept unless --force.",
    )
    build.add_argument("names", nargs="*", metavar="NAME", help=f"model names: {', '.join(CATALOG)}")
    build.add_argument("--models-dir", type=Path, help=folder_help)
    build.add_argument("--data-dir", type=Path, help="folder with the datasets (default: $QE_DATA_DIR)")
    build.add_argument("--jobs", type=int, help="parallel jobs (default: the configs'; same results)")
    build.add_argument("--force", action="store_true", help="rebuild models that are already built")
    build.add_argument("--quiet", action="store_true", help="no progress lines")
    build.set_defaults(func=_build)

    listing = sub.add_parser(
        "list",
        help="list the ready-made models: languages, label, training data, test figures, signature",
    )
    listing.add_argument("--models-dir", type=Path, help=folder_help)
    listing.add_argument("--json", action="store_true", help="one JSON list instead of the text")
    listing.set_defaults(func=_list)


COMMAND = register_command(
    Command(
        name="models",
        help="build the ready-made models by name, or list them (name, languages, figures)",
        arguments=arguments,
    )
)


def _build(args: argparse.Namespace) -> int:
    from qe.config.rules import check_jobs
    from qe.learners.progress import reporting
    from qe.run.ready import build_ready, is_current

    names = list(dict.fromkeys(args.names)) or list(CATALOG)
    for name in names:
        record(name)  # every name checked before anything is built
    jobs = None if args.jobs is None else check_jobs(args.jobs)
    folder = models_dir(args.models_dir)
    for number, name in enumerate(names, 1):
        if not args.force and is_current(name, folder):
            print(f"{name}: already built from these configs ({folder / name}.skops; --force rebuilds it)")
            continue
        started = time.perf_counter()
        if not args.quiet:
            print(f"== {name} ({number}/{len(names)})", file=sys.stderr, flush=True)
        with reporting(not args.quiet):
            manifest = build_ready(name, folder, data_dir=args.data_dir, jobs=jobs, progress=not args.quiet)
        print(
            f"{name}: built in {time.perf_counter() - started:.0f} s: {folder / name}.skops; "
            f"test {_figures(manifest)}"
        )
    return 0


def _figures(manifest: dict[str, Any]) -> str:
    return "  ".join(f"{key.removesuffix('_exact')} {value:.3f}" for key, value in manifest["test"].items())


def _list(args: argparse.Namespace) -> int:
    folder = models_dir(args.models_dir)
    shown = listing(folder)
    if args.json:
        print(json.dumps(shown, indent=2, ensure_ascii=False))
        return 0
    for item in shown:
        entry = CATALOG[item["name"]]
        direction = entry.label_kind.direction
        state = "built" if item["built"] else f"not built (qe models build {item['name']})"
        print(f"{item['name']}  {entry.pair}  {item['label']['kind']} ({direction})  {state}")
        rows = f" ({item['training_rows']:,} pairs)" if item["built"] else ""
        print(f"    training: {item['training_data']}{rows}")
        if item["built"]:
            print(f"    test: {item['test_data']}: {_figures(item)}")
            print(f"    signature: {item['signature']}")
    built = sum(item["built"] for item in shown)
    print(f"{built} of {len(shown)} ready-made models built in {folder}")
    return 0
