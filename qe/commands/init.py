"""``qe init``: write a working experiment config for a new language pair from the user's files.

The files are read and checked first (line counts, labels, the declared range), so the config written
is one ``qe run`` accepts. By default it is the strongest config the data and this machine support
(``qe.doctor.choice``: every family whose pieces exist offline for the pair, those reading the user's
post-edits, NMT log-probabilities or decoder logs when given; the MLQE-PE best systems' learner, its
members chosen on the dev split or by CV; ``qe.doctor.init_configs``), with a bundle config beside
it that ``qe run`` builds from the user's training split when the bundle is missing. ``--light``
writes the quick config: ``surface`` features and an SVR, no bundle. Without ``--labels`` there is
nothing to train: the pairs are checked and the ready multilingual model (``mlqe-da-multilingual``)
is offered for zero-shot scores. ``--words`` writes a word-level config instead (``[words]``,
``qe.doctor.init_words``): tags or post-edits per split, a dev split required. Paths in the experiment
config are relative to its folder; the bundle config's are absolute.
"""

from __future__ import annotations

import argparse
import math
import os
import shlex
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from qe.commands import Command, register_command
from qe.doctor.init_configs import (
    WRITTEN_BY,
    Plan,
    render_bundle,
    render_bundle_light,
    render_config,
    render_rich,
    svr_grid,
)
from qe.infra.errors import QEInputError
from qe.infra.io import write_text_atomic
from qe.infra.outputs import check_output_file


def arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``qe init``."""
    parser.add_argument(
        "--words",
        action="store_true",
        help="write a word-level config (OK/BAD tags for MT words, gaps and source words) instead: each "
        "split takes --tags and --source-tags, or --post-edits to derive them from (no --labels); a dev "
        "split is required (the BAD thresholds are chosen on it), test is optional",
    )
    per_line = "one per line (tokenized for --words)"
    parser.add_argument("--src", type=Path, required=True, help=f"training source sentences, {per_line}")
    parser.add_argument("--mt", type=Path, required=True, help=f"training machine translations, {per_line}")
    parser.add_argument(
        "--labels",
        type=Path,
        help="training labels, one number per line (without them: how to score --src / --mt zero-shot)",
    )
    parser.add_argument(
        "--post-edits",
        type=Path,
        help="training post-edits (adds a bundle for `edits`; with --words, the training tags are derived "
        "from them)",
    )
    parser.add_argument("--test-src", type=Path, help="test source sentences (needed with --labels)")
    parser.add_argument("--test-mt", type=Path, help="test machine translations (needed with --labels)")
    parser.add_argument("--test-labels", type=Path, help="test labels (without them: predictions only)")
    parser.add_argument("--src-lang", required=True, help="source language code, e.g. en")
    parser.add_argument("--tgt-lang", required=True, help="target language code, e.g. de")
    parser.add_argument(
        "--label-range", type=float, nargs=2, metavar=("LOW", "HIGH"), help="declared label range (checked)"
    )
    parser.add_argument("--dev-src", type=Path, help="dev source sentences (the learner is chosen on them)")
    parser.add_argument("--dev-mt", type=Path, help="dev machine translations")
    parser.add_argument("--dev-labels", type=Path, help="dev labels")
    parser.add_argument(
        "--corpus",
        type=Path,
        nargs=2,
        action="append",
        default=[],
        metavar=("SRC", "TGT"),
        help="a parallel corpus (line-aligned source and target files) the language models, n-grams and "
        "IBM1 also learn from (repeatable)",
    )
    for split, what in (("train", "training"), ("dev", "dev"), ("test", "test")):
        parser.add_argument(
            f"--{split}-input",
            action="append",
            default=[],
            metavar="NAME=FILE",
            help=f"a per-pair input of the {what} split a family reads, e.g. nmt_logprobs=train.logprobs "
            "(repeatable; give each name for every split)",
        )
    for split, what in (("", "training"), ("dev-", "dev"), ("test-", "test")):
        parser.add_argument(
            f"--{split}tags",
            type=Path,
            help=f"--words: {what} word tags, 2N+1 OK/BAD per MT line of N tokens (gap, word, gap, ..., gap)",
        )
        parser.add_argument(
            f"--{split}source-tags", type=Path, help=f"--words: {what} source tags, N OK/BAD per source line"
        )
        if split:
            parser.add_argument(
                f"--{split}post-edits", type=Path, help=f"--words: {what} post-edits to derive the tags from"
            )
        parser.add_argument(
            f"--{split}alignments",
            type=Path,
            help=f"--words: {what} source-MT alignments (i-j, 0-based) the source tags are derived through "
            "(else IBM1 links trained on the training split)",
        )
    parser.add_argument(
        "--light",
        action="store_true",
        help="the quick config: surface features and an SVR, no resource bundle",
    )
    parser.add_argument(
        "--name", help="experiment name (default: --out's stem; its folder's for config.toml)"
    )
    parser.add_argument("--out", type=Path, default=Path("config.toml"), help="config to write")
    parser.add_argument(
        "--force",
        action="store_true",
        help="replace an existing --out and the resources config beside it when qe init wrote them "
        "(a file qe init did not write is never replaced)",
    )


COMMAND = register_command(
    Command(
        name="init",
        help="write a working experiment config for your own files (no Python needed)",
        description="Check your files and write an experiment config that `qe run` accepts: training, "
        "optional dev and test sentences (and labels) and the language pair; every feature family the "
        "pair supports here, resources built from your training split, an ensemble learner chosen on dev "
        "or by CV (--light: surface features and an SVR). Without labels, check the sentences and say "
        "how to score them with the ready multilingual model. --words writes a word-level config instead: "
        "OK/BAD tags per MT word, gap and source word learnt from --tags and --source-tags or from "
        "--post-edits, the thresholds chosen on the dev split (docs/word-level.md).",
        arguments=arguments,
        handler=lambda args: run(args),  # defined below
    )
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
    from qe.doctor.init_words import refuse_word_options

    for option in ("src_lang", "tgt_lang"):
        if not LANGUAGE_CODE.fullmatch(getattr(args, option)):
            raise QEInputError(
                f"--{option.replace('_', '-')} {getattr(args, option)!r} is not a language code like en"
            )
    if args.words:
        return write_words(args)
    refuse_word_options(args)
    if args.labels is None:
        return offer_zero_shot(args)
    if args.test_src is None or args.test_mt is None:
        raise QEInputError("--test-src and --test-mt are needed with --labels (the pairs to test on)")
    if args.out.suffix != ".toml":
        raise QEInputError("--out must end in .toml", args.out)
    splits = split_files(args)
    given = [path for files in splits.values() for path in files.values()]
    given += [path for corpus in args.corpus for path in corpus]
    check_config_path(args.out, args.force, given)
    bounds = label_bounds(args)
    data = {split: load_split_files(files, bounds) for split, files in splits.items()}
    if len(data["train"]) < 10:
        raise QEInputError(
            f"{len(data['train'])} training pairs are too few to learn from (5-fold CV needs 10+)", args.src
        )
    check_inputs(splits, data)
    check_corpora(args.corpus)
    name, folder = out_name(args)
    if args.light:
        if args.dev_src or args.corpus or any(getattr(args, f"{s}_input") for s in ("train", "dev", "test")):
            raise QEInputError(
                "--light writes the quick surface config: it reads no dev split, corpus or input"
            )
        return write_light(args, name, folder, data["train"], len(data["test"]), given)
    plan = make_plan(args, name, splits, data)
    bundle = plan.bundle_config if plan.members else None
    if bundle is not None:
        check_config_path(bundle, args.force, given)
    made = bundle is not None and not bundle.exists()
    if bundle is not None:
        write_text_atomic(bundle, render_bundle(plan))
    try:
        write_checked(args.out, folder, render_rich(plan))
    except QEInputError:
        if made:
            bundle.unlink(missing_ok=True)
        raise
    sizes = ", ".join(f"{len(data[split]):,} {split}" for split in data)
    print(f"wrote {args.out}: {sizes} pairs, {args.src_lang}-{args.tgt_lang}")
    for choice in plan.choices:
        print(f"  {'+' if choice.chosen else '-'} {choice.family}: {choice.why}")
    if bundle is not None:
        print(f"wrote {bundle}: qe run builds the bundle {plan.bundle_dir} from it (once)")
    _say_tagger_losses(args)
    print(f"next: qe run {args.out} --output-dir runs/{name}")
    return 0


def out_name(args: argparse.Namespace) -> tuple[str, Path]:
    """The experiment's name (``--name``, else ``--out``'s stem, its folder's for config.toml) and the
    folder ``--out`` is written in (made when missing)."""
    default = args.out.stem if args.out.stem != "config" else args.out.resolve().parent.name
    name = args.name or default or f"{args.src_lang}-{args.tgt_lang}"
    folder = args.out.parent if str(args.out.parent) else Path(".")
    folder.mkdir(parents=True, exist_ok=True)
    return name, folder


def write_words(args: argparse.Namespace) -> int:
    """``--words``: check every split's files whole with the word-level readers and write a word-level
    config (a ``[words]`` table) that ``qe run`` trains the word tagger from; nothing is written when
    a file is refused."""
    from qe.doctor.init_words import bad_share, read_word_splits, render_words, word_splits
    from qe.run.words import load_word_config

    splits = word_splits(args)
    if args.out.suffix != ".toml":
        raise QEInputError("--out must end in .toml", args.out)
    check_config_path(args.out, args.force, [path for files in splits.values() for path in files.values()])
    data = read_word_splits(splits)
    name, folder = out_name(args)
    pair = f"{args.src_lang}-{args.tgt_lang}"
    write_checked(
        args.out,
        folder,
        render_words(name, args.out, (args.src_lang, args.tgt_lang), splits, data),
        load_word_config,
    )
    sizes = ", ".join(f"{len(data[split]):,} {split}" for split in data)
    print(f"wrote {args.out}: word level, {sizes} sentences, {pair}")
    for split in data:
        print(f"  {split}: {bad_share(data[split])}")
    print(f"next: qe run {args.out} --output-dir runs/{name}")
    return 0


def split_files(args: argparse.Namespace) -> dict[str, dict[str, Path]]:
    """Each split's files by role (src, mt, labels, post_edits, the inputs named), refusing a dev split
    given in part and an input given for some splits only."""
    dev = {"src": args.dev_src, "mt": args.dev_mt, "labels": args.dev_labels}
    if any(dev.values()) and not all(dev.values()):
        raise QEInputError("--dev-src, --dev-mt and --dev-labels go together (a dev split needs all three)")
    splits = {
        "train": {"src": args.src, "mt": args.mt, "labels": args.labels, "post_edits": args.post_edits},
        **({"dev": dev} if all(dev.values()) else {}),
        "test": {"src": args.test_src, "mt": args.test_mt, "labels": args.test_labels},
    }
    splits = {split: {role: path for role, path in files.items() if path} for split, files in splits.items()}
    names = {
        split: parse_inputs(getattr(args, f"{split}_input"), split) for split in ("train", "dev", "test")
    }
    if names["dev"] and "dev" not in splits:
        raise QEInputError("--dev-input needs a dev split (--dev-src, --dev-mt, --dev-labels)")
    for split in splits:
        for other in splits:
            missing = set(names[other]) - set(names[split])
            if missing:
                raise QEInputError(
                    f"--{other}-input names {sorted(missing)[0]}, --{split}-input does not: each input is "
                    "read for every split (a family reads it for the pairs it scores)"
                )
        splits[split].update(names[split])
    return splits


def parse_inputs(given: list[str], split: str) -> dict[str, Path]:
    """``NAME=FILE`` inputs of a split, each a per-pair input some family declares, each file existing."""
    from qe.config.rules import registered
    from qe.features import registry  # noqa: F401  (registers the families' input names)

    known = registered("pair input")()
    inputs: dict[str, Path] = {}
    for item in given:
        name, sep, file = item.partition("=")
        if not sep or not name or not file:
            raise QEInputError(
                f"--{split}-input {item!r}: expected NAME=FILE, e.g. nmt_logprobs=train.logprobs"
            )
        if name not in known:
            raise QEInputError(
                f"--{split}-input {name}: not an input a family reads (known: {', '.join(known)})"
            )
        if name in inputs:
            raise QEInputError(f"--{split}-input {name} is given twice")
        if not Path(file).is_file():
            raise QEInputError(f"--{split}-input {name}: file not found", file)
        inputs[name] = Path(file)
    return inputs


def label_bounds(args: argparse.Namespace) -> tuple[float, float] | None:
    """The declared label range, checked (two finite numbers, low below high)."""
    if not args.label_range:
        return None
    low, high = args.label_range
    if not (math.isfinite(low) and math.isfinite(high)):
        raise QEInputError(f"--label-range needs two finite numbers, got {low:g} {high:g}")
    if low >= high:
        raise QEInputError(f"--label-range needs LOW < HIGH, got {low:g} {high:g}")
    return (low, high)


def load_split_files(files: dict[str, Path], bounds: tuple[float, float] | None) -> Any:
    """A split's pairs (and labels, post-edits) read and checked whole."""
    from qe.data import load_parallel

    return load_parallel(
        files["src"], files["mt"], files.get("labels"), label_range=bounds, post_edits=files.get("post_edits")
    )


