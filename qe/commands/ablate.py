"""``qe ablate CONFIG --output-dir DIR``: leave-one-family-out and family-alone systems vs the full one."""

from __future__ import annotations

import argparse
from pathlib import Path

from qe.commands import Command, register_command
from qe.infra.errors import naming


def arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``qe ablate``."""
    parser.add_argument("config", type=Path, help="TOML experiment config")
    parser.add_argument("--output-dir", type=Path, required=True, help="directory to create")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing directory")
    parser.add_argument("--data-dir", type=Path, help="folder with the datasets (default: $QE_DATA_DIR)")
    parser.add_argument("--jobs", type=int, help="parallel jobs (default from config)")
    parser.add_argument("--bootstrap-samples", type=int, default=1000, help="paired bootstrap resamples")
    parser.add_argument(
        "--systems",
        help="comma-separated systems to fit, e.g. without:lm,only:lm (and the full one; default: all)",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress output")


COMMAND = register_command(
    Command(
        name="ablate",
        help="for every feature family: the system without it and the family alone (CV, test, bootstrap)",
        description="Writes ablation.json, ablation.md and ablation.png to the output directory.",
        arguments=arguments,
        handler=lambda args: run(args),  # defined below
    )
)


def run(args: argparse.Namespace) -> int:
    from qe.run.ablation import ablation_table, check_bootstrap_samples, run_ablation
    from qe.run.config import apply_overrides, load_config

    check_bootstrap_samples(args.bootstrap_samples)
    config = load_config(args.config, check_learner=False)  # the ablation's context makes (and checks) it
    config = apply_overrides(config, args.data_dir, args.jobs)
    with naming(args.config):  # an error that names no file comes from the config's choices
        result = run_ablation(
            config,
            args.output_dir,
            overwrite=args.overwrite,
            progress=not args.quiet,
            bootstrap_samples=args.bootstrap_samples,
            inputs=[args.config],
            systems=[name.strip() for name in args.systems.split(",")] if args.systems else None,
        )
    print(ablation_table(result))
    return 0
