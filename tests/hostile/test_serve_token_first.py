"""``qe serve --token-file`` (issue 33, main 3feb89b): the body before the token. A request without the
token got 400 for bad JSON, 413 for 1,001 pairs or a Content-Length over the limit: the body was read
and parsed before the token was looked at; and ``/v1/openapi.json`` needed no token although every
``/v1`` request does. Now 401 comes first, before a byte of the body is read."""

from __future__ import annotations

import json
import socket

import pytest

from tests.helpers.serve import PAIR, assert_one_line_error, post_raw, serving

pytestmark = pytest.mark.slow
TOKEN = "s3cret-token-of-32-characters-xx"
GOOD = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture(scope="module")
def server(surface_model, tmp_path_factory):
    token = tmp_path_factory.mktemp("token") / "token"
    token.write_text(TOKEN + "\n")
    token.chmod(0o600)
    with serving([surface_model], "--token-file", str(token)) as running:
        yield running


def _guarded_still_serving(server) -> None:
    assert server.call("GET", "/healthz") == (200, {"status": "ok"})
    status, body = server.call("POST", "/v1/score", {"model": "model", "pairs": [PAIR]}, **GOOD)
    assert status == 200 and len(body["results"]) == 1


@pytest.mark.parametrize(
    ("path", "body", "kind"),
    [
        ("/v1/score", b'{"model": "model", "pairs": [', "application/json"),
        ("/v1/score", b"\xff\xfe{}", "application/json"),
        ("/v1/score", json.dumps({"model": "model", "pairs": [PAIR] * 1001}).encode(), "application/json"),
        ("/v1/score", b'{"model": "model", "pairs": [], "x": NaN}', "application/json"),
        ("/v1/score", b"[" * 100_000 + b"]" * 100_000, "application/json"),
    ],
    ids=["bad-json", "not-utf8", "1001-pairs", "nan", "nested-100000-deep"],
)
def test_without_the_token_every_body_is_401(server, path, body, kind):
    for headers in ({}, {"Authorization": "Bearer wrong-token-wrong-token-x"}, {"Authorization": TOKEN}):
        status, _, data = server.request("POST", path, body, {"Content-Type": kind, **headers})
        assert_one_line_error(status, json.loads(data), 401, "bearer token")
    _guarded_still_serving(server)


def test_a_declared_length_over_the_limit_without_the_token_is_401(server):
    headers = {"Content-Type": "application/json", "Content-Length": str(100 << 20)}
    status, body = post_raw(server, "/v1/score", headers, iter([b"x" * 1024]))
    assert_one_line_error(status, body, 401, "bearer token")
    _guarded_still_serving(server)


def test_401_comes_before_the_body_is_sent(server):
    sock = socket.create_connection((server.host, server.port), timeout=10)
    head = (
        f"POST /v1/score HTTP/1.1\r\nHost: {server.host}:{server.port}\r\n"
        "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
    )
    sock.sendall(head.encode())  # and not one byte of the body
    try:
        answer = sock.recv(4096)
    except TimeoutError:
        pytest.fail("no answer without the body: the server waits for it before checking the token")
    finally:
        sock.close()
    assert answer.startswith(b"HTTP/1.1 401 "), answer[:200]
    _guarded_still_serving(server)


def test_the_openapi_schema_is_behind_the_token(server):
    status, body = server.call("GET", "/v1/openapi.json")
    assert_one_line_error(status, body, 401, "bearer token")
    status, schema = server.call("GET", "/v1/openapi.json", **GOOD)
    assert status == 200 and "/v1/score" in schema["paths"]
    assert schema["components"]["securitySchemes"]["HTTPBearer"]["scheme"] == "bearer"
    still = server.call("GET", "/healthz")
    assert still == (200, {"status": "ok"})
