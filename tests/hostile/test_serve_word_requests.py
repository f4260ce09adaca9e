"""``qe serve`` with a word model (branch word-serve, issue 32 step 5): hostile ``POST /v1/words``
bodies. Wrong types, missing fields, a 2,001-token line, invalid UTF-8, NaN, unknown keys carrying
markup, a sentence-scoring flag, a path for a model name: one ``{"error"}`` line each, naming the pair
and field, the client's text never quoted back; the server still tags afterwards."""

from __future__ import annotations

import pytest

from tests.helpers.serve import assert_one_line_error, serving, word_model

pytestmark = [pytest.mark.slow, pytest.mark.data]
GOOD = {"src": "The house is red .", "mt": "Das Haus ist rot ."}
SECRET = "<img src=x onerror=alert(1)>"


@pytest.fixture(scope="module")
def server(data_dir, tmp_path_factory):
    with serving([word_model(tmp_path_factory.mktemp("words"))]) as running:
        yield running


def post(server, body: bytes):
    return server.call("POST", "/v1/words", body)


@pytest.mark.parametrize(
    ("payload", "expected", "words"),
    [
        (
            {"model": "words-en-de", "pairs": [GOOD, {"src": 1, "mt": "b"}]},
            422,
            ["pairs[1].src", "(got int)"],
        ),
        (
            {"model": "words-en-de", "pairs": [{"src": "a", "mt": ["Haus"]}]},
            422,
            ["pairs[0].mt", "(got list)"],
        ),
        ({"model": "words-en-de", "pairs": [{**GOOD, "id": 1.5}]}, 422, ["pairs[0].id"]),
        ({"model": 7, "pairs": [GOOD]}, 422, ["model: Input should be a valid string (got int)"]),
        ({"pairs": [GOOD]}, 422, ["model: missing"]),
        ({"model": "words-en-de"}, 422, ["pairs: missing"]),
        ({"model": "words-en-de", "pairs": [GOOD, {"src": "a"}]}, 422, ["pairs[1].mt: missing"]),
        ({"model": "words-en-de", "pairs": []}, 422, ["pairs: empty"]),
        (
            {"model": "words-en-de", "pairs": [GOOD], SECRET: 1},
            422,
            ["the body: an unknown key at the top level"],
        ),
        ({"model": "words-en-de", "pairs": [GOOD], "unusual": True}, 422, ["(a request takes model, pairs)"]),
        (
            {"model": "words-en-de", "pairs": [{**GOOD, SECRET: "x"}]},
            422,
            ["pairs[0]: a key that is not a field"],
        ),
        (
            {"model": "words-en-de", "pairs": [GOOD, {"src": "a", "mt": " ".join([SECRET] * 2001)}]},
            413,
            ["pairs[1].mt", "characters"],
        ),
        (
            {"model": "words-en-de", "pairs": [GOOD, {"src": "a", "mt": " ".join(["<"] * 2001)}]},
            422,
            ["pairs[1].mt: 2,001 tokens, more than the 2,000 a word model tags"],
        ),
        (
            {"model": "words-en-de", "pairs": [{"src": "a\u0000b", "mt": "c"}]},
            422,
            ["pairs[0].src: holds a NUL"],
        ),
        ({"model": "words-en-de", "pairs": [{"src": " \t ", "mt": "c"}]}, 422, ["pairs[0].src: is blank"]),
        ({"model": f"../{SECRET}.qwords", "pairs": [GOOD]}, 404, ["model: the name given is not served"]),
    ],
)
def test_a_hostile_word_request_is_one_line_naming_its_place(server, payload, expected, words):
    import json

    status, body = post(server, json.dumps(payload).encode())
    message = assert_one_line_error(status, body, expected, *words)
    assert SECRET not in message and "<" not in message


@pytest.mark.parametrize(
    ("body", "words"),
    [
        (
            b'{"model": "words-en-de", "pairs": [{"src": "\xff\xfe", "mt": "b"}]}',
            ["not valid UTF-8 (byte 45)"],
        ),
        (
            b'{"model": "words-en-de", "pairs": [{"src": "a", "mt": NaN}]}',
            ["not valid JSON", "NaN is not JSON"],
        ),
        (b'{"model": "words-en-de", "pairs": [' + b"[" * 100_000, ["the body"]),
        (b'{"model": "words-en-de", "pairs": [{"src": "a", "mt": "b"}]', ["not valid JSON"]),
    ],
)
def test_a_body_that_is_not_json_text_is_400(server, body, words):
    status, answer = post(server, body)
    assert_one_line_error(status, answer, 400, *words)


def test_the_server_still_tags_after_them(server):
    status, body = server.call("POST", "/v1/words", {"model": "words-en-de", "pairs": [GOOD]})
    assert status == 200 and len(body["results"][0]["mt_tags"]) == 5
    assert all(line.count("\n") == 0 for line in server.log)
    assert not any("Traceback" in line for line in server.log)
