"""Reading a bundle config: TOML checked against ``qe.schema.BUNDLE`` (whose member tables the member
kinds hand in), then what the rules cannot say: corpus kinds and cross-references, the QE training
split (never a test split, of the bundle's language pair, at most one defining the folds) and each
member kind's own checks; defaults are filled in."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from qe.data import DATASETS
from qe.errors import QEInputError
from qe.io import parse_bounded, require_file
from qe.resources.bundle.corpora import SIDES, is_qe_corpus
from qe.resources.bundle.members import member_kinds
from qe.schema import BUNDLE, check

DEFAULT_CROSS_FIT = 5
"""Folds of a QE training corpus unless its ``cross_fit`` says otherwise."""


def check_dataset_languages(where: str, name: str | None, config: dict[str, Any], config_path: Path) -> None:
    """Refuse a registered dataset (a QE corpus, [edits]) of another language pair than the bundle's
    (an "es" LM trained on English post-edits gave features without a word of warning)."""
    pair = (config["languages"]["src"], config["languages"]["tgt"])
    if name in DATASETS and tuple(DATASETS[name].languages) != pair:
        theirs = "-".join(DATASETS[name].languages)
        raise QEInputError(
            f"[{where}] dataset {name} is {theirs}, but the bundle's [languages] are {pair[0]}-{pair[1]}",
            config_path,
        )


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
    if "languages" not in config:
        raise QEInputError('[languages] needs src = LANG and tgt = LANG (e.g. "en")', config_path)
    kinds = member_kinds()  # they hand their tables' rules to the schema (qe.data: the dataset names)
    check(BUNDLE, config, config_path)
    corpora = config.setdefault("corpora", {})
    readers = [kind.section for kind in kinds if kind.reads_corpora and kind.wanted(config)]
    others = any(kind.wanted(config) for kind in kinds if not kind.reads_corpora)
    if not corpora and (readers or not others):
        needed = f" ([{readers[0]}] is built from corpora)" if readers else ""
        raise QEInputError(f"[corpora] lists no corpus{needed}", config_path)
    for name, table in corpora.items():
        _check_corpus(name, table, config_path)
    for name, table in corpora.items():
        check_dataset_languages(f"corpora.{name}", table.get("dataset"), config, config_path)
    fitted = [n for n, t in corpora.items() if is_qe_corpus(t) and t["cross_fit"]]
    if len(fitted) > 1:
        raise QEInputError(
            f"[corpora.{fitted[1]}]: only one QE training corpus can define the cross-fitting folds "
            f"([corpora.{fitted[0]}] does already)",
            config_path,
        )
    asked = [n for n, t in corpora.items() if not is_qe_corpus(t) and t.get("cross_fit")]
    if asked and not fitted:
        raise QEInputError(
            f"[corpora.{asked[0]}] cross_fit = true needs a QE training corpus to take the folds from "
            '(a [corpora.NAME] with dataset = "..." or src / mt files, and cross_fit)',
            config_path,
        )
    for kind in kinds:
        for key, table in kind.tables(config):
            where = kind.label(key)
            if kind.per_side and table.get("side", key if key in SIDES else None) not in SIDES:
                raise QEInputError(f'{where} needs side = "src" or "tgt"', config_path)
            for corpus in table.get("corpora", []):
                if corpus not in corpora:
                    raise QEInputError(f"{where} names unknown corpus {corpus!r}", config_path)
            if kind.check is not None:
                kind.check(config, key, table, config_path)
    config.setdefault("name", config_path.stem.removeprefix("resources-"))
    return config


_PLAIN_CORPUS_KEYS = (*SIDES, "cross_fit")


def _check_corpus(name: str, table: dict[str, Any], config_path: Path) -> None:
    """A plain corpus (src and/or tgt) or a QE training split; defaults filled, mixtures refused."""
    where = f"[corpora.{name}]"
    if not is_qe_corpus(table):
        if not any(side in table for side in SIDES):
            raise QEInputError(
                f"{where} needs src and/or tgt (or dataset / mt for a QE training split)", config_path
            )
        extra = sorted(set(table) - set(_PLAIN_CORPUS_KEYS))
        if extra:
            raise QEInputError(
                f"{where}: {', '.join(extra)} belong to a QE training split (dataset or mt)", config_path
            )
        if not isinstance(table.get("cross_fit", False), bool):
            raise QEInputError(
                f"{where}: cross_fit = {table['cross_fit']!r} on a plain corpus must be true or false "
                "(the folds come from the QE training corpus)",
                config_path,
            )
        if "src" in table and table.get("src") == table.get("tgt"):
            raise QEInputError(
                f"{where}: src and tgt are the same file ({table['src']}): "
                "a parallel corpus pairs two languages",
                config_path,
            )
        return
    if "tgt" in table:
        raise QEInputError(
            f'{where}: a QE training split has no tgt: its target side is target = "post_edits" or "mt"',
            config_path,
        )
    if "dataset" in table:
        if any(k in table for k in ("src", "mt", "post_edits")):
            raise QEInputError(f"{where}: give dataset or files (src, mt, post_edits), not both", config_path)
        registered = DATASETS[table["dataset"]]
        table.setdefault("split", "train")
        if registered.split_name(table["split"]) == registered.test_split:
            raise QEInputError(
                f"{where}: resources must not be built from the test split (its sentences would leak)",
                config_path,
            )
    elif "src" not in table:
        raise QEInputError(f"{where}: a QE training split from files needs src and mt", config_path)
    elif "split" in table:
        raise QEInputError(f"{where}: split goes with dataset", config_path)
    fit = table.get("cross_fit", True)
    table["cross_fit"] = DEFAULT_CROSS_FIT if fit is True else int(fit)
    table.setdefault("seed", 0)