def check_inputs(splits: dict[str, dict[str, Path]], data: dict[str, Any]) -> None:
    """A line input has one line per pair of its split."""
    from qe.features.registry import declared_inputs
    from qe.infra.io import read_lines

    lines = {item.name for item in declared_inputs() if item.kind == "lines"}
    roles = {"src", "mt", "labels", "post_edits"}
    for split, files in splits.items():
        for name, path in files.items():
            if name in lines and name not in roles:
                count = len(read_lines(path))
                if count != len(data[split]):
                    raise QEInputError(
                        f"has {count} lines but the {split} split has {len(data[split])} pairs", path
                    )


def check_corpora(corpora: list[list[Path]]) -> None:
    """Each named corpus: two readable UTF-8 files with as many lines."""
    from qe.infra.io import read_text_lines

    for src, tgt in corpora:
        counts = [len(read_text_lines(path)) for path in (src, tgt)]
        if counts[0] != counts[1]:
            raise QEInputError(
                f"--corpus: {counts[0]} source lines but {counts[1]} target lines in {tgt}", src
            )


def make_plan(
    args: argparse.Namespace, name: str, splits: dict[str, dict[str, Path]], data: dict[str, Any]
) -> Plan:
    """The rich config's plan: the families the pair supports here, with their settings, and the sizes
    the learner is set for."""
    import numpy as np

    from qe.doctor.choice import choose_families
    from qe.features.registry import make_families

    inputs = set(splits["train"]) - {"src", "mt", "labels", "post_edits"}
    choices = choose_families(
        args.src_lang, args.tgt_lang, post_edits=args.post_edits is not None, inputs=inputs
    )
    chosen = {c.family: c for c in choices if c.chosen}
    if "embeddings" in chosen and "pseudoref" in chosen:  # the cosines with the second MT's translation too
        chosen["embeddings"].settings["pseudo_ref"] = True
    families = make_families(list(chosen), {name: c.settings for name, c in chosen.items()})
    columns = sum(len(family.column_names()) for family in families)
    rows = len(data["train"]) + (len(data["dev"]) if "dev" in data else 0)
    return Plan(
        name=name,
        out=args.out,
        src_lang=args.src_lang,
        tgt_lang=args.tgt_lang,
        splits=splits,
        choices=choices,
        rows=rows,
        label_sd=float(np.std(data["train"].labels)),
        label_range=tuple(args.label_range) if args.label_range else None,
        corpora=[tuple(corpus) for corpus in args.corpus],
        features=columns,
    )


