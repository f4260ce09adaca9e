"""The pieces of ``qe serve`` that need no server: request checks and their one-line messages, upload
parsing, the training statistics behind "most unusual features", label kinds, names and tokens; and
one quick round trip through a real server on loopback."""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import numpy as np
import pytest

from qe.infra.errors import QEInputError
from qe.serve.batch import Upload, upload_format
from qe.serve.errors import ApiError
from qe.serve.names import resolve_models
from qe.serve.pairs import check_pair, check_text, in_body, loads, on_line, parse_pair
from qe.serve.settings import Limits, is_loopback
from tests.helpers.serve import serving

MODEL = {"name": "m", "pair_inputs": ["pseudo_ref"], "family_max_chars": 100}


def _refused(call, *args) -> ApiError:
    with pytest.raises(ApiError) as caught:
        call(*args)
    return caught.value


@pytest.mark.parametrize(
    ("text", "status", "message"),
    [
        ("a\x00b", 422, "x: holds a NUL character at character 1"),
        ("ab\ud800", 422, "x: holds a lone surrogate (U+D800, not text) at character 2"),
        (" \u200b\t", 422, "x: is blank"),
        ("a" * 11, 413, "x: 11 characters, more than the 10 this server takes"),
        (5, 422, "x: Input should be a valid string (got int)"),
    ],
)
def test_a_text_that_cannot_be_scored_is_named_with_its_field(text, status, message):
    error = _refused(check_text, text, "x", 10)
    assert error.status_code == status and error.detail.startswith(message)


def test_a_pair_is_checked_against_the_models_inputs_and_the_smaller_limit():
    pair = parse_pair({"src": "a", "mt": "b", "pseudo_ref": "c", "id": 3}, on_line(4))
    assert check_pair(pair, on_line(4), MODEL, 1000) == (3, "a", "b", {"pseudo_ref": "c"})
    missing = _refused(check_pair, parse_pair({"src": "a", "mt": "b"}, in_body(2)), in_body(2), MODEL, 1000)
    assert missing.status_code == 422 and missing.detail.startswith(
        "pairs[2].pseudo_ref: missing (model m needs"
    )
    unknown = parse_pair({"src": "a", "mt": "b", "pseudo_ref": "c", "../x": "d"}, in_body(0))
    refused = _refused(check_pair, unknown, in_body(0), MODEL, 1000).detail
    assert refused.startswith("pairs[0]: a key that is not a field of a pair") and "../x" not in refused
    long = parse_pair({"src": "a" * 101, "mt": "b", "pseudo_ref": "c"}, in_body(1))
    assert _refused(check_pair, long, in_body(1), MODEL, 1000).detail.startswith(
        "pairs[1].src: 101 characters"
    )
    wrong = _refused(parse_pair, {"src": "a", "mt": ["b"]}, on_line(7))
    assert (
        wrong.status_code == 422 and wrong.detail == "line 7: mt: Input should be a valid string (got list)"
    )
    assert _refused(parse_pair, {"src": "a", "mt": "b", "id": True}, on_line(2)).detail.startswith(
        "line 2: id: of none of the types this field takes (got bool)"
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"a": NaN}', "the body is not valid JSON: NaN is not JSON"),
        ('{"a": ', "the body is not valid JSON: Expecting value"),
        ("[" * 200 + "]" * 200, "the body nests arrays or tables more than 64 levels deep"),
        ('{"a": ' + "9" * 5000 + "}", "the body is not valid JSON: it holds a number too long to read"),
    ],
)
def test_json_that_rfc_8259_does_not_allow_is_400(text, message):
    error = _refused(loads, text, "the body")
    assert error.status_code == 400 and error.detail.startswith(message)


def _upload(fmt: str, data: bytes, limits: Limits | None = None, step: int = 7) -> Upload:
    upload = Upload(fmt, {"name": "m", "pair_inputs": [], "family_max_chars": None}, limits or Limits())
    for start in range(0, len(data), step):  # arriving in pieces that split lines and characters
        upload.feed(data[start : start + step])
    upload.finish()
    return upload


