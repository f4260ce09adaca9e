"""``qe init``: write a working experiment config for a new language pair from the user's files.

The files are read and checked first (line counts, labels, the declared range), so the config
written is one ``qe run`` accepts. It uses features that need no resource bundle (``surface``,
with the given languages) and an SVR chosen by cross-validation; with ``--post-edits`` it also
writes a bundle config learning the ``edits`` family from them, and says how to build and use it.
Without ``--labels`` there is nothing to train: the pairs are checked and the ready multilingual
model (``mlqe-da-multilingual``, fine-tuned on the seven MLQE-PE pairs) is offered for zero-shot scores.
Paths in the experiment config are relative to its folder; the bundle config's are absolute.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

from qe.commands import Command, register_command
from qe.infra.errors import QEInputError
from qe.infra.io import write_text_atomic
from qe.infra.outputs import check_output_file

if TYPE_CHECKING:
    import numpy as np

WRITTEN_BY = "# Written by `qe init`"
"""The first line of every file qe init writes: how it recognises a resources config of its own."""


def arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``qe init``."""
    parser.add_argument("--src", type=Path, required=True, help="training source sentences, one per line")
    parser.add_argument("--mt", type=Path, required=True, help="training machine translations, one per line")
    parser.add_argument(
        "--labels",
        type=Path,
        help="training labels, one number per line (without them: how to score --src / --mt zero-shot)",
    )
    parser.add_argument("--post-edits", type=Path, help="training post-edits (adds a bundle for `edits`)")
    parser.add_argument("--test-src", type=Path, help="test source sentences (needed with --labels)")
    parser.add_argument("--test-mt", type=Path, help="test machine translations (needed with --labels)")
    parser.add_argument("--test-labels", type=Path, help="test labels (without them: predictions only)")
    parser.add_argument("--src-lang", required=True, help="source language code, e.g. en")
    parser.add_argument("--tgt-lang", required=True, help="target language code, e.g. de")
    parser.add_argument(
        "--label-range", type=float, nargs=2, metavar=("LOW", "HIGH"), help="declared label range (checked)"
    )
    parser.add_argument(
        "--name", help="experiment name (default: --out's stem; its folder's for config.toml)"
    )
    parser.add_argument("--out", type=Path, default=Path("config.toml"), help="config to write")
    parser.add_argument(
        "--force",
        action="store_true",
        help="replace an existing --out file, and a resources config beside it that qe init wrote "
        "(one qe init did not write is never replaced)",
    )


COMMAND = register_command(
    Command(
        name="init",
        help="write a working experiment config for your own files (no Python needed)",
        description="Check your files and write an experiment config that `qe run` accepts: training "
        "and test sentences (and labels), the language pair, an SVR on the surface features. Without "
        "labels, check the sentences and say how to score them with the ready multilingual model.",
        arguments=arguments,
        handler=lambda args: run(args),  # defined below
    )
)


def _toml(value: object) -> str:
    """A TOML value: strings and numbers in their JSON spelling (valid TOML for these)."""
    return json.dumps(value, ensure_ascii=False)


def _relative(path: Path, folder: Path) -> str:
    """Relative to the config's folder when the file is inside it, else absolute."""
    path, folder = path.resolve(), folder.resolve()
    return path.relative_to(folder).as_posix() if path.is_relative_to(folder) else str(path)


def svr_grid(labels: np.ndarray) -> dict[str, list[float]]:
    """The default SVR grid with epsilon (the error ignored) scaled to the labels' spread: the
    default's 0.1-0.3 suit a 1-5 scale (std ~0.85), not HTER in [0, 1] (std ~0.2)."""
    import numpy as np

    from qe.learners.factory import DEFAULT_SVR_GRID

    scale = float(np.std(labels)) / 0.85 or 1.0
    return {**DEFAULT_SVR_GRID, "epsilon": [float(f"{e * scale:.2g}") for e in DEFAULT_SVR_GRID["epsilon"]]}


def render_config(
    args: argparse.Namespace,
    name: str,
    folder: Path,
    bundle: Path | None,
    grid: dict[str, list[float]],
    rows: int,
) -> str:
    """The experiment config's text (with comments on what to change)."""
    lines = [
        f"{WRITTEN_BY}; run it with: qe run {args.out} --output-dir runs/{name}",
        f"name = {_toml(name)}",
        "",
        "[data]",
        f"languages = {{ src = {_toml(args.src_lang)}, tgt = {_toml(args.tgt_lang)} }}",
    ]
    if args.label_range:
        lines.append(
            f"label_range = [{args.label_range[0]:g}, {args.label_range[1]:g}]  # checked; clips predictions"
        )
    splits = {
        "train": {"src": args.src, "mt": args.mt, "labels": args.labels, "post_edits": args.post_edits},
        "test": {"src": args.test_src, "mt": args.test_mt, "labels": args.test_labels},
    }
    for split, files in splits.items():
        lines += ["", f"[data.{split}]"]
        lines += [f"{role} = {_toml(_relative(path, folder))}" for role, path in files.items() if path]
    lines += [
        "",
        "[features]",
        "# Features that need no resource bundle. More: `qe features --list`; language models,",
        "# IBM1 and n-gram families need `qe resources build` (see docs/own-data.md).",
        'families = ["surface"]',
    ]
    if bundle is not None:
        lines += [
            f"# After `qe resources build {bundle.name} --output models/resources/{name}`, use the",
            "# post-edits too (word edit rates learned from the training post-edits, cross-fitted):",
            '# families = ["surface", "edits"]',
            f'# resources = "models/resources/{name}"',
        ]
    lines += [
        "",
        "[features.settings.surface]",
        f"src_lang = {_toml(args.src_lang)}",
        f"tgt_lang = {_toml(args.tgt_lang)}",
        "",
        *learner_lines(rows, grid),
        "",
        "[cv]",
        "n_jobs = -1  # one worker per core: the same numbers as one worker, sooner",
        "",
    ]
    return "\n".join(lines)


