"""``qe serve`` (issue 21, branch wt-serve): fields of the wrong type or missing. Numbers, lists, null
and booleans where text, lists or booleans belong ("yes" is not true, 1 is not a string), a model's
per-pair input left out (in a JSON pair or an upload's columns) or given to a model that does not read
it, per-pair inputs a family refuses: 422 naming the pair index and field, in one line."""

from __future__ import annotations

import pytest

from tests.helpers.serve import assert_one_line_error, nmt_model, serving, still_serving

pytestmark = pytest.mark.slow
GOOD = {"src": "one two", "mt": "uno dos"}


@pytest.fixture(scope="module")
def server(surface_model, tmp_path_factory):
    with serving([surface_model, nmt_model(tmp_path_factory.mktemp("nmt"))]) as running:
        yield running


@pytest.mark.parametrize(
    ("payload", "words"),
    [
        (
            {"model": "model", "pairs": [GOOD, {"src": 1, "mt": "b"}]},
            ["pairs[1].src: Input should be a valid string (got int)"],
        ),
        (
            {"model": "model", "pairs": [{"src": "a", "mt": None}]},
            ["pairs[0].mt: Input should be a valid string (got NoneType)"],
        ),
        ({"model": "model", "pairs": [GOOD, GOOD, {"src": ["a"], "mt": "b"}]}, ["pairs[2].src"]),
        ({"model": "model", "pairs": [GOOD, "one\tuno"]}, ["pairs[1]: expected a JSON object (got str)"]),
        ({"model": "model", "pairs": {"0": GOOD}}, ["pairs: Input should be a valid list (got dict)"]),
        (
            {"model": "model", "pairs": [GOOD], "features": "yes"},
            ["features: Input should be a valid boolean (got str)"],
        ),
        (
            {"model": "model", "pairs": [GOOD], "features": 1},
            ["features: Input should be a valid boolean (got int)"],
        ),
        (
            {"model": "model", "pairs": [{**GOOD, "id": 1.5}]},
            ["pairs[0].id: of none of the types this field takes (got float)"],
        ),
        ({"model": "model", "pairs": [{**GOOD, "id": True}]}, ["pairs[0].id: of none of the types"]),
        (
            {"model": "model", "pairs": [{**GOOD, "id": "x" * 201}]},
            ["pairs[0].id: expected at most 200 characters"],
        ),
        ({"model": 7, "pairs": [GOOD]}, ["model: Input should be a valid string (got int)"]),
        ({"pairs": [GOOD]}, ["model: missing"]),
        ({"model": "model"}, ["pairs: missing"]),
        ({"model": "model", "pairs": [GOOD, {"src": "a"}]}, ["pairs[1].mt: missing"]),
        ({"model": "model", "pairs": [GOOD], "token": "x"}, ["the body: an unknown key at the top level"]),
        (
            {"model": "model", "pairs": [{**GOOD, "nmt_logprobs": "-1 -1 -1"}]},
            ["pairs[0]: a key that is not a field of a pair for model model (it takes id, src, mt)"],
        ),
        (
            {"model": "nmt-toy", "pairs": [{**GOOD, "nmt_logprobs": "-1 -1 -1"}, GOOD]},
            ["pairs[1].nmt_logprobs: missing (model nmt-toy needs nmt_logprobs"],
        ),
        (
            {"model": "nmt-toy", "pairs": [{**GOOD, "nmt_logprobs": 3}]},
            ["pairs[0].nmt_logprobs: Input should be a valid string (got int)"],
        ),
    ],
)
def test_a_wrong_or_missing_field_is_422_naming_it(server, payload, words):
    status, body = server.call("POST", "/v1/score", payload)
    assert_one_line_error(status, body, 422, *words)
    still_serving(server)


def test_a_per_pair_input_the_family_refuses_is_422_naming_the_pair(server):
    pairs = [{**GOOD, "nmt_logprobs": "-1 -1 -1"}, {**GOOD, "nmt_logprobs": "-1 -1 x"}]
    status, body = server.call("POST", "/v1/score", {"model": "nmt-toy", "pairs": pairs})
    assert_one_line_error(
        status, body, 422, "pairs[1]: nmt: log-probability (a word of the pair) is not a number"
    )
    still_serving(server)


def test_an_upload_without_a_models_input_column_is_422(server):
    upload = b"src\tmt\none two\tuno dos\n"
    status, _, lines = server.batch("nmt-toy", upload, "text/tab-separated-values")
    assert status == 422
    assert lines == [
        {
            "error": "line 1: no column nmt_logprobs (the first line names the columns: id, src, mt, "
            "nmt_logprobs)"
        }
    ]
    status, _, lines = server.batch("nmt-toy", b'{"src": "a b", "mt": "c d"}\n', "application/x-ndjson")
    assert status == 422 and lines[0]["error"].startswith("line 1: nmt_logprobs: missing")
    status, _, lines = server.batch(
        "model", b"src\tmt\n1\t2\n", "text/tab-separated-values", "&features=maybe"
    )
    assert status == 422 and lines[0]["error"].startswith("features: Input should be a valid boolean")
    still_serving(server)
