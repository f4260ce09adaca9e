"""Resource bundles: config checks, building, the manifest, lazy loading, the leakage check and the CLI."""

from __future__ import annotations

import hashlib
import json
import tomllib
from pathlib import Path

import pytest

from qe.bundle import ResourceBundle, build_bundle, read_bundle_config
from qe.cli import main
from qe.infra.errors import QEInputError
from qe.resources.ngrams import NgramCounts
from tests.helpers import write_config, write_lines
from tests.helpers.bundles import (
    TGT,
    WMT12_CONFIG,
    build,
    needs_kenlm,
    restamp,
    small_config,
    write_small_data,
)


def test_build_writes_members_and_manifest(tmp_path, small_data):
    bundle = build(tmp_path, small_data, small_config())
    assert bundle.names() == ["ibm1.s2t", "ngrams.src", "unigrams.src"]
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    corpus = manifest["corpora"]["toy"]["src"]
    expected_sha = hashlib.sha256((small_data / "corpus" / "toy.en").read_bytes()).hexdigest()
    assert corpus == {
        "path": "corpus/toy.en",
        "sha256": expected_sha,
        "bytes": 71,
        "lines": 4,
    }  # 67 characters + 4 newlines
    assert manifest["text"]["src"]["lang"] == "en" and manifest["text"]["tgt"]["lang"] == "es"
    assert manifest["leakage"]["overlaps"] == []
    for entry in manifest["members"].values():
        assert (tmp_path / "out" / entry["file"]).stat().st_size == entry["bytes"]
        assert entry["build_seconds"] >= 0
    # Counts on the tokenized, lower-cased corpus, by hand: "the" 3 times, "is" 3, "small" 2.
    ngrams = bundle["ngrams.src"]
    assert isinstance(ngrams, NgramCounts)
    assert (ngrams.count("the"), ngrams.count("is"), ngrams.count("small")) == (3, 3, 2)
    assert ngrams.count("the house") == 2
    assert bundle["unigrams.src"].count("the") == 9
    # Lazy loading: loaded once, then the same object.
    assert bundle.get("ngrams.src") is bundle.get("ngrams.src")
    assert bundle.get("ngrams.src", min_count=3).count("small") == 0
    # IBM1: "gato" is the only Spanish word in both sentences with "cat", so EM makes it the best.
    table = bundle["ibm1.s2t"]
    best = max(table.translations("cat").items(), key=lambda kv: kv[1])[0]
    assert best == "gato"
    assert bundle.text_processor("tgt").tokenize("La Casa.") == ["la", "casa", "."]


@needs_kenlm
def test_build_with_a_language_model(tmp_path, small_data):
    bundle = build(tmp_path, small_data, small_config(with_lm=True))
    lm = bundle["lm.src"]
    assert bundle.info("lm.src")["settings"] == {"order": 2, "binary": True}
    # A seen sentence is more probable than a scrambled one.
    assert lm.log10_prob(["the", "house", "is", "small", "."]) > lm.log10_prob([".", "small", "house", "the"])


def test_refuses_an_existing_output_unless_overwrite(tmp_path, small_data):
    build(tmp_path, small_data, small_config())
    with pytest.raises(QEInputError, match="--overwrite"):
        build(tmp_path, small_data, small_config())
    build(tmp_path, small_data, small_config(), overwrite=True)


def test_parallel_corpus_of_different_lengths(tmp_path, small_data):
    write_lines(small_data / "corpus" / "toy.es", TGT[:3])
    with pytest.raises(QEInputError, match=r"4 source lines but 3 target lines") as info:
        build(tmp_path, small_data, small_config())
    assert info.value.path.endswith("toy.en") and "toy.es" in info.value.message


def test_empty_and_non_utf8_corpora(tmp_path, small_data):
    write_lines(small_data / "corpus" / "toy.en", b"")
    with pytest.raises(QEInputError, match="empty") as info:
        build(tmp_path, small_data, small_config())
    assert info.value.path.endswith("toy.en")
    write_lines(small_data / "corpus" / "toy.en", b"one\ntwo\ncaf\xe9\nfour\n")
    with pytest.raises(QEInputError, match="UTF-8") as info:
        build(tmp_path, small_data, small_config())
    assert (Path(info.value.path).name, info.value.line) == ("toy.en", 3)
    (small_data / "corpus" / "toy.en").unlink()
    with pytest.raises(QEInputError, match="not found"):
        build(tmp_path, small_data, small_config())


def test_leakage_is_refused_then_allowed(tmp_path, small_data):
    # Line 3 of the corpus, differently cased and spaced, is an evaluation sentence.
    write_lines(small_data / "eval.en", ["a  SMALL cat .", "unrelated"])
    with pytest.raises(QEInputError, match=r"shares 1 sentence") as info:
        build(tmp_path, small_data, small_config())
    assert (Path(info.value.path).name, info.value.line) == ("toy.en", 3)
    assert not (tmp_path / "out").exists()
    bundle = build(tmp_path, small_data, small_config(), allow_overlap=True)
    leakage = bundle.manifest["leakage"]
    assert leakage["allowed"] is True
    assert leakage["overlaps"][0]["count"] == 1 and leakage["overlaps"][0]["first_line"] == 3


