"""Property-based tests of the text and table readers: random Unicode, control characters, invalid
UTF-8, huge lines and mixed scripts, read in-process.

Each example either gives finite, line-aligned values, or is refused with ``QEInputError``: one line
naming one of the files given (exit code 2 at the command line). Anything else (another exception,
a message of several lines or naming no file, a non-finite value, a hang) is a failure. A hang is
caught by a generous alarm per example, not by timing.
"""

from __future__ import annotations

import functools
import json
import math
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from qe.data import load_parallel, load_table, read_labels
from qe.features.base import Pairs
from qe.features.extractor import extract_features
from qe.infra.errors import QEInputError
from tests.fuzz.conftest import count_example, hang_guard

HANG_SECONDS = 120  # one example; generous: the slowest legal example takes about a second

# ---------------------------------------------------------------- strategies

UTF8 = st.characters(codec="utf-8")  # any code point but the surrogates
ODD = st.sampled_from(
    list(
        "\x00\x01\x08\t\x0b\x0c\r\x1b\x7f\x85\xa0\u200b\u200d\u200e\u202e\u2028\u2029\u3000\ufeff\ufffd\ufffe\uffff"
    )
)
SCRIPTS = st.sampled_from(
    [
        "la casa",
        "中文字符",
        "العربية",
        "हिन्दी",
        "ελληνικά",
        "кириллица",
        "😀👍🏽",
        "é",
        "ﬁ",
        "Ⅻ",
        "𝔘𝔫",
        "ﷺ",
        "ǅ",
        "İı",
    ]
)
WORD = st.one_of(st.text(alphabet=st.one_of(UTF8, ODD), max_size=10), SCRIPTS)
SHORT_LINE = st.lists(WORD, max_size=10).map(" ".join)
HUGE_LINE = st.builds(
    lambda piece, n: piece * n, st.text(alphabet=UTF8, min_size=1, max_size=4), st.integers(500, 9000)
)
LINE = st.one_of(SHORT_LINE, SHORT_LINE, SHORT_LINE, HUGE_LINE)
NUMBER = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(-(10**30), 10**30).map(str),
    st.sampled_from(
        ["nan", "inf", "-inf", "1e999", "0x10", "1_000", "٣", "１", "+.5", "5.", "", " ", "1e-400"]
    ),
)


def _file(lines: st.SearchStrategy[str]) -> st.SearchStrategy[bytes]:
    """A file's bytes: lines joined (with LF, CRLF or CR, with or without a last newline), a byte-order
    mark now and then, or raw bytes (invalid UTF-8)."""
    text = st.builds(
        lambda ls, sep, end, bom: (bom + sep.join(ls) + (sep if end else "")).encode("utf-8"),
        st.lists(lines, max_size=6),
        st.sampled_from(["\n", "\n", "\r\n", "\r"]),
        st.booleans(),
        st.sampled_from(["", "", "\ufeff"]),
    )
    return st.one_of(text, text, text, st.binary(max_size=64))


# ---------------------------------------------------------------- the checks


def _refused_well(exc: QEInputError, files: list[Path]) -> None:
    """One line, naming one of ``files``."""
    text = str(exc)
    assert len(text.splitlines()) == 1, text
    assert exc.path is not None and Path(exc.path) in files, text
    assert text.startswith(str(exc.path)), text


def _write(folder: Path, name: str, data: bytes) -> Path:
    path = folder / name
    path.write_bytes(data)
    return path


def _lines_of(path: Path) -> int:
    """Lines as a reader that accepted the file counts them (CRLF and a last line without newline)."""
    data = path.read_bytes().removeprefix(b"\xef\xbb\xbf")
    return len(data.split(b"\n")) - data.endswith(b"\n")


# ---------------------------------------------------------------- readers


@given(src=_file(LINE), mt=_file(LINE), labels=_file(NUMBER), bounded=st.booleans())
def test_parallel_files(tmp_path, src, mt, labels, bounded):
    count_example("parallel files")
    files = [
        _write(tmp_path, "src.txt", src),
        _write(tmp_path, "mt.txt", mt),
        _write(tmp_path, "labels.txt", labels),
    ]
    with hang_guard(HANG_SECONDS, "an example"):
        try:
            data = load_parallel(*files, label_range=(0.0, 1.0) if bounded else None)
        except QEInputError as exc:
            _refused_well(exc, files)
            return
    assert len(data.src) == len(data.mt) == len(data.labels) == _lines_of(files[0])
    assert all("\n" not in s for s in data.src + data.mt)
    assert np.isfinite(data.labels).all()
    if bounded:
        assert ((data.labels >= 0) & (data.labels <= 1)).all()


