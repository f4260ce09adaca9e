"""``qe serve`` (issue 21, branch wt-serve): a request names a model only from the server's own list.
Path-like names, the served file's own path, encodings of ``..`` and names of any size are each one
404 line (since issue 33 it quotes nothing of the name: ``test_serve_echoes.py``); no file is opened
for them."""

from __future__ import annotations

import json
import urllib.parse

import pytest

from tests.helpers.serve import assert_one_line_error, serving, still_serving

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server(surface_model):
    with serving([surface_model]) as running:
        yield running


def _names(model_path) -> list[str]:
    return [
        "../model",
        "../../../../etc/passwd",
        "/etc/passwd",
        str(model_path),  # the served file itself, by its path
        str(model_path.parent),
        "model.skops",
        "./model",
        "model/",
        "model/../model",
        "MODEL",
        " model",
        "model\x00",
        "model\n",
        "",
        "~/model",
        "%2e%2e%2fmodel",
        "..\\model",
        "file:///etc/passwd",
        "x" * 100_000,
    ]


def test_path_like_names_are_404_on_score(server, surface_model):
    for name in _names(surface_model):
        status, body = server.score(name, [{"src": "a b", "mt": "c d"}])
        echo = repr(name)[:57] if len(repr(name)) > 60 else repr(name)
        message = assert_one_line_error(status, body, 404, "is not served here", "served: model", echo=echo)
        assert len(message) < 200
    still_serving(server)


def test_path_like_names_are_404_on_batch(server, surface_model):
    for name in _names(surface_model):
        query = urllib.parse.quote(name, safe="")
        status, _, data = server.request(
            "POST",
            f"/v1/batch?model={query}",
            b'{"src": "a", "mt": "b"}\n',
            {"Content-Type": "application/x-ndjson"},
        )
        echo = repr(name)[:57] if len(repr(name)) > 60 else repr(name)
        assert_one_line_error(status, json.loads(data), 404, "is not served here", echo=echo)
    still_serving(server)
