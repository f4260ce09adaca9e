"""``qe init --words``: the word-level config (a ``[words]`` table, ``qe.run.words``) written from a
user's files: which option gives which file of which split, the combinations a word-level run can use,
the files read and checked whole by the word-level readers (``qe.words.files``), and the config's text.

A word-level run chooses each kind's BAD threshold on dev, and ``qe.run.words`` has no way to carve a
dev share from training, so a dev split is required rather than invented here.
"""

from __future__ import annotations

import argparse
import inspect
from pathlib import Path

from qe.doctor.init_configs import WRITTEN_BY, relative, toml
from qe.infra.errors import QEInputError
from qe.words.files import WordLevelData, read_word_level
from qe.words.tags import BAD, OK

SPLITS = ("train", "dev", "test")
ROLES = ("src", "mt", "tags", "source_tags", "post_edits", "alignments")
"""The files of a split ``qe init --words`` writes into ``[words.<split>]`` (``qe.config.words``)."""

WORD_ONLY = [f"{split}_{role}" for split in ("dev", "test") for role in ROLES[2:]]
WORD_ONLY += ["tags", "source_tags", "alignments"]
"""The options only a word-level config reads (``--dev-post-edits`` too: sentence-level dev and test
splits take no post-edits)."""

SENTENCE_ONLY = ("labels", "dev_labels", "test_labels", "label_range", "light", "corpus")
SENTENCE_ONLY += tuple(f"{split}_input" for split in SPLITS)
"""The options a word-level config does not read."""

MIN_TRAIN = 10
"""Training sentences below which ``qe init --words`` refuses (as the sentence-level init does)."""


def attribute(split: str, role: str) -> str:
    """The parsed option holding a split's file: ``tags`` for training, ``dev_tags`` for dev."""
    return role if split == "train" else f"{split}_{role}"


def option(split: str, role: str) -> str:
    """The command-line option of a split's file: ``--tags`` for training, ``--dev-tags`` for dev."""
    return "--" + attribute(split, role).replace("_", "-")


def _given(args: argparse.Namespace, name: str) -> bool:
    value = getattr(args, name, None)
    return value not in (None, False, [])


def refuse_word_options(args: argparse.Namespace) -> None:
    """Without ``--words``: refuse, in one line, the options only a word-level config reads."""
    given = ["--" + name.replace("_", "-") for name in WORD_ONLY if _given(args, name)]
    if given:
        verb = "is" if len(given) == 1 else "are"
        raise QEInputError(f"{', '.join(given)} {verb} read for a word-level config: add --words")


def word_splits(args: argparse.Namespace) -> dict[str, dict[str, Path]]:
    """Each split's files by role (``ROLES``), refusing in one line what a word-level run cannot use:
    a sentence-level option, a split given in part, no dev split, tags without source tags (or both
    tags and post-edits), alignments that are neither derived through nor in every split."""
    given = ["--" + name.replace("_", "-") for name in SENTENCE_ONLY if _given(args, name)]
    if given:
        verb = "is" if len(given) == 1 else "are"
        raise QEInputError(
            f"{', '.join(given)} {verb} for a sentence-level config; --words writes a word-level one, "
            "which reads tags or post-edits instead of labels"
        )
    splits: dict[str, dict[str, Path]] = {}
    for split in SPLITS:
        files = {role: getattr(args, attribute(split, role)) for role in ROLES}
        files = {role: path for role, path in files.items() if path is not None}
        if split == "dev" and not files:
            raise QEInputError(
                "--words needs a dev split: --dev-src, --dev-mt and --dev-tags with --dev-source-tags, "
                "or --dev-post-edits (each kind's BAD threshold is chosen on dev)"
            )
        if files:
            splits[split] = _checked_roles(split, files)
    if not aligned(splits):
        for split, files in splits.items():
            if "alignments" in files and "post_edits" not in files:
                raise QEInputError(
                    f"{option(split, 'alignments')} are read to derive the source tags from "
                    f"{option(split, 'post_edits')}, or as features when every split has them"
                )
    return splits


def aligned(splits: dict[str, dict[str, Path]]) -> bool:
    """Whether every split has its source-MT alignments: the config then lists the ``aligned`` family."""
    return all("alignments" in files for files in splits.values())


def _checked_roles(split: str, files: dict[str, Path]) -> dict[str, Path]:
    """One split's roles, refused when a word-level run cannot read them as given."""
    pair = f"{option(split, 'src')} and {option(split, 'mt')}"
    if "src" not in files or "mt" not in files:
        others = [option(split, role) for role in files if role not in ("src", "mt")]
        if "src" in files or "mt" in files:
            raise QEInputError(f"{pair} go together")
        raise QEInputError(f"{', '.join(others)} {'needs' if len(others) == 1 else 'need'} {pair}")
    tags, source, edits = ("tags" in files), ("source_tags" in files), ("post_edits" in files)
    if tags != source:
        raise QEInputError(
            f"{option(split, 'tags')} and {option(split, 'source_tags')} go together (the MT words' and "
            "gaps' tags, and the source words')"
        )
    if tags and edits:
        raise QEInputError(
            f"give {option(split, 'tags')} with {option(split, 'source_tags')}, or "
            f"{option(split, 'post_edits')} to derive them from, not both"
        )
    if not tags and not edits:
        raise QEInputError(
            f"the {split} split needs {option(split, 'tags')} and {option(split, 'source_tags')}, or "
            f"{option(split, 'post_edits')} to derive them from"
        )
    return {role: files[role] for role in ROLES if role in files}


