"""Binary IBM1 and n-gram tables: the same values as the text tables they replace, written by
`qe resources build`, bundles of text tables still load, and a damaged binary table is one line."""

from __future__ import annotations

import gzip
import hashlib
import json
import math
import zipfile
from pathlib import Path

import numpy as np
import pytest

from qe.bundle import ResourceBundle, clear_loaded_members
from qe.cli import main
from qe.infra.errors import QEInputError
from qe.resources.ngrams import NgramCounts
from qe.words.ibm1 import IBM1Table
from tests.helpers import write_lines
from tests.helpers.bundles import build, restamp, small_config

# A GIZA-style table written by hand: t(tgt | src), NULL the empty word.
IBM1_TEXT = """NULL la 0.25
NULL el 0.5
house casa 0.75
house la 0.125
the la 0.5
the el 0.375
cat gato 1.0
"""
NGRAM_HEADER = {"format": "qe-ngram-counts/1", "max_order": 2, "sentences": 3, "tokens": 9, "min_count": 1}
NGRAM_BODY = ["\\1-grams:", "the\t4", "house\t2", "cat\t1", "\\2-grams:", "the house\t2", "the cat\t1"]


def _ibm1_text(tmp_path: Path) -> Path:
    path = tmp_path / "ibm1.txt"
    path.write_text(IBM1_TEXT, encoding="utf-8")
    return path


def _ngram_text(tmp_path: Path) -> Path:
    path = tmp_path / "ngrams.tsv.gz"
    text = "\n".join([json.dumps(NGRAM_HEADER), *NGRAM_BODY]) + "\n"
    path.write_bytes(gzip.compress(text.encode()))
    return path


def test_a_binary_ibm1_table_holds_the_text_tables_values(tmp_path):
    text = IBM1Table.load(_ibm1_text(tmp_path))
    text.save_binary(tmp_path / "ibm1.npz")
    binary = IBM1Table.load(tmp_path / "ibm1.npz")
    assert binary.has_null and len(binary) == 7
    assert binary.translations("house") == {"casa": 0.75, "la": 0.125}
    assert binary.translations("NULL") == {"la": 0.25, "el": 0.5}
    assert binary.prob("cat", "gato") == 1.0 and binary.prob("cat", "la") == 0.0
    assert binary.src_vocab == {"NULL", "house", "the", "cat"} == text.src_vocab
    assert binary.n_translations("the", 0.4) == 1 and binary.translation_counts(0.2) == {
        "NULL": 2,
        "house": 1,
        "the": 2,
        "cat": 1,
    }
    # log P(la casa | the house) = log(.25 + .125 + .5) + log(.75) - 2 log 3 (NULL + 2 words)
    expected = math.log(0.875) + math.log(0.75) - 2 * math.log(3)
    assert binary.sentence_log_prob(["the", "house"], ["la", "casa"]) == pytest.approx(expected, abs=1e-12)
    # min_prob keeps entries >= 0.5 in both formats
    pruned = IBM1Table.load(tmp_path / "ibm1.npz", min_prob=0.5)
    assert (
        pruned.translations("the")
        == {"la": 0.5}
        == IBM1Table.load(tmp_path / "ibm1.txt", 0.5).translations("the")
    )
    assert "house" in pruned.src_vocab and "cat" in pruned.src_vocab and len(pruned) == 4


def test_a_binary_ngram_table_holds_the_text_tables_counts(tmp_path):
    text = NgramCounts.load(_ngram_text(tmp_path))
    text.save_binary(tmp_path / "ngrams.npz")
    binary = NgramCounts.load(tmp_path / "ngrams.npz")
    assert binary.tables == {1: {"the": 4, "house": 2, "cat": 1}, 2: {"the house": 2, "the cat": 1}}
    assert (binary.sentences, binary.tokens, binary.min_count) == (3, 9, 1)
    assert binary.info() == text.info()
    pruned = NgramCounts.load(tmp_path / "ngrams.npz", min_count=2, orders=[2])
    assert pruned.tables == {2: {"the house": 2}} and pruned.min_count == 2
    assert pruned.tables == NgramCounts.load(tmp_path / "ngrams.tsv.gz", min_count=2, orders=[2]).tables


def test_resources_build_writes_binary_tables_in_the_manifest(tmp_path, small_data):
    bundle = build(tmp_path, small_data, small_config())
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    for name in ("ibm1.s2t", "ngrams.src", "unigrams.src"):
        entry = manifest["members"][name]
        data = (tmp_path / "out" / entry["file"]).read_bytes()
        assert entry["file"] == f"{name}.npz" and data[:4] == b"PK\x03\x04"
        assert entry["sha256"] == hashlib.sha256(data).hexdigest() and entry["bytes"] == len(data)
    assert bundle["unigrams.src"].count("the") == 9  # "the (7/9) The (2)" in the truecase model


