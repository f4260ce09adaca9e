"""``qe resources build --drop-overlap``: corpus lines shared with the evaluation data are left out
(both sides of a parallel line) and listed in the manifest, instead of refusing the build."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import tomli_w

from qe.bundle import build_bundle
from qe.cli import main
from qe.infra.errors import QEInputError
from tests.helpers import write_lines

SRC = [
    "The house is small .",
    "Quarterly results rose 12 percent in March .",  # near-duplicate of an evaluation source
    "A small cat .",
    "The cat is big .",
]
TGT = [
    "La casa es pequeña .",
    "Los resultados subieron .",
    "Un gato pequeño .",  # the same sentence as an evaluation reference
    "El gato es grande .",
]


@pytest.fixture()
def data(tmp_path: Path) -> Path:
    root = tmp_path / "data"
    root.mkdir()
    write_lines(root / "toy.en", SRC)
    write_lines(root / "toy.es", TGT)
    write_lines(
        root / "eval.en", ["Nothing to see here at all .", "Quarterly results rose 15 percent in March!"]
    )
    write_lines(root / "eval.es", ["Un gato pequeño .", "Nada que ver ."])
    return root


def config(**leakage) -> dict:
    return {
        "name": "toy",
        "languages": {"src": "en", "tgt": "es"},
        "text": {"style": "moses"},
        "leakage": {"eval_files": ["eval.en", "eval.es"], **leakage},
        "corpora": {"toy": {"src": "toy.en", "tgt": "toy.es"}},
        "ngrams": {"src": {"side": "src", "max_order": 1}, "tgt": {"side": "tgt", "max_order": 1}},
    }


def write(tmp_path: Path, cfg: dict) -> Path:
    path = tmp_path / "bundle.toml"
    path.write_text(tomli_w.dumps(cfg), encoding="utf-8")
    return path


def test_overlapping_lines_are_dropped_and_listed(tmp_path, data):
    bundle = build_bundle(
        write(tmp_path, config()), tmp_path / "out", data_dir=data, progress=False, drop_overlap=True
    )
    src, tgt = bundle.get("ngrams.src"), bundle.get("ngrams.tgt")
    # Lines 2 (near-duplicate source) and 3 (its reference copied) are gone on both sides.
    assert (src.count("quarterly"), src.count("cat"), src.count("house")) == (0, 1, 1)
    assert (tgt.count("resultados"), tgt.count("gato"), tgt.count("casa")) == (0, 1, 1)
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["corpora"]["toy"]["src"]["lines"] == 2
    dropped = manifest["leakage"]["dropped"]["toy"]
    assert (dropped["lines"], dropped["kept"]) == (2, 2)
    by_side = {entry["side"]: entry for entry in dropped["files"]}
    assert by_side["src"]["corpus"] == "toy.en" and by_side["tgt"]["corpus"] == "toy.es"
    assert (by_side["src"]["count"], by_side["src"]["exact"], by_side["src"]["near_duplicates"]) == (1, 0, 1)
    assert (by_side["tgt"]["count"], by_side["tgt"]["exact"], by_side["tgt"]["first_lines"]) == (1, 1, [3])
    assert by_side["src"]["first_lines"] == [2] and by_side["src"]["eval_files"][0].endswith("eval.en")
    assert by_side["tgt"]["examples"][0]["eval"].endswith("eval.es:1")
    assert manifest["leakage"]["allowed"] is False


def test_the_config_key_drops_too_and_the_cli_says_so(tmp_path, data, capsys):
    path = write(tmp_path, config(drop_overlap=True))
    code = main(
        ["resources", "build", str(path), "--data-dir", str(data), "--output", str(tmp_path / "b"), "--quiet"]
    )
    assert code == 0
    assert (
        "dropped lines shared with the evaluation data: 2 from toy (listed in the manifest)"
        in capsys.readouterr().out
    )


def test_without_dropping_the_build_is_refused_naming_both_ways_out(tmp_path, data, capsys):
    with pytest.raises(QEInputError, match="pass --drop-overlap or --allow-overlap"):
        build_bundle(write(tmp_path, config()), tmp_path / "out", data_dir=data, progress=False)
    path = write(tmp_path, config())
    argv = ["resources", "build", str(path), "--data-dir", str(data), "--output", str(tmp_path / "b")]
    assert main([*argv, "--quiet"]) == 2
    with pytest.raises(SystemExit) as info:
        main([*argv, "--drop-overlap", "--allow-overlap"])
    assert info.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err


def test_a_bad_drop_overlap_value_is_one_line(tmp_path, data):
    with pytest.raises(QEInputError, match=r"leakage.drop_overlap = 'yes': expected true or false"):
        build_bundle(
            write(tmp_path, config(drop_overlap="yes")), tmp_path / "out", data_dir=data, progress=False
        )


def test_training_pairs_shared_with_the_test_set_are_dropped_from_a_qe_corpus(tmp_path, data):
    write_lines(data / "train.src", ["alpha x .", "beta x .", "gamma x .", "delta x ."])
    write_lines(data / "train.mt", ["a y .", "b y .", "c y .", "d y ."])
    write_lines(data / "eval.en", ["beta x ."])  # the test set repeats a training source
    cfg = config(drop_overlap=True)
    cfg["corpora"] = {"qe": {"src": "train.src", "mt": "train.mt", "cross_fit": 2}}
    bundle = build_bundle(write(tmp_path, cfg), tmp_path / "out", data_dir=data, progress=False)
    assert (bundle.get("ngrams.src").count("beta"), bundle.get("ngrams.src").count("x")) == (0, 3)
    assert bundle.info("ngrams.src")["folds"]  # still cross-fitted
    # the corpus says which QE rows its kept lines are (the fine-tuned encoder learns their labels)
    from qe.bundle.config import read_bundle_config
    from qe.bundle.corpora import read_corpora
    from qe.bundle.overlap import check_overlaps

    checked = read_bundle_config(write(tmp_path, cfg))
    corpora = read_corpora(checked, data)
    assert corpora["qe"].rows is None
    check_overlaps(checked, data, corpora, None, allow_overlap=False, drop_overlap=True)
    qe = corpora["qe"]
    assert qe.rows.tolist() == [0, 2, 3]
    assert [qe.qe.src[i] for i in qe.rows] == qe.lines["src"]
