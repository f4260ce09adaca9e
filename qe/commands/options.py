"""Command-line options shared by the streaming commands (``qe features``, ``qe predict``)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from qe.stream import CHUNKS_PER_WORKER, DEFAULT_CHUNK_SIZE, MIN_AUTO_CHUNK


def add_input_options(parser: argparse.ArgumentParser) -> None:
    """One option per input the registered families declare (``--pseudo-ref``, ``--decoder-nbest`` ...)."""
    from qe.features.registry import declared_inputs, registered_families

    for item in declared_inputs():
        users = sorted(n for n, cls in registered_families().items() if item in cls.inputs)
        parser.add_argument(
            item.flag,
            dest=f"input_{item.name}",
            type=Path,
            metavar="FILE",
            help=f"{item.help} (for {', '.join(users)})",
        )


def given_inputs(args: argparse.Namespace) -> dict[str, Path]:
    """The declared inputs given on the command line, by input name."""
    prefix = "input_"
    return {
        k.removeprefix(prefix): v for k, v in vars(args).items() if k.startswith(prefix) and v is not None
    }


def check_ids_of_input(families: Sequence[Any], count: int) -> None:
    """Each family's whole-input id check (a decoder log must cover exactly the input's ``count``
    lines), done once before streaming (``run_stream``'s ``check_count``, with the line count of its
    scan), since a chunk only sees its own ids."""
    from qe.features.base import FeatureFamily

    checking = [f for f in families if type(f).check_ids is not FeatureFamily.check_ids]
    ids = [str(i) for i in range(count)] if checking else []
    for family in checking:
        family.check_ids(ids)


def add_streaming_options(parser: argparse.ArgumentParser) -> None:
    """The options shared by the streaming commands (predict, features)."""
    parser.add_argument(
        "--chunk-size",
        type=int,
        default=None,
        help=f"pairs read and processed at a time (default {DEFAULT_CHUNK_SIZE:,} with one job; with more, "
        f"about {CHUNKS_PER_WORKER} chunks per worker, {MIN_AUTO_CHUNK} to {DEFAULT_CHUNK_SIZE:,} pairs)",
    )
    parser.add_argument("--jobs", type=int, default=1, help="parallel worker processes (default 1)")
    parser.add_argument(
        "--backend",
        choices=["loky", "dask"],
        default="loky",
        help="loky: processes on this machine; dask: a Dask cluster (local unless --scheduler)",
    )
    parser.add_argument("--scheduler", help="address of a Dask scheduler, e.g. tcp://host:8786 (dask only)")
    parser.add_argument(
        "--resume", action="store_true", help="continue an interrupted run writing --out from its last chunk"
    )


def streaming_options(args: argparse.Namespace) -> dict[str, Any]:
    """The ``run_stream`` keyword arguments set by :func:`add_streaming_options` (and ``--quiet``)."""
    return {
        "chunk_size": args.chunk_size,
        "n_jobs": args.jobs,
        "backend": args.backend,
        "scheduler": args.scheduler,
        "resume": args.resume,
        "progress": not args.quiet,
    }
