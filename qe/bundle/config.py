"""Reading a bundle config: TOML checked against ``qe.bundle.sections.BUNDLE`` (whose member tables
the member kinds hand in; its table-level rules check corpus kinds, the cross-fitting folds and the corpora a
member names), then what needs the registries: a corpus to build from, a registered QE training split
(never its test split, of the bundle's language pair) and each member kind's own checks; defaults are
filled in. The result is the frozen ``qe.bundle.sections.BundleConfig``."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from qe.bundle.members import member_kinds
from qe.bundle.sections import BUNDLE, SIDES, BundleConfig, CorpusConfig
from qe.config.rules import check, mistake
from qe.data import DATASETS
from qe.infra.errors import QEInputError
from qe.infra.io import parse_bounded, require_file
from qe.text.processing import TextConfig

DEFAULT_CROSS_FIT = 5
"""Folds of a QE training corpus unless its ``cross_fit`` says otherwise."""


def check_dataset_languages(where: str, name: str | None, config: BundleConfig, config_path: Path) -> None:
    """Refuse a registered dataset (a QE corpus, [edits]) of another language pair than the bundle's
    (an "es" LM trained on English post-edits gave features without a word of warning)."""
    pair = (config.languages.src, config.languages.tgt)
    if name in DATASETS and tuple(DATASETS[name].languages) != pair:
        theirs = "-".join(DATASETS[name].languages)
        allowed = f"a dataset of the bundle's languages {pair[0]}-{pair[1]} (it is {theirs})"
        raise QEInputError(mistake(f"{where}.dataset", name, allowed), config_path)


def read_bundle_config(config_path: str | Path) -> BundleConfig:
    """Read and check a bundle TOML config against ``qe.bundle.sections.BUNDLE`` (unknown keys and
    sections, wrong types and ranges refused), then the cross-references (sides, corpus names)."""
    config_path = require_file(config_path, "bundle config")
    try:
        text = config_path.read_text(encoding="utf-8-sig")  # -sig: drops a BOM
        document = parse_bounded(tomllib.loads, text, config_path, "bundle config")
    except UnicodeDecodeError:
        raise QEInputError("bundle config is not valid UTF-8", config_path) from None
    except tomllib.TOMLDecodeError as exc:
        raise QEInputError(f"invalid TOML: {exc}", config_path) from None
    kinds = member_kinds()  # they hand their tables' rules to the schema (qe.data: the dataset names)
    check(BUNDLE, document, config_path)
    document.setdefault("corpora", {})
    document.setdefault("name", config_path.stem.removeprefix("resources-"))
    config = BundleConfig.from_document(document)
    readers = [kind.section for kind in kinds if kind.reads_corpora and kind.wanted(config)]
    others = any(kind.wanted(config) for kind in kinds if not kind.reads_corpora)
    if not config.corpora and (readers or not others):
        needed = f"[{readers[0]}] is built from corpora" if readers else "no member is built without one"
        raise QEInputError(mistake("corpora", {}, f"at least one [corpora.NAME] ({needed})"), config_path)
    one_pair = [kind.section for kind in kinds if kind.wanted(config) and not kind.pooled]
    corpora = {}
    for name, corpus in config.corpora.items():
        corpora[name] = _complete_corpus(name, corpus, config_path)
        check_dataset_languages(f"corpora.{name}", corpus.dataset, config, config_path)
        if corpus.datasets is not None and one_pair:
            poolers = " and ".join(f"[{kind.section}]" for kind in kinds if kind.pooled)
            allowed = (
                f"one dataset: [{one_pair[0]}] is built for one language pair "
                f"(pooled datasets: {poolers} only)"
            )
            raise QEInputError(
                mistake(f"corpora.{name}.datasets", list(corpus.datasets), allowed), config_path
            )
    config = config.with_corpora(corpora)
    for kind in kinds:
        if kind.check is None:
            continue
        for key, table in kind.tables(config):
            completed = kind.check(config, key, table, config_path)
            if completed is not None:
                config = config.with_table(kind.section or "", key, completed)
    return config


def _complete_corpus(name: str, corpus: CorpusConfig, config_path: Path) -> CorpusConfig:
    """A corpus (checked by the schema's rules) with its defaults filled in; a registered QE training
    split is never its dataset's test split."""
    if not corpus.is_qe:
        return corpus
    if corpus.dataset_names:
        split = corpus.split or "train"
        for dataset in corpus.dataset_names:
            registered = DATASETS[dataset]
            if registered.split_name(split) == registered.test_split:
                allowed = "a split other than the dataset's test split (resources built from it would leak)"
                raise QEInputError(mistake(f"corpora.{name}.split", split, allowed), config_path)
        corpus = corpus.completed(split=split)
    fit = corpus.cross_fit if "cross_fit" in corpus.given else True
    return corpus.completed(cross_fit=DEFAULT_CROSS_FIT if fit is True else int(fit), seed=corpus.seed)


def text_configs(config: BundleConfig, config_path: Path | None) -> dict[str, TextConfig]:
    """Each side's text processing in a checked bundle config: ``[text]``, overridden by
    ``[text.src]`` / ``[text.tgt]``, for the side's language; a bad one names ``config_path``."""
    out = {}
    for side in SIDES:
        values: dict[str, Any] = {**config.text.side(side), "lang": getattr(config.languages, side)}
        try:
            out[side] = TextConfig.from_dict(values)
        except QEInputError as exc:
            raise QEInputError(exc.message, config_path) from None
    return out
