"""Bundle-member kinds are records (``qe.bundle.members``): a kind registered from outside qe's
own ``kinds`` folder is checked by the schema, built, cross-fitted, recorded and loaded like a built-in
one, with no other file touched."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
import tomli_w

import qe.config.rules
from qe.bundle import build_bundle, members, read_bundle_config
from qe.bundle.members import CORPUS_LIST, SIDE, BuildContext, MemberKind, register_member
from qe.config.rules import Fields, Int
from qe.infra.errors import QEInputError
from tests.helpers import write_lines

SRC = ["the house is small .", "a green door .", "the wide river .", "one cold day .", "two brown owls ."]
MT = ["la casa es pequeña .", "una puerta verde .", "el río ancho .", "un día frío .", "dos búhos ."]


def _build_vocabulary(
    context: BuildContext, key: str, table: dict[str, Any], outputs: dict[str, Path]
) -> dict[str, dict[str, Any]]:
    """The sorted words of at least ``min_length`` characters of one side's corpora, one per line."""
    side = table.get("side", key)
    names = context.corpus_names(table, (side,))
    length = table.get("min_length", 1)
    words = {word for name in names for tokens in context.tokens(name, side) for word in tokens}
    out = outputs[f"vocabulary.{key}"]
    out.write_text("".join(f"{word}\n" for word in sorted(w for w in words if len(w) >= length)), "utf-8")
    return {f"vocabulary.{key}": context.entry("vocabulary", out, side, names, {"min_length": length})}


VOCABULARY = MemberKind(
    kind="vocabulary",
    load=lambda path, options, manifest: path.read_text(encoding="utf-8").split(),
    section="vocabulary",
    rule=Fields({"side": SIDE, "corpora": CORPUS_LIST, "min_length": Int(1)}),
    per_side=True,
    reads_corpora=True,
    files=lambda key, table: {f"vocabulary.{key}": f"vocabulary.{key}.txt"},
    build=_build_vocabulary,
)


@pytest.fixture()
def vocabulary(monkeypatch: pytest.MonkeyPatch) -> MemberKind:
    """The registry with the vocabulary kind added for one test (the built-in kinds loaded first)."""
    members.member_kinds()
    monkeypatch.setattr(members, "_KINDS", dict(members._KINDS))
    monkeypatch.setattr(
        qe.config.rules, "_TABLES", {kind: dict(tables) for kind, tables in qe.config.rules._TABLES.items()}
    )
    return register_member(VOCABULARY)


@pytest.fixture()
def data(tmp_path: Path) -> Path:
    root = tmp_path / "data"
    root.mkdir()
    write_lines(root / "train.src", SRC)
    write_lines(root / "train.mt", MT)
    write_lines(root / "eval.txt", ["nothing like the training data at all ."])
    return root


def _config(tmp_path: Path, **vocabulary: Any) -> Path:
    config = {
        "name": "kinds",
        "languages": {"src": "en", "tgt": "es"},
        "text": {"style": "moses"},
        "leakage": {"eval_files": ["eval.txt"]},
        "corpora": {"qe": {"src": "train.src", "mt": "train.mt", "cross_fit": 2}},
        "vocabulary": {"src": vocabulary},
    }
    path = tmp_path / "kinds.toml"
    path.write_text(tomli_w.dumps(config), encoding="utf-8")
    return path


def test_a_kind_registered_from_outside_is_built_cross_fitted_and_loaded(tmp_path, data, vocabulary):
    bundle = build_bundle(
        _config(tmp_path, min_length=5),
        tmp_path / "out",
        data_dir=data,
        progress=False,
        token_cache_dir=tmp_path,
    )
    # The source words of five letters or more, by hand.
    by_pair = [["house", "small"], ["green"], ["river"], [], ["brown"]]
    assert bundle["vocabulary.src"] == ["brown", "green", "house", "river", "small"]
    info = bundle.info("vocabulary.src")
    assert (info["kind"], info["file"], info["corpora"], info["side"]) == (
        "vocabulary",
        "vocabulary.src.txt",
        ["qe"],
        "src",
    )
    # Read from the QE training split, so built once more per fold without that fold's pairs.
    fold_map = bundle.get("cross_fit")
    folds = [fold_map.fold(s, m) for s, m in zip(SRC, MT, strict=True)]
    assert [entry["file"] for entry in info["folds"]] == [
        "vocabulary.src.fold0.txt",
        "vocabulary.src.fold1.txt",
    ]
    for fold in (0, 1):
        seen = sorted(word for i, words in enumerate(by_pair) if folds[i] != fold for word in words)
        assert bundle.fold_view(fold)["vocabulary.src"] == seen


def test_the_schema_checks_a_registered_kinds_table_with_its_rule(tmp_path, vocabulary):
    with pytest.raises(QEInputError, match=r"vocabulary\.src\.min_length = 0: expected an integer >= 1"):
        read_bundle_config(_config(tmp_path, min_length=0))
    with pytest.raises(QEInputError, match=r"unknown key 'vocabulary\.src\.max_length'"):
        read_bundle_config(_config(tmp_path, max_length=3))
    with pytest.raises(
        QEInputError, match=r"vocabulary\.src\.corpora\[0\] = 'web': expected a corpus of \[corpora\]"
    ):
        read_bundle_config(_config(tmp_path, corpora=["web"]))


def test_a_section_or_a_kind_is_registered_once(vocabulary):
    with pytest.raises(ValueError, match="'lm' registered twice"):
        register_member(dataclasses.replace(VOCABULARY, section="lm"))
    with pytest.raises(ValueError, match="'kenlm' registered with two loaders"):
        register_member(dataclasses.replace(VOCABULARY, section="words", kind="kenlm"))
    assert register_member(VOCABULARY) is VOCABULARY  # the same record again changes nothing