def test_a_bundle_of_text_tables_still_loads_to_the_same_values(tmp_path, small_data):
    out = tmp_path / "out"
    binary = build(tmp_path, small_data, small_config())
    assert binary.info("ibm1.s2t")["file"] == "ibm1.s2t.npz"
    ibm1, ngrams = binary["ibm1.s2t"], binary["ngrams.src"]
    # what bundles built before wrote: GIZA-style text and gzip text, named in the manifest
    ibm1.save(out / "ibm1.s2t.txt")
    ngrams.save(out / "ngrams.src.tsv.gz")
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["members"]["ibm1.s2t"]["file"] = "ibm1.s2t.txt"
    manifest["members"]["ngrams.src"]["file"] = "ngrams.src.tsv.gz"
    (out / "manifest.json").write_text(json.dumps(manifest))
    restamp(out, "ibm1.s2t")
    restamp(out, "ngrams.src")
    clear_loaded_members()
    old = ResourceBundle(out)
    assert old["ngrams.src"].tables == ngrams.tables
    words = sorted(ibm1.src_vocab)
    assert [old["ibm1.s2t"].translations(w) for w in words] == [ibm1.translations(w) for w in words]


def _corrupt_cases(tmp_path: Path) -> dict[str, Path]:
    """Damaged binary tables, each next to a good one it was made from."""
    IBM1Table.load(_ibm1_text(tmp_path)).save_binary(good := tmp_path / "good.npz")
    data = good.read_bytes()
    cases = {"truncated": tmp_path / "truncated.npz", "bytes flipped": tmp_path / "flipped.npz"}
    cases["truncated"].write_bytes(data[: len(data) // 2])
    flipped = bytearray(data)
    for at in range(200, len(flipped), 97):
        flipped[at] ^= 0xFF
    cases["bytes flipped"].write_bytes(bytes(flipped))
    with np.load(good) as archive:
        arrays = {name: archive[name] for name in archive.files}
    for name, change in {
        "index past the vocabulary": {"cols": arrays["cols"] + 10},
        "probability above one": {"probs": arrays["probs"] * 4},
        "wrong dtype": {"rows": arrays["rows"].astype(np.int64)},
        "missing array": {"probs": None},
        "unsorted entries": {"rows": arrays["rows"][::-1].copy(), "cols": arrays["cols"][::-1].copy()},
    }.items():
        changed = {k: v for k, v in {**arrays, **change}.items() if v is not None}
        np.savez(path := tmp_path / f"{name.replace(' ', '-')}.npz", **changed)
        cases[name] = path
    return cases


def test_a_damaged_binary_ibm1_table_is_refused_with_one_line(tmp_path):
    for what, path in _corrupt_cases(tmp_path).items():
        with pytest.raises(QEInputError) as info:
            IBM1Table.load(path)
        message = str(info.value)
        assert "\n" not in message and info.value.path == str(path), what
        assert "binary" in message or "damaged" in message, (what, message)


def test_a_damaged_binary_ngram_table_is_refused(tmp_path):
    NgramCounts.load(_ngram_text(tmp_path)).save_binary(good := tmp_path / "good.npz")
    with np.load(good) as archive:
        arrays = {name: archive[name] for name in archive.files}
    for name, change in {
        "counts not sorted": {"counts_1": arrays["counts_1"][::-1].copy()},
        "more counts than n-grams": {"counts_2": np.array([5, 2, 1])},
        "no header": {"header": None},
        "another table's format": {"format": np.frombuffer(b"qe-ibm1-table/1", dtype=np.uint8)},
    }.items():
        changed = {k: v for k, v in {**arrays, **change}.items() if v is not None}
        np.savez(path := tmp_path / "bad.npz", **changed)
        with pytest.raises(QEInputError) as info:
            NgramCounts.load(path)
        assert "\n" not in str(info.value) and info.value.path == str(path), name


class _Payload:
    """Unpickling this creates ``marker``: proof that code from the file ran."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


def test_a_pickled_array_is_refused_without_running_it(tmp_path):
    """np.load with allow_pickle=False: a table holding an object array never unpickles it."""
    marker = tmp_path / "ran"
    IBM1Table.load(_ibm1_text(tmp_path)).save_binary(good := tmp_path / "table.npz")
    with np.load(good) as archive:
        arrays = {name: archive[name] for name in archive.files}
    arrays["src_words"] = np.array([_Payload(marker)], dtype=object)
    np.savez(path := tmp_path / "pickled.npz", **arrays)
    with zipfile.ZipFile(path) as archive:
        assert b"touch" in archive.read("src_words.npy")  # the payload is really in the file
    with pytest.raises(QEInputError, match="rebuild the bundle"):
        IBM1Table.load(path)
    assert not marker.exists()


def test_a_damaged_binary_member_is_one_line_from_the_cli(tmp_path, small_data, capsys):
    build(tmp_path, small_data, small_config(ibm1={"iterations": 3, "directions": ["s2t", "t2s"]}))
    member = tmp_path / "out" / "ibm1.s2t.npz"
    member.write_bytes(member.read_bytes()[:-200])
    restamp(tmp_path / "out", "ibm1.s2t")  # the manifest agrees: only the loader can tell
    clear_loaded_members()
    src = write_lines(tmp_path / "in.en", ["The house is small ."])
    mt = write_lines(tmp_path / "in.es", ["La casa es pequeña ."])
    argv = ["features", "--src", str(src), "--mt", str(mt), "--resources", str(tmp_path / "out")]
    capsys.readouterr()
    code = main([*argv, "--families", "ibm1", "--out", str(tmp_path / "f.tsv"), "--quiet"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1
    assert "ibm1.s2t.npz" in err and "rebuild the bundle" in err
