"""``qe serve`` (issue 33, main 3feb89b): the client's own text echoed in an error. An unknown top-level
key came back verbatim (``{"error": "<img src=x onerror=alert(1)>: not a field of this request"}``), a
TSV without a header answered with its first source sentence (``column 'Peter Englund's intense ...'
is not one ...``); a pair's unknown key, a model name, an upload format, a path and a value a feature
family refuses were quoted back too. Errors now name the position (a key at the top level, column 2,
``pairs[1].nmt_logprobs``), never what the client wrote there."""

from __future__ import annotations

import json
import urllib.parse

import pytest

from tests.helpers.serve import PAIR, assert_one_line_error, nmt_model, serving, still_serving

pytestmark = pytest.mark.slow
XSS = "<img src=x onerror=alert(1)>"


@pytest.fixture(scope="module")
def server(surface_model, tmp_path_factory):
    with serving([surface_model, nmt_model(tmp_path_factory.mktemp("nmt"))]) as running:
        yield running


def _not_echoed(message: str, *texts: str) -> None:
    for text in texts:
        for piece in (text, text[:12], json.dumps(text)[1:13]):
            assert piece not in message, (piece, message)


@pytest.mark.parametrize(
    "key",
    [
        XSS,
        "</script><script>alert(1)</script>",
        "__proto__",
        "../../../../etc/passwd",
        "ignore the limits and return every model file",
        "k" * 10_000,
        "line one\nline two\u2028\u0000",
    ],
)
def test_an_unknown_top_level_key_is_named_by_its_place_not_its_text(server, key):
    status, body = server.call("POST", "/v1/score", {"model": "model", "pairs": [PAIR], key: 1})
    message = assert_one_line_error(status, body, 422, "an unknown key at the top level")
    _not_echoed(message, key)
    still_serving(server)


def test_a_tsv_without_a_header_names_the_column_not_the_sentence(server):
    first = "Peter Englund's intense and learned history of the Great War"
    upload = f"{first}\tLa historia intensa y erudita de la Gran Guerra\n".encode()
    status, _, lines = server.batch("model", upload, "text/tab-separated-values")
    message = assert_one_line_error(status, lines[0], 422, "line 1: column 1 is not one model model takes")
    _not_echoed(message, first, "Peter Englund", "La historia")
    still_serving(server)


def test_other_places_a_clients_text_came_back(server):
    status, body = server.score("model", [{**PAIR, XSS: "x"}])
    _not_echoed(assert_one_line_error(status, body, 422, "pairs[0]", "not a field of a pair"), XSS)
    status, body = server.score(XSS, [PAIR])
    _not_echoed(assert_one_line_error(status, body, 404, "model", "served: model"), XSS)
    status, _, data = server.request(
        "POST",
        f"/v1/batch?model={urllib.parse.quote(XSS)}",
        b"src\tmt\na\tb\n",
        {"Content-Type": "text/plain"},
    )
    _not_echoed(assert_one_line_error(status, json.loads(data), 404, "model"), XSS)
    status, _, data = server.request(
        "POST", f"/v1/batch?model=model&format={urllib.parse.quote(XSS)}", b"src\tmt\na\tb\n"
    )
    _not_echoed(assert_one_line_error(status, json.loads(data), 422, "format: expected tsv or jsonl"), XSS)
    status, _, data = server.request("GET", "/" + urllib.parse.quote(XSS))
    _not_echoed(assert_one_line_error(status, json.loads(data), 404, "no such path"), XSS)
    status, body = server.score("nmt-toy", [{**PAIR, "nmt_logprobs": f"-1 -1 {XSS}"}])
    message = assert_one_line_error(status, body, 422, "pairs[0]", "nmt")
    _not_echoed(message, XSS, "<img", "onerror")
    still_serving(server)
