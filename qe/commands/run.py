"""``qe run CONFIG --output-dir DIR``: one experiment end to end, printed beside the published table."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from qe.commands import Command, register_command
from qe.infra.errors import naming


def arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``qe run``."""
    parser.add_argument("config", type=Path, help="TOML experiment config (see configs/)")
    parser.add_argument("--output-dir", type=Path, required=True, help="run directory to create")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing run directory")
    parser.add_argument("--data-dir", type=Path, help="folder with the datasets (default: $QE_DATA_DIR)")
    parser.add_argument("--jobs", type=int, help="parallel jobs for CV and extraction (default from config)")
    parser.add_argument("--json", action="store_true", help="print metrics.json instead of the table")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")


COMMAND = register_command(
    Command(
        name="run",
        help="train on the training split (choices by CV), evaluate on test, write a run directory",
        description="Run an experiment config: writes config.toml, signature.txt, metrics.json, "
        "predictions.tsv and model.skops to the output directory. A word-level config (a [words] table, "
        "configs/mlqe/en-de-words.toml) trains the word tagger instead: config.toml, signature.txt, "
        "metrics.json (dev, and test when given, word-level figures) and model.qwords (docs/word-level.md).",
        arguments=arguments,
        handler=lambda args: run(args),  # defined below
    )
)


def run(args: argparse.Namespace) -> int:
    from qe.run.words import is_word_config

    if is_word_config(args.config):
        return run_words(args)
    from qe.evaluation.metrics import HEADLINE_METRICS
    from qe.run.against import summary_table
    from qe.run.config import apply_overrides, load_config
    from qe.run.pipeline import run_experiment

    config = load_config(args.config, check_learner=False)  # the run's context makes (and checks) it
    config = apply_overrides(config, args.data_dir, args.jobs)
    with naming(args.config):  # an error that names no file comes from the config's choices
        metrics = run_experiment(
            config, args.output_dir, overwrite=args.overwrite, progress=not args.quiet, inputs=[args.config]
        )
    if args.json:
        print(json.dumps(metrics, indent=2))
        return 0
    cv = metrics["cv"]
    print(f"# {config.name}")
    print(f"cv ({cv['folds']}-fold on train): " + "  ".join(f"{m} {cv[m]:.3f}" for m in HEADLINE_METRICS))
    if "test" in metrics:
        print(summary_table(config, metrics))
    print(f"signature: {metrics['signature']}")
    print(f"run directory: {args.output_dir}")
    return 0


def run_words(args: argparse.Namespace) -> int:
    """A word-level config (a ``[words]`` table): train the word tagger, write model.qwords and metrics."""
    from qe.run.words import run_words as train_words
    from qe.run.words import summary

    with naming(args.config):
        metrics = train_words(
            args.config,
            args.output_dir,
            overwrite=args.overwrite,
            data_dir=args.data_dir,
            progress=not args.quiet,
        )
    if args.json:
        print(json.dumps(metrics, indent=2))
        return 0
    print(summary(metrics))
    print(f"signature: {metrics['signature']}")
    print(f"run directory: {args.output_dir}")
    return 0
