"""Reading a bundle config: TOML checked against ``qe.schema.BUNDLE`` (whose member tables the member
kinds hand in; its table-level rules check corpus kinds, the cross-fitting folds and the corpora a
member names), then what needs the registries: a corpus to build from, a registered QE training split
(never its test split, of the bundle's language pair) and each member kind's own checks; defaults are
filled in."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from qe.data import DATASETS
from qe.errors import QEInputError
from qe.io import parse_bounded, require_file
from qe.resources.bundle.members import member_kinds
from qe.schema import BUNDLE, check, is_qe_corpus, mistake

DEFAULT_CROSS_FIT = 5
"""Folds of a QE training corpus unless its ``cross_fit`` says otherwise."""


def check_dataset_languages(where: str, name: str | None, config: dict[str, Any], config_path: Path) -> None:
    """Refuse a registered dataset (a QE corpus, [edits]) of another language pair than the bundle's
    (an "es" LM trained on English post-edits gave features without a word of warning)."""
    pair = (config["languages"]["src"], config["languages"]["tgt"])
    if name in DATASETS and tuple(DATASETS[name].languages) != pair:
        theirs = "-".join(DATASETS[name].languages)
        allowed = f"a dataset of the bundle's languages {pair[0]}-{pair[1]} (it is {theirs})"
        raise QEInputError(mistake(f"{where}.dataset", name, allowed), config_path)


def read_bundle_config(config_path: str | Path) -> dict[str, Any]:
    """Read and check a bundle TOML config against ``qe.schema.BUNDLE`` (unknown keys and sections,
    wrong types and ranges refused), then the cross-references (sides, corpus names)."""
    config_path = require_file(config_path, "bundle config")
    try:
        text = config_path.read_text(encoding="utf-8-sig")  # -sig: drops a BOM
        config = parse_bounded(tomllib.loads, text, config_path, "bundle config")
    except UnicodeDecodeError:
        raise QEInputError("bundle config is not valid UTF-8", config_path) from None
    except tomllib.TOMLDecodeError as exc:
        raise QEInputError(f"invalid TOML: {exc}", config_path) from None
    kinds = member_kinds()  # they hand their tables' rules to the schema (qe.data: the dataset names)
    check(BUNDLE, config, config_path)
    corpora = config.setdefault("corpora", {})
    readers = [kind.section for kind in kinds if kind.reads_corpora and kind.wanted(config)]
    others = any(kind.wanted(config) for kind in kinds if not kind.reads_corpora)
    if not corpora and (readers or not others):
        needed = f"[{readers[0]}] is built from corpora" if readers else "no member is built without one"
        raise QEInputError(
            mistake("corpora", corpora, f"at least one [corpora.NAME] ({needed})"), config_path
        )
    pooled_readers = [kind.section for kind in kinds if kind.wanted(config) and kind.section != "finetuned"]
    for name, table in corpora.items():
        _complete_corpus(name, table, config_path)
        check_dataset_languages(f"corpora.{name}", table.get("dataset"), config, config_path)
        if "datasets" in table and pooled_readers:
            allowed = (
                f"one dataset: [{pooled_readers[0]}] is built for one language pair "
                "(pooled datasets: [finetuned] only)"
            )
            raise QEInputError(mistake(f"corpora.{name}.datasets", table["datasets"], allowed), config_path)
    for kind in kinds:
        for key, table in kind.tables(config):
            if kind.check is not None:
                kind.check(config, key, table, config_path)
    config.setdefault("name", config_path.stem.removeprefix("resources-"))
    return config


def _complete_corpus(name: str, table: dict[str, Any], config_path: Path) -> None:
    """A corpus (checked by the schema's rules) with its defaults filled in; a registered QE training
    split is never its dataset's test split."""
    if not is_qe_corpus(table):
        return
    names = table.get("datasets") or ([table["dataset"]] if "dataset" in table else [])
    if names:
        table.setdefault("split", "train")
    for dataset in names:
        registered = DATASETS[dataset]
        if registered.split_name(table["split"]) == registered.test_split:
            allowed = "a split other than the dataset's test split (resources built from it would leak)"
            raise QEInputError(mistake(f"corpora.{name}.split", table["split"], allowed), config_path)
    fit = table.get("cross_fit", True)
    table["cross_fit"] = DEFAULT_CROSS_FIT if fit is True else int(fit)
    table.setdefault("seed", 0)