def check_config_path(path: Path, force: bool, inputs: list[Path]) -> None:
    """A config qe init is to write (``--out``, or the bundle config beside it) may be written: never
    an input, and either absent or (with --force) one qe init wrote; a file of the user's never."""
    check_output_file(path, inputs)
    if os.path.lexists(path) and not _written_by_qe(path):
        raise QEInputError(
            "exists and was not written by qe init; --force replaces only configs qe init wrote, so "
            "nothing was written (move it away, or choose another --out)",
            path,
        )
    if path.exists() and not force:
        raise QEInputError("already exists (pass --force to replace it)", path)


def write_checked(out: Path, folder: Path, text: str, check: Callable[[Path], object] | None = None) -> None:
    """Write the config only once ``qe run`` accepts it (``check``, by default the experiment config's
    reader): checked in a draft beside ``out`` (relative paths resolve the same), which then replaces
    it; a refused config replaces nothing (the draft is opened as open() creates files, so it gets the
    umask's mode, not a temporary file's 0600)."""
    from qe.run.config import load_config

    check = check or load_config
    draft = folder / f".{out.name}.{uuid.uuid4().hex[:8]}.toml"
    try:
        with draft.open("x", encoding="utf-8") as handle:
            handle.write(text)
    except OSError as exc:
        if not isinstance(exc, FileExistsError):  # that one is not ours
            draft.unlink(missing_ok=True)
        raise QEInputError(
            f"cannot write the config here: {exc.strerror or type(exc).__name__}", out
        ) from None
    try:
        check(draft)
        os.replace(draft, out)
    except QEInputError as exc:  # named after --out, not the draft beside it
        raise QEInputError(exc.message, out, exc.line) from None
    finally:
        draft.unlink(missing_ok=True)


def write_light(
    args: argparse.Namespace, name: str, folder: Path, train: Any, tested: int, given: list[Path]
) -> int:
    """``--light``: the surface config (and, with post-edits, a bundle config for ``edits`` to add);
    ``given`` are the input files, which no config written may replace."""
    bundle = None
    if args.post_edits is not None:
        bundle = args.out.with_name(f"{args.out.stem}-resources.toml")
        check_config_path(bundle, args.force, given)
    write_checked(
        args.out, folder, render_config(args, name, folder, bundle, svr_grid(train.labels), len(train))
    )
    pair = f"{args.src_lang}-{args.tgt_lang}"
    print(f"wrote {args.out}: {len(train):,} train, {tested:,} test pairs, {pair} (light)")
    if bundle is not None:
        write_text_atomic(bundle, render_bundle_light(args, name, bundle))
        print(f"wrote {bundle}: builds the edits member from the training post-edits")
    _say_tagger_losses(args)
    print(f"next: qe run {args.out} --output-dir runs/{name}")
    return 0


def _say_tagger_losses(args: argparse.Namespace) -> None:
    import sys

    from qe.doctor import tagless

    tagless.say(tagless.losses({"src": args.src_lang, "tgt": args.tgt_lang}), file=sys.stdout)
