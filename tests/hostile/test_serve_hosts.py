"""``qe serve`` (issue 33, main 3feb89b): DNS rebinding. A web page whose name resolves to 127.0.0.1
could drive a token-less loopback server from a browser: ``/v1/score`` answered 200 to
``Host: attacker.example``, ``POST /v1/score/`` was redirected (307) to
``http://attacker.example/v1/score``, and another origin's ``text/plain`` upload with ``?format=tsv``
needed no preflight. A foreign or missing Host is now 400 before routing (loopback names by default,
``--allowed-host`` for more), a trailing slash is a 404 line naming no host, and a ``/v1`` request from
another origin is 403."""

from __future__ import annotations

import pytest

from tests.helpers.serve import (
    PAIR,
    assert_one_line_error,
    json_error,
    raw_request,
    serving,
    still_serving,
)

pytestmark = pytest.mark.slow
SCORE = {"model": "model", "pairs": [PAIR]}
FOREIGN = [
    "attacker.example",
    "attacker.example:{port}",
    "localhost.attacker.example:{port}",
    "127.0.0.1.nip.io:{port}",
    "127.0.0.1:{port}@attacker.example",
    "0.0.0.0:{port}",
    "localhost:{port}.attacker.example",
    "",
]


@pytest.fixture(scope="module")
def server(surface_model):
    with serving([surface_model]) as running:
        yield running


@pytest.mark.parametrize("host", FOREIGN)
def test_a_foreign_host_is_400_before_routing(server, host):
    host = host.format(port=server.port)
    for method, path in (("POST", "/v1/score"), ("GET", "/v1/models"), ("GET", "/"), ("GET", "/healthz")):
        status, body = server.call(method, path, SCORE if method == "POST" else None, Host=host)
        assert_one_line_error(status, body, 400, "Host")
        assert host not in body["error"] or not host
    still_serving(server)


def test_the_loopback_names_are_served_with_or_without_a_port(server):
    for host in ("127.0.0.1:{port}", "localhost:{port}", "[::1]:{port}", "localhost", "LocalHost:{port}"):
        status, body = server.call("POST", "/v1/score", SCORE, Host=host.format(port=server.port))
        assert status == 200 and len(body["results"]) == 1, (host, body)
    status, _ = server.call("POST", "/v1/score", SCORE, Host="attacker.example")
    assert status == 400


def test_a_trailing_slash_is_a_404_line_not_a_redirect_naming_the_host(server):
    status, headers, data = server.request("POST", "/v1/score/", b"{}", {"Content-Type": "application/json"})
    assert "location" not in headers
    assert_one_line_error(*json_error(status, headers, data), 404, "no such path")
    status, headers, data = server.request(
        "POST", "/v1/score/", b"{}", {"Content-Type": "application/json", "Host": "attacker.example"}
    )
    assert "location" not in headers and b"attacker" not in data
    assert_one_line_error(*json_error(status, headers, data), 400, "Host")


def test_a_request_without_host_is_400(server):
    answer = raw_request(server, b"GET /v1/models HTTP/1.0\r\n\r\n")  # HTTP/1.1 needs one; 1.0 does not
    assert_one_line_error(*json_error(*answer), 400, "Host")


def test_another_origins_upload_that_needs_no_preflight_is_403(server):
    upload = b"src\tmt\none two\tuno dos\n"
    path = "/v1/batch?model=model&format=tsv"
    for origin in ("http://attacker.example", f"http://attacker.example:{server.port}", "null"):
        status, headers, data = server.request(
            "POST", path, upload, {"Content-Type": "text/plain", "Origin": origin}
        )
        assert_one_line_error(*json_error(status, headers, data), 403, "origin")
    own = f"http://127.0.0.1:{server.port}"  # the page's own requests carry its origin
    status, _, lines = server.request("POST", path, upload, {"Content-Type": "text/plain", "Origin": own})
    assert status == 200 and b'"done": true' in lines


def test_allowed_hosts_are_an_option(surface_model):
    with serving([surface_model], "--allowed-host", "qe.example.org") as server:
        for host in ("qe.example.org", "qe.example.org:443", "QE.example.org:8443", "127.0.0.1"):
            status, body = server.call("POST", "/v1/score", SCORE, Host=host)
            assert status == 200, (host, body)
        for host in ("example.org", "x.qe.example.org", "qe.example.org.attacker.example"):
            status, body = server.call("POST", "/v1/score", SCORE, Host=host)
            assert_one_line_error(status, body, 400, "Host")