def test_config_errors(tmp_path, small_data):
    with pytest.raises(QEInputError, match="unknown key"):
        build(tmp_path, small_data, small_config(extra_section={"a": 1}))
    bad = small_config()
    bad["ngrams"]["src"]["corpora"] = ["nope"]
    with pytest.raises(
        QEInputError, match=r"ngrams\.src\.corpora\[0\] = 'nope': expected a corpus of \[corpora\]"
    ):
        build(tmp_path, small_data, bad)
    no_lang = small_config()
    del no_lang["languages"]["tgt"]
    with pytest.raises(QEInputError, match=r"\[languages\] needs tgt"):
        build(tmp_path, small_data, no_lang)


def test_missing_or_corrupt_member_files(tmp_path, small_data):
    build(tmp_path, small_data, small_config())
    out = tmp_path / "out"
    (out / "ngrams.src.npz").unlink()
    (out / "ibm1.s2t.npz").write_text("house casa not-a-number\n")
    restamp(out, "ibm1.s2t")
    bundle = ResourceBundle(out)
    with pytest.raises(QEInputError, match="missing") as info:
        bundle.get("ngrams.src")
    assert info.value.path.endswith("ngrams.src.npz")
    with pytest.raises(QEInputError) as info:
        bundle.get("ibm1.s2t")
    assert info.value.path.endswith("ibm1.s2t.npz") and info.value.line == 1
    with pytest.raises(QEInputError, match=r"no resource 'lm\.src'"):
        bundle.get("lm.src")
    (out / "manifest.json").write_text("{not json")
    with pytest.raises(QEInputError, match="corrupt") as info:
        ResourceBundle(out)
    assert info.value.path.endswith("manifest.json")


@needs_kenlm
def test_corrupt_language_model_is_named(tmp_path, small_data):
    build(tmp_path, small_data, small_config(with_lm=True))
    lm_file = tmp_path / "out" / "lm.src.bin"
    lm_file.write_bytes(b"\x00garbage" * 10)
    restamp(tmp_path / "out", "lm.src")
    with pytest.raises(QEInputError) as info:
        ResourceBundle(tmp_path / "out")["lm.src"].log10_prob(["a"])
    assert info.value.path.endswith("lm.src.bin")


def test_cli_build_and_overlap_exit_codes(tmp_path, small_data, capsys, monkeypatch):
    monkeypatch.setenv("QE_CACHE_DIR", str(tmp_path / "cache"))  # the token cache goes there
    cfg = write_config(tmp_path / "bundle.toml", small_config())
    out = tmp_path / "cli-out"
    argv = ["resources", "build", str(cfg), "--output", str(out), "--data-dir", str(small_data), "--quiet"]
    assert main(argv) == 0
    assert (out / "manifest.json").is_file()
    assert main(["resources", "info", str(out)]) == 0
    write_lines(small_data / "eval.en", ["The cat is big ."])
    capsys.readouterr()
    assert main([*argv, "--overwrite"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "toy.en:4" in err and "--allow-overlap" in err
    assert main([*argv, "--overwrite", "--allow-overlap"]) == 0


def test_wmt12_config_is_valid():
    config = read_bundle_config(WMT12_CONFIG)
    assert config.name == "wmt12-en-es"
    assert set(config.corpora) == {
        "news-test2008",
        "newssyscomb2009",
        "newstest2011",
        "newstest2013",
        "tatoeba",
        "flores101",
    }
    assert set(config.members["lm"]) == {"src", "tgt"} and config.members["ngrams"]["src"]["max_order"] == 3


@pytest.mark.data
def test_wmt12_config_refuses_newstest2012(tmp_path, data_dir):
    """Adding newstest2012 to the WMT12 config must fail: 289 of its English lines are WMT12 test sources."""
    config = tomllib.loads(WMT12_CONFIG.read_text(encoding="utf-8"))
    config["corpora"] = {
        "newstest2012": {"src": "newstest-en-es/newstest2012.en", "tgt": "newstest-en-es/newstest2012.es"}
    }
    cfg = write_config(tmp_path / "leaky.toml", config)
    with pytest.raises(QEInputError, match=r"shares 289 sentence") as info:
        build_bundle(cfg, tmp_path / "out", data_dir=data_dir, progress=False)
    assert info.value.path.endswith("newstest2012.en")
    assert not (tmp_path / "out").exists()


def test_a_bundle_opened_by_a_relative_path_is_read_from_there_in_any_directory(tmp_path, monkeypatch):
    """A pool of workers started in another directory (joblib reuses one across runs) gets the bundle
    pickled: it must read the bundle that was opened, not one at the same relative path there."""
    import pickle

    here, there = tmp_path / "here", tmp_path / "there"
    for folder, corpus in ((here, ["alpha beta ."] * 4), (there, ["gamma delta ."] * 4)):
        data = write_small_data(folder / "data")
        write_lines(data / "corpus" / "toy.en", corpus)
        monkeypatch.chdir(folder)
        config = write_config(folder / "bundle.toml", {**small_config(), "leakage": {"eval_files": []}})
        build_bundle(config, "models/resources/toy", data_dir=data, progress=False)
    monkeypatch.chdir(here)
    bundle = ResourceBundle("models/resources/toy")
    shipped = pickle.dumps(bundle)
    monkeypatch.chdir(there)
    assert pickle.loads(shipped).get("ngrams.src").count(("alpha",)) == 4
    assert ResourceBundle("models/resources/toy").get("ngrams.src").count(("alpha",)) == 0
