"""``qe serve`` (issue 21, branch wt-serve): requests too large for the server's limits. 100 MB bodies
(with a declared length, answered before they are read; sent in chunks, counted as they come),
1,000,000 pairs in one JSON body or one upload, a segment past the character limit: each is one 413
line naming the limit, and the server keeps serving."""

from __future__ import annotations

import json

import pytest

from tests.helpers.serve import assert_one_line_error, post_raw, serving, still_serving

pytestmark = pytest.mark.slow
MB = 1 << 20


@pytest.fixture(scope="module")
def server(surface_model):
    # a body limit large enough that a million pairs reach the pairs limit
    with serving([surface_model], "--max-body-bytes", str(64 * MB)) as running:
        yield running


def _blocks(total: int, block: int = MB):
    for start in range(0, total, block):
        yield b"x" * min(block, total - start)


def _chunked(total: int):
    for block in _blocks(total):
        yield f"{len(block):x}\r\n".encode() + block + b"\r\n"
    yield b"0\r\n\r\n"


def test_a_100_mb_body_is_413(server):
    headers = {"Content-Type": "application/json", "Content-Length": str(100 * MB)}
    status, body = post_raw(server, "/v1/score", headers, _blocks(100 * MB))
    assert_one_line_error(status, body, 413, "larger than the 67,108,864 bytes /v1/score takes")
    still_serving(server)


def test_a_100_mb_upload_sent_in_chunks_is_413(server):
    headers = {"Content-Type": "text/tab-separated-values", "Transfer-Encoding": "chunked"}
    status, body = post_raw(server, "/v1/batch?model=model", headers, _chunked(100 * MB))
    assert_one_line_error(status, body, 413, "line 1: longer than")  # one endless line of x
    status, body = post_raw(
        server, "/v1/batch?model=model", headers, _chunked_lines(b"a\tb\n", 100 * MB, b"src\tmt\n")
    )
    assert_one_line_error(status, body, 413, "more than the 200,000 pairs one upload may hold")
    still_serving(server)


def _chunked_lines(line: bytes, total: int, head: bytes):
    block = head + line * (MB // len(line))
    sent = 0
    while sent < total:
        yield f"{len(block):x}\r\n".encode() + block + b"\r\n"
        sent += len(block)
        block = line * (MB // len(line))
    yield b"0\r\n\r\n"


def test_a_million_pairs_in_one_request_is_413_before_any_pair_is_checked(server):
    body = json.dumps({"model": "model", "pairs": [{"src": "a", "mt": "b"}] * 1_000_000}).encode()
    status, answer = server.call("POST", "/v1/score", body)
    assert_one_line_error(status, answer, 413, "pairs: 1,000,000 pairs, more than the 1,000")
    still_serving(server)


def test_a_million_pair_upload_is_413_at_the_first_pair_over_the_limit(server):
    lines = b'{"src": "a", "mt": "b"}\n' * 1_000_000
    status, _, data = server.request(
        "POST", "/v1/batch?model=model", lines, {"Content-Type": "application/x-ndjson"}
    )
    assert_one_line_error(status, json.loads(data), 413, "line 200001: more than the 200,000 pairs")
    still_serving(server)


def test_a_segment_over_the_character_limit_is_413_naming_the_pair_and_field(server):
    pairs = [{"src": "a b", "mt": "c d"}, {"src": "a b", "mt": "c " * 3000}]
    status, body = server.score("model", pairs)
    assert_one_line_error(status, body, 413, "pairs[1].mt: 6,000 characters, more than the 5,000")
    still_serving(server)
