"""Datasets: parallel files, tables, the registered WMT12 data, feature tables, bad input."""

from __future__ import annotations

import io
import tarfile

import numpy as np
import pytest

from qe.data import (
    RegisteredFile,
    fetch_registered_file,
    load_feature_table,
    load_parallel,
    load_registered,
    load_registered_features,
    load_table,
)
from qe.infra.errors import QEInputError
from tests.helpers import write_lines


def test_parallel_files_with_labels_and_crlf(tmp_path):
    src = write_lines(tmp_path / "src", b"a b\r\nc d\r\n")
    mt = write_lines(tmp_path / "mt", ["x y", "z"])
    labels = write_lines(tmp_path / "labels", ["4.5", "2"])
    data = load_parallel(src, mt, labels, label_range=(1, 5))
    assert data.src == ["a b", "c d"]
    assert data.ids == ["0", "1"]
    assert list(data.labels) == [4.5, 2.0]


@pytest.mark.parametrize(
    ("content", "message", "line"),
    [
        (["1", "x"], "not a number", 2),
        (["1", "nan"], "not a finite number", 2),
        (["1", "7"], "outside the declared range", 2),
    ],
)
def test_bad_labels_name_file_and_line(tmp_path, content, message, line):
    src = write_lines(tmp_path / "src", ["a", "b"])
    labels = write_lines(tmp_path / "labels", content)
    with pytest.raises(QEInputError, match=message) as info:
        load_parallel(src, src, labels, label_range=(1, 5))
    assert info.value.path == str(labels) and info.value.line == line


def test_mismatched_empty_blank_and_invalid_utf8(tmp_path):
    src = write_lines(tmp_path / "src", ["a", "b", "c"])
    mt = write_lines(tmp_path / "mt", ["a", "b"])
    with pytest.raises(QEInputError, match=r"has 2 lines but .* has 3") as info:
        load_parallel(src, mt)
    assert info.value.path == str(mt) and info.value.line == 3
    with pytest.raises(QEInputError, match="file is empty"):
        load_parallel(write_lines(tmp_path / "empty", b""), mt)
    blank = write_lines(tmp_path / "blank", ["a", "  ", "c"])
    with pytest.raises(QEInputError, match="blank line") as info:
        load_parallel(src, blank)
    assert info.value.line == 2
    bad = write_lines(tmp_path / "bad", b"ok\n\xff\xfe broken\n")
    with pytest.raises(QEInputError, match="invalid UTF-8") as info:
        load_parallel(bad, bad)
    assert info.value.line == 2


def test_tsv_and_jsonl_tables(tmp_path):
    tsv = write_lines(tmp_path / "d.tsv", ["id\tsrc\tmt\tscore", "a\thello\thola\t4", "b\tbye\tadios\t3.5"])
    data = load_table(tsv, label_range=(1, 5))
    assert data.ids == ["a", "b"] and data.mt == ["hola", "adios"] and list(data.labels) == [4, 3.5]
    jsonl = write_lines(
        tmp_path / "d.jsonl", ['{"src": "hello", "mt": "hola"}', '{"src": "bye", "mt": "adios"}']
    )
    data = load_table(jsonl)
    assert data.labels is None and data.ids == ["0", "1"]
    ragged = write_lines(tmp_path / "r.tsv", ["src\tmt", "a\tb\tc"])
    with pytest.raises(QEInputError, match="expected 2 tab-separated fields") as info:
        load_table(ragged)
    assert info.value.line == 2
    broken = write_lines(tmp_path / "b.jsonl", ['{"src": "a", "mt": "b"}', "{oops"])
    with pytest.raises(QEInputError, match="invalid JSON") as info:
        load_table(broken)
    assert info.value.line == 2


def test_feature_table_trailing_tab_header_and_ragged(tmp_path):
    table = load_feature_table(write_lines(tmp_path / "f.tsv", ["1\t2\t", "3\t4\t"]), names=["a", "b"])
    assert list(table.columns) == ["a", "b"] and table.to_numpy().tolist() == [[1, 2], [3, 4]]
    table = load_feature_table(write_lines(tmp_path / "h.tsv", ["x\ty", "1\t2"]))
    assert list(table.columns) == ["x", "y"]
    with pytest.raises(QEInputError, match="expected 2 values, found 3") as info:
        load_feature_table(write_lines(tmp_path / "r.tsv", ["1\t2", "1\t2\t3"]))
    assert info.value.line == 2
    with pytest.raises(QEInputError, match="NaN"):
        load_feature_table(write_lines(tmp_path / "n.tsv", ["1\tnan"]))


def test_registered_wmt12(data_dir):
    train = load_registered("wmt12-en-es", "train", data_dir)
    test = load_registered("wmt12-en-es", "test", data_dir)
    assert (len(train), len(test)) == (1832, 422)
    assert train.labels.mean() == pytest.approx(3.446, abs=1e-3)
    assert train.annotator_scores.shape == (1832, 3)
    assert len(test.post_edits) == len(test.references) == 422
    features = load_registered_features("wmt12-en-es", "wmt12-official-bf17", "test", data_dir)
    assert features.shape == (422, 17)
    assert features.iloc[0, 0] == np.round(features.iloc[0, 0])  # source token count


