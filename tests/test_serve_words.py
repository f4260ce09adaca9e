"""``qe serve`` with a word model (``.qwords``): ``GET /v1/models`` lists it with its kind, ``POST
/v1/words`` answers each pair with the tags and BAD probabilities ``qe predict --words`` writes for it
(to the last bit; in one request and in one-pair requests the worker merges), each route refuses the
other kind of model, and a line of more than 2,000 tokens is a 422 naming its pair and field. The word
model is trained in the test on 300 en-de sentences (a few seconds)."""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.helpers.serve import (
    assert_one_line_error,
    en_de,
    qe_predict_words,
    serving,
    word_model,
)

pytestmark = [pytest.mark.slow, pytest.mark.data]
FIELDS = ("mt_tags", "mt_bad_probability", "gap_tags", "gap_bad_probability", "src_tags")
FIELDS += ("src_bad_probability",)


@pytest.fixture(scope="module")
def words_model(data_dir, tmp_path_factory):
    return word_model(tmp_path_factory.mktemp("words"))


@pytest.fixture(scope="module")
def server(words_model, surface_model):
    with serving([words_model, surface_model]) as running:
        yield running


@pytest.fixture(scope="module")
def pairs(data_dir):
    src, mt = en_de(data_dir, "dev", "src")[:40], en_de(data_dir, "dev", "mt")[:40]
    return [{"src": s, "mt": m} for s, m in zip(src, mt, strict=True)]


def words(server, model, pairs):
    return server.call("POST", "/v1/words", {"model": model, "pairs": pairs})


def same(served: dict, expected: dict) -> None:
    for field in FIELDS:
        got, want = served[field], expected[field]
        assert len(got) == len(want), field
        if field.endswith("_tags"):
            assert got == want, field
        else:
            close = (
                g == w or math.isclose(g, w, rel_tol=0, abs_tol=1e-12) for g, w in zip(got, want, strict=True)
            )
            assert all(close), field


def test_models_lists_the_word_model_with_its_kind(server):
    status, body = server.call("GET", "/v1/models")
    assert status == 200
    kinds = {model["name"]: model for model in body["models"]}
    assert kinds["model"]["kind"] == "sentences"
    model = kinds["words-en-de"]
    assert model["kind"] == "words" and model["max_tokens"] == 2000 and model["pair_inputs"] == []
    assert model["languages"] == {"src": "en", "tgt": "de"}
    assert set(model["thresholds"]) == {"target", "gaps", "source"}
    assert model["signature"].startswith("words|data:mlqe-pe/en-de@")


def test_served_tags_equal_qe_predict_words(server, words_model, pairs, tmp_path):
    expected = qe_predict_words(words_model, pairs, tmp_path)
    status, body = words(server, "words-en-de", pairs)
    assert status == 200, body
    assert body["model"] == "words-en-de" and set(body["thresholds"]) == {"target", "gaps", "source"}
    assert [r["index"] for r in body["results"]] == list(range(len(pairs)))
    assert [r["id"] for r in body["results"]] == list(range(len(pairs)))
    for served, want, pair in zip(body["results"], expected, pairs, strict=True):
        same(served, want)
        assert len(served["mt_tags"]) == len(pair["mt"].split()) == len(served["gap_tags"]) - 1
        assert len(served["src_tags"]) == len(pair["src"].split())
    assert any("BAD" in r["mt_tags"] for r in body["results"])  # the test says something

    def alone(k: int) -> tuple[int, dict]:  # one-pair requests at once: the worker tags them together
        return words(server, "words-en-de", [{**pairs[k], "id": f"p{k}"}])

    with ThreadPoolExecutor(8) as threads:
        answers = list(threads.map(alone, range(16)))
    for k, (status, body) in enumerate(answers):
        assert status == 200, body
        assert body["results"][0]["id"] == f"p{k}" and body["results"][0]["index"] == 0
        same(body["results"][0], expected[k])


def test_each_route_refuses_the_other_kind_of_model(server, pairs):
    status, body = server.score("words-en-de", pairs[:1])
    assert_one_line_error(status, body, 422, "model: words-en-de is a word model", "POST /v1/words")
    status, _, lines = server.batch("words-en-de", b"src\tmt\na\tb\n", "text/tab-separated-values")
    assert_one_line_error(status, lines[0], 422, "is a word model")
    status, body = words(server, "model", pairs[:1])
    assert_one_line_error(status, body, 422, "model: model scores sentences")
    status, body = words(server, "../words-en-de.qwords", pairs[:1])
    assert_one_line_error(status, body, 404, "not served here")


def test_a_line_of_more_than_2000_tokens_is_refused(server, pairs):
    long = " ".join(["Ä"] * 2001)  # 4,001 characters: under the 5,000 a text may hold
    status, body = words(server, "words-en-de", [pairs[0], {"src": pairs[1]["src"], "mt": long}])
    message = assert_one_line_error(status, body, 422, "pairs[1].mt: 2,001 tokens, more than the 2,000")
    assert "Ä" not in message
    status, body = words(server, "words-en-de", [{"src": " ".join(["a"] * 2001), "mt": "Haus"}])
    assert_one_line_error(status, body, 422, "pairs[0].src: 2,001 tokens")
    status, body = words(server, "words-en-de", [{"src": " ".join(["a"] * 2000), "mt": "Haus"}])
    assert status == 200 and len(body["results"][0]["src_tags"]) == 2000


def test_pair_and_character_limits_hold_for_words(server):
    status, body = words(server, "words-en-de", [{"src": "a", "mt": "b"}] * 1001)
    assert_one_line_error(status, body, 413, "1,001 pairs")
    status, body = words(server, "words-en-de", [{"src": "a", "mt": "b " * 3000}])
    assert_one_line_error(status, body, 413, "pairs[0].mt: 6,000 characters")