def test_an_upload_is_read_line_by_line_into_chunks():
    tsv = "\ufeffmt\tid\tsrc\r\nuno dos\tx\tone two\n tres\t\tthree\n".encode()
    upload = _upload("tsv", tsv)
    assert list(upload.chunks(1)) == [[[0, "x", "one two", "uno dos", {}]], [[1, 1, "three", " tres", {}]]]
    jsonl = b'{"src": "one", "mt": "uno"}\n{"src": "\xc3\xa9t\xc3\xa9", "mt": "verano", "id": 9}'
    assert list(_upload("jsonl", jsonl).chunks(5)) == [
        [[0, 0, "one", "uno", {}], [1, 9, "été", "verano", {}]]
    ]


@pytest.mark.parametrize(
    ("fmt", "data", "status", "message"),
    [
        ("tsv", b"src\tmt\na\tb\nc\n", 422, "line 3: 1 fields, but the header names 2"),
        ("tsv", b"src\tmt\tfoo\n", 422, "line 1: column 3 is not one model m takes"),
        ("tsv", b"src\tsrc\tmt\n", 422, "line 1: a column is named twice"),
        ("tsv", b"src\n", 422, "line 1: no column mt"),
        ("tsv", b"src\tmt\n", 422, "the upload holds no pairs (only a header)"),
        ("jsonl", b'{"src": "a", "mt": "b"}\n\n{"src": "a", "mt": "b"}', 422, "line 2: blank line"),
        ("jsonl", b'{"src": "a", "mt": "b"}\n{"src": "\xff"}', 400, "line 2: not valid UTF-8 (byte 10)"),
        ("jsonl", b'{"src": "a", "mt": "b"}\n[1]', 422, "line 2: pair: expected a JSON object (got list)"),
        ("jsonl", b'{"src": "a", "mt": "b\\u0000"}', 422, "line 1: mt: holds a NUL character"),
        ("jsonl", b'{"src": "a", "mt": 1}', 422, "line 1: mt: Input should be a valid string (got int)"),
    ],
)
def test_a_bad_upload_line_is_named(fmt, data, status, message):
    error = _refused(_upload, fmt, data)
    assert error.status_code == status and error.detail.startswith(message), error.detail


def test_an_upload_over_its_limits_is_413_before_it_is_all_read():
    many = b"src\tmt\n" + b"a\tb\n" * 4
    error = _refused(_upload, "tsv", many, Limits(batch_pairs=3))
    assert error.status_code == 413 and error.detail.startswith("line 5: more than the 3 pairs")
    upload = Upload("tsv", {"name": "m", "pair_inputs": [], "family_max_chars": None}, Limits(chars=10))
    with pytest.raises(ApiError) as caught:
        upload.feed(b"src\tmt\n" + b"x" * (upload.max_line + 1))  # one line with no end yet
    assert caught.value.status_code == 413 and caught.value.detail.startswith("line 2: longer than")


def test_the_upload_format_comes_from_the_query_or_the_content_type():
    assert upload_format(None, "text/tab-separated-values; charset=utf-8") == "tsv"
    assert upload_format(None, "application/x-ndjson") == "jsonl"
    assert upload_format("jsonl", "text/plain") == "jsonl"
    assert _refused(upload_format, None, "text/plain").status_code == 400
    assert _refused(upload_format, "csv", None).status_code == 422


def test_training_statistics_are_the_scalers_of_the_fitted_model():
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVR

    from qe.learners.ensemble import AveragingRegressor
    from qe.serve.served import training_statistics

    rows = np.array([[1.0, 10.0, 5.0], [3.0, 30.0, 5.0], [5.0, 20.0, 5.0]])
    pipe = Pipeline([("scale", StandardScaler()), ("svr", SVR())]).fit(rows, [1.0, 2.0, 3.0])
    mean, std = training_statistics(AveragingRegressor([pipe]), 3)
    assert mean.tolist() == [3.0, 20.0, 5.0]
    np.testing.assert_allclose(std, [np.sqrt(8 / 3), np.sqrt(200 / 3), 0.0])
    assert training_statistics(SVR().fit(rows, [1.0, 2.0, 3.0]), 3) is None
    assert training_statistics(pipe, 4) is None  # a scaler of other inputs is not the model's


