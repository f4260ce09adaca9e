"""``qe serve`` (issue 21, branch wt-serve): text that is not text. NUL characters and lone surrogates
(which C libraries and UTF-8 writers trip on), bytes that are not UTF-8 (also UTF-8-encoded
surrogates and UTF-16 JSON, which Python's json would take), NaN / Infinity and JSON nested 100,000
deep: 400 or 422 naming the pair index (or upload line) and field; an emoji's surrogate pair is text."""

from __future__ import annotations

import json

import pytest

from tests.helpers.serve import assert_one_line_error, serving, still_serving

pytestmark = pytest.mark.slow
JSON = {"Content-Type": "application/json"}
JSONL = {"Content-Type": "application/x-ndjson"}


@pytest.fixture(scope="module")
def server(surface_model):
    with serving([surface_model]) as running:
        yield running


def _score(server, body: bytes):
    status, _, data = server.request("POST", "/v1/score", body, JSON)
    return status, json.loads(data)


def _pairs(*texts: str) -> bytes:  # JSON escapes written as they are (\\u0000, \\ud800)
    pairs = ", ".join(f'{{"src": "one two", "mt": "{text}"}}' for text in texts)
    return f'{{"model": "model", "pairs": [{pairs}]}}'.encode()


@pytest.mark.parametrize(
    ("body", "status", "words"),
    [
        (_pairs("uno", "dos\\u0000tres"), 422, ["pairs[1].mt: holds a NUL character at character 3"]),
        (_pairs("\\ud800uno"), 422, ["pairs[0].mt: holds a lone surrogate (U+D800"]),
        (_pairs("uno", "dos", "\\udfff"), 422, ["pairs[2].mt: holds a lone surrogate (U+DFFF"]),
        (_pairs("uno\x00"), 400, ["the body is not valid JSON: Invalid control character"]),
        (_pairs("uno").replace(b"uno", b"\xed\xa0\x80"), 400, ["not valid UTF-8"]),
        (_pairs("uno").replace(b"uno", b"\xff\xfe"), 400, ["not valid UTF-8"]),
        (_pairs("uno").decode().encode("utf-16"), 400, ["not valid UTF-8 (byte 1)"]),
        (b'{"model": "model", "pairs": [{"src": "a", "mt": "b", "id": NaN}]}', 400, ["NaN is not JSON"]),
        (b'{"model": "model", "pairs": [], "x": -Infinity}', 400, ["-Infinity is not JSON"]),
        (b"[" * 100_000 + b"]" * 100_000, 400, ["nests arrays or tables more than 64 levels deep"]),
    ],
)
def test_text_that_is_not_text_is_refused_in_one_line(server, body, status, words):
    assert_one_line_error(*_score(server, body), status, *words)
    still_serving(server)


def test_an_emojis_surrogate_pair_is_text(server):
    status, body = _score(server, _pairs("\\ud83d\\ude00 uno"))
    assert status == 200 and len(body["results"]) == 1


@pytest.mark.parametrize(
    ("upload", "kind", "status", "words"),
    [
        (
            b"src\tmt\na\tb\nc\xff\td\n",
            "text/tab-separated-values",
            400,
            ["line 3: not valid UTF-8 (byte 2)"],
        ),
        (b"src\tmt\na\x00\tb\n", "text/tab-separated-values", 422, ["line 2: src: holds a NUL character"]),
        (
            b'{"src": "a", "mt": "b"}\n{"src": "\\ud800", "mt": "b"}\n',
            "application/x-ndjson",
            422,
            ["line 2: src"],
        ),
        (
            b'{"src": "a", "mt": "b"}\n{"src": NaN, "mt": "b"}\n',
            "application/x-ndjson",
            400,
            ["line 2", "NaN"],
        ),
    ],
)
def test_an_upload_line_that_is_not_text_is_named(server, upload, kind, status, words):
    got, _, data = server.request("POST", "/v1/batch?model=model", upload, {"Content-Type": kind})
    assert_one_line_error(got, json.loads(data), status, *words)
    still_serving(server)