def read_word_splits(splits: dict[str, dict[str, Path]]) -> dict[str, WordLevelData]:
    """Every split read and checked whole by the word-level readers (UTF-8, no blank line, as many
    lines in each file, 2N+1 tags per MT line and N per source line, only OK and BAD, alignments inside
    both sentences), then the training tags checked to hold both classes of every kind."""
    data = {}
    for split, files in splits.items():
        tagging = {role: path for role, path in files.items() if role not in ("src", "mt")}
        data[split] = read_word_level(files["src"], files["mt"], **tagging)
    train = data["train"]
    if len(train) < MIN_TRAIN:
        raise QEInputError(
            f"{len(train)} training sentences are too few to learn word tags from ({MIN_TRAIN}+ needed)",
            splits["train"]["src"],
        )
    if train.mt_tags is not None and train.gap_tags is not None and train.src_tags is not None:
        kinds = (
            ("MT word", train.mt_tags, "tags"),
            ("gap", train.gap_tags, "tags"),
            ("source word", train.src_tags, "source_tags"),
        )
        for kind, lines, role in kinds:
            seen = {tag for line in lines for tag in line}
            if len(seen) == 1:
                raise QEInputError(
                    f"every {kind} is tagged {seen.pop()}: the tagger needs both OK and BAD to learn from",
                    splits["train"][role],
                )
    return data


def bad_share(data: WordLevelData) -> str:
    """How many MT words, gaps and source words are BAD, for the terminal (tags given), or how the
    tags will be derived (post-edits)."""
    if data.mt_tags is None or data.gap_tags is None or data.src_tags is None:
        through = "the alignments given" if data.alignments is not None else "IBM1 links from train"
        return f"tags derived from the post-edits by qe run (source words: {through})"
    shares = []
    for kind, lines in (("MT words", data.mt_tags), ("gaps", data.gap_tags), ("source words", data.src_tags)):
        tags = [tag for line in lines for tag in line]
        shares.append(f"{tags.count(BAD) / len(tags):.0%} of {len(tags):,} {kind}")
    return "BAD: " + ", ".join(shares)


def _defaults() -> list[str]:
    """The settings a word-level run takes, with the values it uses when they are left out."""
    from qe.wordmodel.features import WordFeaturizer
    from qe.wordmodel.tagger import WordTagger

    settings = {"folds": inspect.signature(WordFeaturizer).parameters["folds"].default}
    parameters = inspect.signature(WordTagger).parameters
    for key in ("learner", "max_iter", "learning_rate", "max_leaf_nodes", "min_samples_leaf"):
        settings[key] = parameters[key].default
    return [f"{key} = {toml(value) if isinstance(value, str) else value}" for key, value in settings.items()]


def render_words(
    name: str,
    out: Path,
    languages: tuple[str, str],
    splits: dict[str, dict[str, Path]],
    data: dict[str, WordLevelData],
) -> str:
    """The word-level config's text: the languages, the families (``aligned`` when every split has
    alignments), each split's files relative to the config's folder, a comment on where its tags
    come from, the settings left at their defaults named."""
    folder = out.parent if str(out.parent) else Path(".")
    pair = "-".join(languages)
    with_alignments = aligned(splits)
    predict = f"# qe predict --words --model runs/{name}/model.qwords --src NEW.src --mt NEW.mt"
    predict += " --alignments NEW.src-mt.alignments" * with_alignments
    lines = [
        f"{WRITTEN_BY}; run it with: qe run {out} --output-dir runs/{name}",
        f"# A word-level config ({pair}; docs/word-level.md): the tagger learns {OK}/{BAD} for MT words,",
        "# gaps and source words on the training split; each kind's BAD threshold is chosen on dev; test,",
        "# when given, is scored once. Then new pairs are tagged with",
        f"{predict} --out tags.jsonl",
        f"name = {toml(name)}",
        f"description = {toml(f'{pair} word-level QE from your files (qe init --words)')}",
        "seed = 0",
        "",
        "[words]",
        f"src_lang = {toml(languages[0])}",
        f"tgt_lang = {toml(languages[1])}",
        (
            'families = ["core", "aligned"]  # every split has source-MT alignments: read as features, '
            "so tagging needs them too"
            if with_alignments
            else '# families = ["core"]: further word feature families (docs/word-level.md) go here'
        ),
        'threshold = "mcc"  # each kind\'s threshold maximises MCC on dev ("f1_mult": F1-MULT instead)',
        "# Left at their defaults (set them here to change them):",
        f"# {', '.join(_defaults())},",
        "# and max_train_sentences (default: all). NMT log-probabilities: nmt_tokens and nmt_logprobs",
        "# files in every split (docs/word-level.md).",
    ]
    for split, files in splits.items():
        lines += ["", f"# {len(data[split]):,} sentences; {bad_share(data[split])}", f"[words.{split}]"]
        lines += [f"{role} = {toml(relative(path, folder))}" for role, path in files.items()]
    return "\n".join([*lines, ""])