@given(labels=_file(NUMBER), bounded=st.booleans())
def test_labels(tmp_path, labels, bounded):
    count_example("labels")
    path = _write(tmp_path, "labels.txt", labels)
    with hang_guard(HANG_SECONDS, "an example"):
        try:
            values = read_labels(path, (-1.0, 1.0) if bounded else None)
        except QEInputError as exc:
            _refused_well(exc, [path])
            return
    assert values.dtype == np.float64 and len(values) == _lines_of(path)
    assert np.isfinite(values).all()


CELL = st.one_of(LINE, NUMBER, st.just(""), st.sampled_from(["src", "mt", "score", "id"]))
ROW = st.lists(CELL, min_size=1, max_size=6).map("\t".join)
TSV_HEADER = st.sampled_from(
    ["id\tsrc\tmt\tscore", "src\tmt", "src\tmt\tscore\tscore", "mt\tsrc\tscore\textra"]
)
TSV = st.builds(lambda head, body: [head, *body], TSV_HEADER, st.lists(ROW, max_size=5)).map(
    lambda ls: ("\n".join(ls) + "\n").encode("utf-8")
)
JSON_VALUE = st.recursive(
    st.one_of(st.none(), st.booleans(), st.floats(), st.integers(), LINE),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3)
    ),
    max_leaves=8,
)
JSON_ROW = st.fixed_dictionaries(
    {},
    optional={
        "id": JSON_VALUE,
        "src": st.one_of(LINE, JSON_VALUE),
        "mt": st.one_of(LINE, JSON_VALUE),
        "score": JSON_VALUE,
    },
).map(lambda row: json.dumps(row, ensure_ascii=False))
JSONL_LINE = st.one_of(
    JSON_ROW,
    JSON_ROW,
    JSON_ROW,
    SHORT_LINE,
    st.sampled_from(["[", "{}", "[1]", '{"src": "a", "src": "b"}', "[" * 5000]),
)
JSONL = st.lists(JSONL_LINE, max_size=5).map(lambda ls: ("\n".join(ls) + "\n").encode("utf-8"))


def _check_table(path: Path) -> None:
    with hang_guard(HANG_SECONDS, "an example"):
        try:
            data = load_table(path)
        except QEInputError as exc:
            _refused_well(exc, [path])
            return
    assert len(data.src) == len(data.mt) == len(data.ids) == len(set(data.ids)) > 0
    assert all(isinstance(s, str) and s.strip() for s in data.src + data.mt)
    if data.labels is not None:
        assert len(data.labels) == len(data.src) and np.isfinite(data.labels).all()


@given(table=st.one_of(TSV, TSV, TSV, _file(LINE)))
def test_tsv_table(tmp_path, table):
    count_example("tsv table")
    _check_table(_write(tmp_path, "table.tsv", table))


@given(table=st.one_of(JSONL, JSONL, JSONL, _file(LINE)))
def test_jsonl_table(tmp_path, table):
    count_example("jsonl table")
    _check_table(_write(tmp_path, "table.jsonl", table))


# ---------------------------------------------------------------- normalisation, tokenisation, families


@functools.cache
def _baseline17_bundle():
    """The hand-made resources of tests/test_baseline17.py, with the wmt12 tokenizer and the Moses
    punctuation normaliser on both sides."""
    from qe.text.processing import TextConfig
    from tests.helpers.baseline17 import handmade_bundle

    text = {
        side: TextConfig(lang, style="wmt12", normalize=True) for side, lang in (("src", "en"), ("tgt", "es"))
    }
    return handmade_bundle(Path(tempfile.mkdtemp(prefix="qe-fuzz-")), text, t2s=False)


@given(src=_file(LINE), mt=_file(LINE))
def test_text_through_the_families(tmp_path, src, mt):
    """Read, normalised and tokenised (surface: Moses style, NFC; baseline17: the wmt12 tokenizer after
    the Moses punctuation normaliser), then scored: finite values, one row per line."""
    pytest.importorskip("kenlm")
    from qe.features.baseline17 import Baseline17
    from qe.features.surface import SurfaceFamily

    count_example("text and families")
    files = [_write(tmp_path, "src.txt", src), _write(tmp_path, "mt.txt", mt)]
    bundle = _baseline17_bundle()
    with hang_guard(HANG_SECONDS, "an example"):
        try:
            data = load_parallel(*files)
            families = [SurfaceFamily(), Baseline17()]
            table = extract_features(
                families,
                Pairs.of(data.src, data.mt, origins=data.input_origins, ids=data.ids),
                resources=bundle,
                progress=False,
            )
        except QEInputError as exc:
            _refused_well(exc, files)
            return
    assert table.shape == (_lines_of(files[0]), sum(len(f.specs()) for f in families))
    assert all(math.isfinite(v) for v in table.to_numpy().ravel())