def learner_lines(rows: int, grid: dict[str, list[float]]) -> list[str]:
    """The ``[learner]`` section for ``rows`` training pairs: the exact SVR and ``grid`` up to
    :data:`~qe.learners.factory.FAST_ABOVE` rows, the large-data SVR and its default grid above
    (the exact grid's time grows faster than the rows: hours at 13,000; docs/learners.md)."""
    from qe.learners.factory import FAST_ABOVE

    if rows > FAST_ABOVE:
        return [
            f"# {rows:,} training pairs, more than {FAST_ABOVE:,}: the large-data SVR (RBF kernel through",
            f"# a Nyström map + linear SVR; docs/learners.md). Up to {FAST_ABOVE:,} pairs: the exact SVR.",
            "[learner]",
            'name = "svr_fast"',
            'grid = "default"  # C, gamma, epsilon chosen by 5-fold CV, scaled to the labels and features',
        ]
    return [
        f"# {rows:,} training pairs, at most {FAST_ABOVE:,}: the exact RBF SVR (above: svr_fast)",
        "[learner]",
        'name = "svr"',
        "",
        "[learner.grid]  # chosen by 5-fold CV on the training data; epsilon scaled to the labels' spread",
        *(f"{key} = [{', '.join(f'{v:g}' for v in values)}]" for key, values in grid.items()),
    ]


def render_bundle(args: argparse.Namespace, name: str, bundle: Path) -> str:
    """A resource bundle config learning the ``edits`` member from the training post-edits."""
    files = {"src": args.src, "mt": args.mt, "post_edits": args.post_edits, "labels": args.labels}
    return "\n".join(
        [
            f"{WRITTEN_BY}; build: qe resources build {bundle} --output models/resources/{name}",
            f"name = {_toml(name)}",
            "",
            "[languages]",
            f"src = {_toml(args.src_lang)}",
            f"tgt = {_toml(args.tgt_lang)}",
            "",
            "[text]  # how the edits member tokenizes (Moses tokenizer, lower-cased)",
            'style = "moses"',
            'case = "lower"',
            "",
            "[edits]  # word edit rates of the training post-edits (never the test ones)",
            *(f"{role} = {_toml(str(path.resolve()))}" for role, path in files.items()),
            "",
        ]
    )


def _written_by_qe(path: Path) -> bool:
    """Whether ``path`` is a regular file that qe init wrote (its first line says so)."""
    if path.is_symlink() or not path.is_file():  # a link, a folder, a pipe: never qe's
        return False
    try:
        with path.open("rb") as handle:
            return handle.read(len(WRITTEN_BY.encode())) == WRITTEN_BY.encode()
    except OSError:
        return False


def offer_zero_shot(args: argparse.Namespace) -> int:
    """No training labels: nothing to train, so check the pairs and say how to score them with the
    ready model fine-tuned on the seven MLQE-PE pairs' DA labels (it reads nothing but the text)."""
    from qe.data import load_parallel
    from qe.embeddings.encoder import LANGUAGES
    from qe.model.catalog import MULTILINGUAL

    names = ("post_edits", "label_range", "test_labels")
    given = [f"--{name.replace('_', '-')}" for name in names if getattr(args, name) is not None]
    if given:
        verb = "needs" if len(given) == 1 else "need"
        raise QEInputError(f"{', '.join(given)} {verb} --labels (training labels)")
    scored = [(args.src, args.mt)]
    if (args.test_src is None) != (args.test_mt is None):
        raise QEInputError("--test-src and --test-mt go together")
    if args.test_src is not None:
        scored.append((args.test_src, args.test_mt))
    counts = [len(load_parallel(src, mt)) for src, mt in scored]
    pair = f"{args.src_lang}-{args.tgt_lang}"
    print(
        f"no --labels: nothing to train a model for {pair} on. Score your {sum(counts):,} pairs zero-shot "
        f"with the ready model {MULTILINGUAL}: the USE-M encoder fine-tuned on the DA labels of the seven "
        "MLQE-PE pairs pooled (a DA z-score, higher is better; docs/neural.md gives its figures on "
        "pairs it never saw)."
    )
    unknown = [lang for lang in (args.src_lang, args.tgt_lang) if lang not in LANGUAGES]
    if unknown:
        print(
            f"note: {' and '.join(unknown)} {'is' if len(unknown) == 1 else 'are'} not among the encoder's "
            f"{len(LANGUAGES)} languages ({' '.join(LANGUAGES)}): its words are split into unknown "
            "pieces, so expect weaker scores."
        )
    print(f"  qe models build {MULTILINGUAL}   # once: fine-tunes the encoder on the seven pairs")
    for src, mt in scored:
        files = (shlex.quote(str(path)) for path in (src, mt, f"{mt}.scores.tsv"))  # beside each MT file
        print("  qe predict --model {} --src {} --mt {} --out {}".format(MULTILINGUAL, *files))
    print("With labels for a few hundred of your own pairs, pass --labels to train a model for your pair.")
    return 0