def test_names_are_file_names_and_tokens_are_private(tmp_path: Path):
    model = tmp_path / "en-es.v2.skops"
    model.write_bytes(b"x")
    (entry,) = resolve_models([str(model)])
    assert entry.name == "en-es.v2" and entry.path == model.resolve()
    odd = tmp_path / "a b.skops"
    odd.write_bytes(b"x")
    with pytest.raises(QEInputError, match="letters, digits"):
        resolve_models([str(odd)])
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.4") and not is_loopback("example.org")


def test_host_headers_and_allowed_names():
    from qe.serve.guards import host_name
    from qe.serve.settings import allowed_names, is_host_name

    assert host_name("LocalHost:8000") == "localhost" and host_name("[::1]:80") == "::1"
    assert host_name("127.0.0.1") == "127.0.0.1" and host_name("qe.example.org:443") == "qe.example.org"
    for bad in ("", ":80", "a:b", "a:80@b", "[::1", "[::1]x", "[]:80", "localhost:8000.attacker.example"):
        assert host_name(bad) is None, bad
    assert allowed_names("127.0.0.1", []) == {"127.0.0.1", "localhost", "::1"}
    assert allowed_names("0.0.0.0", ["QE.example.org", "[fe80::1]"]) == {
        "127.0.0.1",
        "localhost",
        "::1",
        "qe.example.org",
        "fe80::1",
    }
    assert "192.168.1.4" in allowed_names("192.168.1.4", [])
    assert is_host_name("qe.example.org") and is_host_name("::1") and is_host_name("10.0.0.1")
    assert not is_host_name("qe.example.org:443") and not is_host_name("http://x") and not is_host_name("a b")


def test_a_body_is_refused_at_its_first_fault_before_any_model_reads_it():
    from qe.serve.pairs import read_body

    keys = ("model", "pairs")
    assert read_body(b'{"model": "m", "pairs": []}', 2, keys) == {"model": "m", "pairs": []}
    unknown = _refused(read_body, b'{"model": "m", "<img src=x>": 1}', 2, keys)
    assert unknown.status_code == 422 and "<img" not in unknown.detail
    assert unknown.detail.startswith("the body: an unknown key at the top level")
    many = _refused(read_body, b'{"pairs": [1, 2, 3]}', 2, keys)
    assert many.status_code == 413 and many.detail.startswith("pairs: 3 pairs, more than the 2")
    assert (
        _refused(read_body, b'{"model": "\xff"}', 2, keys).detail == "the body is not valid UTF-8 (byte 12)"
    )
    assert read_body(b"[0, 0]", 2, keys) == [0, 0]  # not an object: the request model says so


def test_a_familys_quote_of_the_pairs_text_is_not_sent_back():
    from qe.serve.worker import without_pair_text

    pair = ["one two", "uno dos", "-1 -1 <b>x</b> -1"]
    message = "nmt: log-probability '<b>x</b>' is not a number"
    assert without_pair_text(message, pair) == "nmt: log-probability (a word of the pair) is not a number"
    assert (
        without_pair_text("surface: setting 'lower' is unknown", pair)
        == "surface: setting 'lower' is unknown"
    )
    assert without_pair_text("nmt: \"dos\" and 'it\\'s'", ["dos", "it's"]) == (
        "nmt: (a word of the pair) and (a word of the pair)"
    )


