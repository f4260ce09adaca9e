"""``qe serve`` spoken to over real HTTP on loopback: the JSON API gives ``qe predict``'s scores, in
input order with ids, label kind and direction; uploads stream back; the schema, the page and its
headers; the token, CORS, the command line's refusals; SIGTERM drains; a dead worker costs one 503."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from tests.helpers import REPO
from tests.helpers.scoring import scored_at_once
from tests.helpers.serve import (
    assert_one_line_error,
    nmt_model,
    qe_predict_scores,
    serving,
    start_server,
    wait_until,
)
from tests.helpers.toy import EN, ES, sentences

pytestmark = pytest.mark.slow  # each test talks to a real server it starts


@pytest.fixture(scope="module")
def inputs_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return nmt_model(tmp_path_factory.mktemp("nmt"))


@pytest.fixture(scope="module")
def server(surface_model: Path, inputs_model: Path):
    with serving([surface_model, inputs_model], "--workers", "2") as running:
        yield running


def _pairs(n: int, seed: int) -> list[dict[str, str]]:
    return [
        {"src": s, "mt": m} for s, m in zip(sentences(n, EN, seed), sentences(n, ES, seed + 1), strict=True)
    ]


def test_models_lists_each_model_with_its_label_and_inputs_and_no_file_path(server, surface_model):
    status, body = server.call("GET", "/v1/models")
    assert status == 200
    models = {model["name"]: model for model in body["models"]}
    assert set(models) == {"model", "nmt-toy"}  # file names without .skops
    surface = models["model"]
    assert surface["pair_inputs"] == [] and models["nmt-toy"]["pair_inputs"] == ["nmt_logprobs"]
    assert surface["label"]["range"] == [1.0, 5.0] and surface["training_statistics"] is True
    assert surface["languages"] == {"src": "en", "tgt": "es"}
    assert body["limits"]["pairs"] == 1000
    text = json.dumps(body)
    assert str(surface_model.parent) not in text and ".skops" not in text


def test_scores_equal_qe_predict_on_the_same_pairs(server, surface_model, tmp_path):
    from qe.model.file import QEModel

    pairs = _pairs(40, 20)
    status, body = server.score("model", pairs)
    assert status == 200
    scores = [result["score"] for result in body["results"]]
    assert [f"{s:.6f}" for s in scores] == qe_predict_scores(surface_model, pairs, tmp_path)
    expected = scored_at_once(surface_model, [p["src"] for p in pairs], [p["mt"] for p in pairs])
    np.testing.assert_allclose(scores, expected, rtol=0, atol=1e-9)
    signature = QEModel.load(surface_model).manifest.signature
    assert body["signature"] == signature and body["label"]["range"] == [1.0, 5.0]


def test_results_come_in_input_order_with_the_ids_given(server):
    pairs = _pairs(6, 3)
    ids = ["a", 7, None, "a", "z", 0]
    for pair, given in zip(pairs, ids, strict=True):
        if given is not None:
            pair["id"] = given
    status, body = server.score("model", pairs)
    assert status == 200
    assert [r["index"] for r in body["results"]] == list(range(6))
    assert [r["id"] for r in body["results"]] == ["a", 7, 2, "a", "z", 0]  # an absent id is the index
    alone = [server.score("model", [pair])[1]["results"][0]["score"] for pair in pairs]
    np.testing.assert_allclose([r["score"] for r in body["results"]], alone, rtol=0, atol=1e-12)


def test_features_show_the_pairs_farthest_from_the_training_distribution(server, surface_model):
    from qe.features.base import Pairs
    from qe.model.file import QEModel

    model = QEModel.load(surface_model)
    scaler = model.estimator.named_steps["scale"]  # the SVR pipeline standardises with training statistics
    pairs = [*_pairs(5, 8), {"src": "word " * 60, "mt": "palabra"}]  # far longer than any in training
    status, body = server.score("model", pairs, features=True)
    assert status == 200
    table = model.features(Pairs.of([p["src"] for p in pairs], [p["mt"] for p in pairs]))
    for result, (_, row) in zip(body["results"], table.iterrows(), strict=True):
        assert result["features"] == pytest.approx(dict(row), abs=1e-12)
        with np.errstate(divide="ignore", invalid="ignore"):
            z = (row.to_numpy() - scaler.mean_) / np.sqrt(scaler.var_)
        z[scaler.var_ == 0] = 0
        top = [model.feature_names[k] for k in np.argsort(-np.abs(z), kind="stable")[:3]]
        assert [u["feature"] for u in result["unusual"]] == top
        assert result["unusual"][0]["z"] == pytest.approx(z[model.feature_names.index(top[0])])
    longest = body["results"][-1]["unusual"][0]
    assert abs(longest["z"]) > 5 and longest["definition"]
    _, alone = server.score("model", pairs, unusual=True)  # the unusual features without all the values
    assert [r["unusual"] for r in alone["results"]] == [r["unusual"] for r in body["results"]]
    assert not any("features" in r for r in alone["results"])


def test_batch_uploads_stream_back_the_scores_of_v1_score(server):
    pairs = _pairs(250, 30)  # three chunks of 100
    _, expected = server.score("model", pairs)
    rows = ["id\tsrc\tmt"] + [f"p{k}\t{p['src']}\t{p['mt']}" for k, p in enumerate(pairs)]
    for body, kind in (
        ("\n".join(rows).encode() + b"\n", "text/tab-separated-values"),
        ("\n".join(json.dumps(p) for p in pairs).encode(), "application/x-ndjson"),
    ):
        status, headers, lines = server.batch("model", body, kind)
        assert status == 200 and headers["x-pairs"] == "250"
        assert lines[-1] == {"done": True, "pairs": 250, "clipped": expected["clipped"]}
        assert [line["index"] for line in lines[:-1]] == list(range(250))
        assert [line["score"] for line in lines[:-1]] == [r["score"] for r in expected["results"]]
        ids = [f"p{k}" for k in range(250)] if kind.startswith("text") else list(range(250))
        assert [line["id"] for line in lines[:-1]] == ids


def test_a_model_with_per_pair_inputs_takes_them_with_each_pair(server, inputs_model):
    from qe.features.base import Pairs
    from qe.model.file import QEModel

    pairs = _pairs(4, 40)
    for pair in pairs:
        pair["nmt_logprobs"] = " ".join(["-0.5"] * (len(pair["mt"].split()) + 1))
    status, body = server.score("nmt-toy", pairs)
    assert status == 200
    model = QEModel.load(inputs_model)
    extra = {"nmt_logprobs": [p["nmt_logprobs"] for p in pairs]}
    table = model.features(Pairs.of([p["src"] for p in pairs], [p["mt"] for p in pairs], extra=extra))
    expected = model.checked_scores(table)[0]
    np.testing.assert_allclose([r["score"] for r in body["results"]], expected, atol=1e-9)


def test_the_openapi_schema_describes_the_api_and_its_limits(server):
    status, schema = server.call("GET", "/v1/openapi.json")
    assert status == 200
    assert {"/v1/score", "/v1/batch", "/v1/models", "/healthz", "/readyz"} <= set(schema["paths"])
    request = schema["components"]["schemas"]["ScoreRequest"]
    assert request["properties"]["pairs"]["maxItems"] == 1000
    responses = schema["paths"]["/v1/score"]["post"]["responses"]
    assert {"200", "400", "404", "413", "422", "503"} <= set(responses)
    assert server.request("GET", "/docs")[0] == 404  # FastAPI's docs pages would load a CDN


def test_the_page_loads_only_from_this_server_and_forbids_anything_else(server):
    status, headers, page = server.request("GET", "/")
    assert status == 200 and headers["content-type"].startswith("text/html")
    assert "default-src 'self'" in headers["content-security-policy"]
    assert headers["x-frame-options"] == "DENY"
    html = page.decode()
    for attribute in ("src", "href"):
        for value in re.findall(rf'{attribute}="([^"]*)"', html):
            assert value.startswith("/"), value  # no CDN, no other host
    for asset in ("/static/app.js", "/static/style.css"):
        status, _, text = server.request("GET", asset)
        assert status == 200
        assert b"https://" not in text and b"//cdn" not in text


def test_health_and_readiness(server):
    assert server.call("GET", "/healthz") == (200, {"status": "ok"})
    assert server.call("GET", "/readyz") == (200, {"status": "ready", "workers": 2, "of": 2})


def test_a_token_guards_the_api_but_not_health(surface_model, tmp_path):
    token = tmp_path / "token"
    token.write_text("s3cret-token-of-32-characters-xx\n")
    token.chmod(0o600)
    with serving([surface_model], "--token-file", str(token)) as guarded:
        status, body = guarded.call("GET", "/v1/models")
        assert_one_line_error(status, body, 401, "bearer token")
        status, body = guarded.call("GET", "/v1/models", Authorization="Bearer wrong")
        assert status == 401
        status, body = guarded.score("model", _pairs(1, 1))
        assert status == 401
        ok = guarded.call("GET", "/v1/models", Authorization="Bearer s3cret-token-of-32-characters-xx")
        assert ok[0] == 200
        assert guarded.call("GET", "/healthz")[0] == 200


def test_no_cross_origin_requests_unless_an_origin_is_given(server, surface_model):
    preflight = {
        "Origin": "https://elsewhere.example",
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "content-type",
    }
    _, headers, _ = server.request("OPTIONS", "/v1/score", headers=preflight)
    assert "access-control-allow-origin" not in headers
    with serving([surface_model], "--cors-origin", "https://elsewhere.example") as open_server:
        _, headers, _ = open_server.request("OPTIONS", "/v1/score", headers=preflight)
        assert headers["access-control-allow-origin"] == "https://elsewhere.example"
        _, headers, _ = open_server.request(
            "OPTIONS", "/v1/score", headers={**preflight, "Origin": "https://x.example"}
        )
        assert "access-control-allow-origin" not in headers


def _serve_fails(*args: str, cwd: Path | None = None) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "qe", "serve", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        cwd=cwd,
        timeout=300,
        check=False,
    )
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    return lines[0]


def test_the_command_line_refuses_unsafe_or_impossible_settings(surface_model, tmp_path):
    model = str(surface_model)
    assert "--token-file" in _serve_fails("--model", model, "--host", "0.0.0.0")
    token = tmp_path / "token"
    token.write_text("s3cret-token-of-32-characters-xx")
    token.chmod(0o644)
    assert "chmod 600" in _serve_fails("--model", model, "--token-file", str(token))
    token.chmod(0o600)
    token.write_text("short")
    assert "at least 16" in _serve_fails("--model", model, "--token-file", str(token))
    assert "not found" in _serve_fails("--model", str(tmp_path / "absent.skops"))
    assert "served as 'model'" in _serve_fails("--model", model, "--model", model)
    assert "--workers" in _serve_fails("--model", model, "--workers", "0")
    assert "--max-pairs" in _serve_fails("--model", model, "--max-pairs", "0")
    assert "--memo-entries" in _serve_fails("--model", model, "--memo-entries", "-5")
    assert "--cors-origin" in _serve_fails("--model", model, "--cors-origin", "*")
    assert "--allowed-host" in _serve_fails("--model", model, "--host", "0.0.0.0", "--insecure-no-token")
    assert "without a port" in _serve_fails("--model", model, "--allowed-host", "qe.example.org:443")
    assert "--header-seconds" in _serve_fails("--model", model, "--header-seconds", "0")
    with socket.create_server(("127.0.0.1", 0)) as busy:
        port = str(busy.getsockname()[1])
        assert f"cannot listen on 127.0.0.1:{port}" in _serve_fails("--model", model, "--port", port)


def test_a_model_that_cannot_be_loaded_stops_the_server_before_it_listens(tmp_path):
    damaged = tmp_path / "damaged.skops"
    damaged.write_bytes(b"PK\x03\x04 not a model")
    message = _serve_fails("--model", str(damaged))
    assert "damaged.skops" in message and "model file" in message


def test_sigterm_lets_the_requests_in_flight_finish_then_exits_0(surface_model):
    server = start_server([surface_model])
    pairs = _pairs(3000, 50)
    body = "\n".join(json.dumps(p) for p in pairs).encode()
    connection = server.connection()
    connection.request(
        "POST", "/v1/batch?model=model", body=body, headers={"Content-Type": "application/x-ndjson"}
    )
    response = connection.getresponse()
    assert response.status == 200
    first = json.loads(response.readline())  # the upload is read and its first chunk scored: in flight
    server.process.send_signal(signal.SIGTERM)
    rest = [json.loads(line) for line in response.read().decode().splitlines()]
    assert first["index"] == 0 and rest[-1] == {"done": True, "pairs": 3000, "clipped": rest[-1]["clipped"]}
    assert len(rest) == 3000  # 2,999 scores and the last line
    assert server.process.wait(120) == 0
    assert "qe serve: stopped" in server.log


def test_a_worker_that_dies_costs_its_request_a_503_and_is_replaced(surface_model):
    with serving([surface_model]) as server:
        (worker,) = server.worker_pids()
        os.kill(worker, signal.SIGSTOP)  # holds the request it is given
        answers: list = []
        thread = threading.Thread(target=lambda: answers.append(server.score("model", _pairs(3, 60))))
        thread.start()
        assert wait_until(lambda: server.call("GET", "/healthz")[0] == 200)
        threading.Event().wait(1.0)  # the request is handed to the stopped worker within milliseconds
        os.kill(worker, signal.SIGKILL)
        thread.join(60)
        assert not thread.is_alive()
        assert_one_line_error(*answers[0], 503, "stopped", "try again")
        assert wait_until(lambda: server.worker_pids() not in ([], [worker]))
        assert wait_until(lambda: server.call("GET", "/readyz")[0] == 200)
        assert server.score("model", _pairs(3, 60))[0] == 200
        assert any("stopped (exit code -9); starting another" in line for line in server.log)