def run(args: argparse.Namespace) -> int:
    from qe.config.rules import LANGUAGE_CODE
    from qe.data import load_parallel
    from qe.run.config import load_config

    for option in ("src_lang", "tgt_lang"):
        if not LANGUAGE_CODE.fullmatch(getattr(args, option)):
            raise QEInputError(
                f"--{option.replace('_', '-')} {getattr(args, option)!r} is not a language code like en"
            )
    if args.labels is None:
        return offer_zero_shot(args)
    if args.test_src is None or args.test_mt is None:
        raise QEInputError("--test-src and --test-mt are needed with --labels (the pairs to test on)")
    if args.out.exists() and not args.force:
        raise QEInputError("already exists (pass --force to replace it)", args.out)
    if args.out.suffix != ".toml":
        raise QEInputError("--out must end in .toml", args.out)
    inputs = [args.src, args.mt, args.labels, args.post_edits, args.test_src, args.test_mt, args.test_labels]
    check_output_file(args.out, inputs)
    if args.label_range and not all(math.isfinite(bound) for bound in args.label_range):
        raise QEInputError(
            f"--label-range needs two finite numbers, got {args.label_range[0]:g} {args.label_range[1]:g}"
        )
    if args.label_range and args.label_range[0] >= args.label_range[1]:
        raise QEInputError(
            f"--label-range needs LOW < HIGH, got {args.label_range[0]:g} {args.label_range[1]:g}"
        )
    bounds = tuple(args.label_range) if args.label_range else None
    train = load_parallel(args.src, args.mt, args.labels, label_range=bounds, post_edits=args.post_edits)
    test = load_parallel(args.test_src, args.test_mt, args.test_labels, label_range=bounds)
    if len(train) < 10:
        raise QEInputError(
            f"{len(train)} training pairs are too few to learn from (5-fold CV needs 10+)", args.src
        )
    default = args.out.stem if args.out.stem != "config" else args.out.resolve().parent.name
    name = args.name or default or f"{args.src_lang}-{args.tgt_lang}"
    folder = args.out.parent if str(args.out.parent) else Path(".")
    folder.mkdir(parents=True, exist_ok=True)
    bundle = None
    if args.post_edits is not None:
        bundle = args.out.with_name(f"{args.out.stem}-resources.toml")
        if os.path.lexists(bundle) and not _written_by_qe(bundle):
            raise QEInputError(
                "exists and was not written by qe init; --force replaces only --out, so nothing was "
                "written (move it away, or choose another --out)",
                bundle,
            )
        if bundle.exists() and not args.force:
            raise QEInputError("already exists (pass --force to replace it)", bundle)
        check_output_file(bundle, inputs)
    # the config must be one `qe run` accepts: checked in a temporary file beside --out (relative
    # paths resolve the same), which then replaces it; a refused config replaces nothing
    # (opened as open() creates files, so it gets the umask's mode, not a temporary file's 0600)
    draft = folder / f".{args.out.name}.{uuid.uuid4().hex[:8]}.toml"
    try:
        with draft.open("x", encoding="utf-8") as handle:
            handle.write(render_config(args, name, folder, bundle, svr_grid(train.labels), len(train)))
    except OSError as exc:
        if not isinstance(exc, FileExistsError):  # that one is not ours
            draft.unlink(missing_ok=True)
        raise QEInputError(
            f"cannot write the config here: {exc.strerror or type(exc).__name__}", args.out
        ) from None
    try:
        load_config(draft)
        os.replace(draft, args.out)
    except QEInputError as exc:  # named after --out, not the draft beside it
        raise QEInputError(exc.message, args.out, exc.line) from None
    finally:
        draft.unlink(missing_ok=True)
    print(
        f"wrote {args.out}: {len(train)} training and {len(test)} test pairs, {args.src_lang}-{args.tgt_lang}"
    )
    if bundle is not None:
        write_text_atomic(bundle, render_bundle(args, name, bundle))
        print(f"wrote {bundle}: builds the edits member from the training post-edits")
    import sys

    from qe.doctor import tagless

    tagless.say(tagless.losses({"src": args.src_lang, "tgt": args.tgt_lang}), file=sys.stdout)
    print(f"next: qe run {args.out} --output-dir runs/{name}")
    return 0