def test_download_extracts_member_and_checks_checksum(tmp_path):
    payload = b"hello\nworld\n"
    archive = tmp_path / "set.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        info = tarfile.TarInfo("set/source.eng")
        info.size = len(payload)
        tar.addfile(info, io.BytesIO(payload))
    import hashlib

    good = RegisteredFile(
        "set/source.eng", hashlib.sha256(payload).hexdigest(), f"{archive.as_uri()}#source.eng"
    )
    target = tmp_path / "cache" / "source.eng"
    fetch_registered_file(good, target)
    assert target.read_bytes() == payload
    bad = RegisteredFile("set/source.eng", "0" * 64, f"{archive.as_uri()}#source.eng")
    with pytest.raises(QEInputError, match="checksum mismatch"):
        fetch_registered_file(bad, tmp_path / "cache" / "other")
    assert not (tmp_path / "cache" / "other").exists()
    missing = RegisteredFile("x", "0" * 64, (tmp_path / "nope.tar.gz").as_uri() + "#x")
    with pytest.raises(QEInputError, match="could not be downloaded"):
        fetch_registered_file(missing, tmp_path / "cache" / "x")


@pytest.mark.parametrize("text", ["1_0", "\uff11", "\u0663", "0x10", "1,5"])
def test_labels_are_plain_numbers_only(tmp_path, text):
    """float() reads '1_0' as 10, and full-width and Arabic-Indic digits as digits."""
    from qe.data import read_labels

    path = write_lines(tmp_path / "labels.txt", ["0.5", text])
    with pytest.raises(QEInputError, match="is not a number") as info:
        read_labels(path)
    assert info.value.line == 2


@pytest.mark.parametrize(
    ("text", "value"), [("1", 1.0), ("-0.25", -0.25), (".5", 0.5), ("2.", 2.0), ("1e-3", 1e-3)]
)
def test_plain_numbers_are_read_as_float_reads_them(text, value):
    from qe.infra.io import plain_float

    assert plain_float(text) == value and plain_float(f" {text}\t") == value


def test_a_feature_table_cell_is_a_plain_number(tmp_path):
    from qe.data import read_feature_table

    path = write_lines(tmp_path / "t.tsv", ["a\tb", "1\t2", "3\t1_000"])
    with pytest.raises(QEInputError, match="non-numeric value '1_000'") as info:
        read_feature_table(path)
    assert info.value.line == 3


@pytest.fixture()
def toy_dataset(tmp_path):
    """A dataset registered from outside ``qe.data.sets`` for one test: its files in a local archive."""
    import hashlib

    from qe.data import DATASETS, RegisteredDataset, register_dataset

    files = {
        ("train", "src"): b"a small house .\nthe cat .\n",
        ("train", "mt"): b"una casa .\nel gato .\n",
        ("train", "labels"): b"0.25\n0.5\n",
        ("test", "src"): b"a dog .\n",
        ("test", "mt"): b"un perro .\n",
        ("test", "labels"): b"1\n",
    }
    archive = tmp_path / "upstream.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for (split, role), payload in files.items():
            info = tarfile.TarInfo(f"toy/{split}.{role}")
            info.size = len(payload)
            tar.addfile(info, io.BytesIO(payload))
    splits: dict = {}
    for (split, role), payload in files.items():
        url = f"{archive.as_uri()}#{split}.{role}"
        entry = RegisteredFile(f"{split}.{role}", hashlib.sha256(payload).hexdigest(), url)
        splits.setdefault(split, {})[role] = entry
    record = RegisteredDataset("toy/en-es", ("en", "es"), (0.0, 1.0), splits, folder="toy")
    yield register_dataset(record)
    DATASETS.pop(record.name)


def test_a_dataset_registered_from_outside_is_fetched_loaded_and_known_to_the_configs(tmp_path, toy_dataset):
    from qe.bundle import read_bundle_config

    data_dir = tmp_path / "data"
    data_dir.mkdir()
    train = load_registered("toy/en-es", "train", data_dir)  # fetched from the archive, sha256 checked
    assert (train.src, train.mt, list(train.labels)) == (
        ["a small house .", "the cat ."],
        ["una casa .", "el gato ."],
        [0.25, 0.5],
    )
    assert (data_dir / "toy" / "train.src").is_file() and not (data_dir / "toy" / "test.src").exists()
    config = tmp_path / "bundle.toml"
    config.write_text('[languages]\nsrc = "en"\ntgt = "es"\n[edits]\ndataset = "toy/en-es"\nsplit = "test"\n')
    with pytest.raises(QEInputError, match=r"edits\.split = 'test': expected a training split"):
        read_bundle_config(config)
    config.write_text('[languages]\nsrc = "en"\ntgt = "de"\n[edits]\ndataset = "toy/en-es"\n')
    with pytest.raises(
        QEInputError,
        match=r"edits\.dataset = 'toy/en-es': expected a dataset of the bundle's languages en-de",
    ):
        read_bundle_config(config)