def test_the_uvicorn_protocol_still_has_the_hooks_qe_serve_overrides():
    """qe.serve.protocol subclasses uvicorn's H11Protocol: a uvicorn that renamed these would leave the
    header deadline and the JSON 400s silently unused."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    from qe.serve.protocol import guarded_protocol

    for name in (
        "connection_made",
        "data_received",
        "on_response_complete",
        "connection_lost",
        "send_400_response",
        "_unsupported_upgrade_warning",
    ):
        assert callable(getattr(H11Protocol, name)), name
    assert "self.send_400_response(" in inspect.getsource(H11Protocol.handle_events)
    assert "self.cycle = RequestResponseCycle(" in inspect.getsource(H11Protocol.handle_events)
    assert guarded_protocol(3.0).header_seconds == 3.0


def test_a_server_scores_a_pair_and_stops_on_sigterm_with_0(surface_model: Path):
    with serving([surface_model]) as server:
        status, body = server.score("model", [{"src": "The house is red.", "mt": "La casa es roja."}])
        assert status == 200 and body["results"][0]["index"] == 0 and 1 <= body["results"][0]["score"] <= 5
        assert json.loads(server.request("GET", "/readyz")[2])["status"] == "ready"
    assert server.process.returncode == 0


class _Scorer:
    """A served model's stand-in: score = number of words + 0.5 ("five": 5), clipped to [1, 5]; "bad"
    is refused."""

    label = type("Label", (), {"range": (1.0, 5.0)})()

    def __init__(self) -> None:
        self.passes = 0

    def score(self, src, mt, extra, start, features):
        from qe.infra.errors import QEInputError

        self.passes += 1
        if "bad" in mt:
            raise QEInputError(
                f"pair {start + mt.index('bad')} is bad", "<request>", start + mt.index("bad") + 1
            )
        raw = [5.0 if m == "five" else len(m.split()) + 0.5 for m in mt]
        return [{"score": float(min(max(r, 1), 5))} for r in raw], sum(not 1 <= r <= 5 for r in raw)


def test_requests_merged_into_one_pass_get_the_answers_they_would_get_alone():
    from qe.serve.worker import answer, answer_all

    def request(*mt: str) -> tuple:
        return ("m", ["s"] * len(mt), list(mt), {}, 0, False)

    requests = [request("a b", "a b c d e f g"), request("a a a"), request("a " * 9, "x")]
    scorer = _Scorer()
    merged = answer_all({"m": scorer}, requests)
    assert scorer.passes == 1
    alone = [answer({"m": _Scorer()}, r) for r in requests]
    expected = [
        ("ok", [{"score": 2.5}, {"score": 5.0}], 1),
        ("ok", [{"score": 3.5}], 0),
        ("ok", [{"score": 5.0}, {"score": 1.5}], 1),
    ]
    assert merged == alone == expected
    on_a_bound = [request("five"), request("a b c d e f")]  # a 5 that was not clipped, one that was
    scorer = _Scorer()
    assert answer_all({"m": scorer}, on_a_bound) == [("ok", [{"score": 5.0}], 0), ("ok", [{"score": 5.0}], 1)]
    assert scorer.passes == 3  # the merged pass could not tell them apart: each scored alone
    refused = answer_all({"m": _Scorer()}, [request("a"), request("b", "bad")])
    assert refused == [("ok", [{"score": 1.5}], 0), ("error", 422, "pairs[1]: pair 1 is bad")]


def test_the_listening_socket_lets_asyncio_turn_nagle_off():
    """Without IPPROTO_TCP named, asyncio leaves Nagle's algorithm on and every response waits 40 ms
    for the client's delayed ACK."""
    import asyncio
    import socket

    from qe.serve.server import listen

    sock = listen("127.0.0.1", 0)
    found: list[int] = []

    async def main() -> None:
        async def handle(reader, writer) -> None:
            found.append(writer.get_extra_info("socket").getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            writer.close()

        server = await asyncio.start_server(handle, sock=sock)
        _, writer = await asyncio.open_connection(*sock.getsockname()[:2])
        while not found:
            await asyncio.sleep(0.01)
        writer.close()
        server.close()

    asyncio.run(main())
    assert found == [1]
