"""Property: a model file with any one array or value of any saved learner mutated (dtype, shape,
values, indices, NaN / inf, cycles, ids, a missing attribute, a damaged ``.npy`` header) loads and
scores finite numbers, or is refused with one line naming the file; never a crash, a hang, another
exception or a non-finite score. In-process (load + score on a small matrix), so ``make fuzz`` can
try 10,000 files; the subprocess cases (signals, hangs, SIGTERM) are in ``tests/hostile``.
"""

from __future__ import annotations

import contextlib
import io
import json
import warnings
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from qe import __version__
from qe.infra.errors import QEInputError
from qe.model.file import QEModel, prediction_only, skops_io
from tests.fuzz.conftest import count_example, hang_guard

FEATURES = ["a", "b", "c"]
ROWS = pd.DataFrame([[0.5, -1.0, 2.0], [10.0, 0.0, -3.0]], columns=FEATURES)
HANG_GUARD = 60  # seconds for one example: far more than any takes
# Every kind of estimator qe saves (name, params), small enough to mutate quickly.
LEARNERS = {
    "svr": ("svr", None),
    "svr-poly": ("svr", {"kernel": "poly", "degree": 2}),
    "svr-fast": ("svr_fast", {"n_components": 8}),
    "ridge": ("ridge", None),
    "mean": ("mean", None),
    "m5p": ("m5p", {"unpruned": True}),
    "gradient-boosting": ("gradient_boosting", {"max_iter": 4, "min_samples_leaf": 5}),
    "poisson-boosting": ("gradient_boosting", {"max_iter": 3, "loss": "poisson", "min_samples_leaf": 5}),
    "forest": ("random_forest", {"n_estimators": 2}),
    "extra-trees": ("extra_trees", {"n_estimators": 2}),
    "kernel-ridge": ("kernel_ridge", {"kernel": "laplacian"}),
    "gp": ("gp", {"linear": True}),
    "rank-average": ("average", {"members": [{"name": "ridge"}, {"name": "m5p"}], "combine": "rank"}),
    "stack": ("stack", {"members": [{"name": "ridge"}, {"name": "mean"}], "cv": 2}),
    "aux-stack": ("aux_stack", {"final": {"name": "ridge"}, "aux": {"name": "ridge"}, "cv": 2}),
}
SPECIAL = [np.nan, np.inf, -np.inf, 1e308, -1e308, 0.0, -1.0, 1.0, 0.5, 3.0, 1e9, 2**31, 2**32 + 1, 10**12]
JSON_VALUES = [
    None,
    True,
    False,
    -1,
    0,
    1,
    2,
    3,
    1000,
    10**30,
    -(10**30),
    1e308,
    0.5,
    "rbf",
    "poly",
    "x",
    [],
    {},
]


def _fitted(name: str, params: dict[str, Any] | None) -> Any:
    from qe.learners.factory import make_learner

    rng = np.random.default_rng(0)
    x = rng.normal(size=(40, 3))
    y = np.abs(x[:, 0] * 2 + np.sign(x[:, 1])) + 1
    target = np.column_stack([y, x[:, 2]]) if name == "aux_stack" else y
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return make_learner(name, params).fit(x, target)


@pytest.fixture(scope="module")
def models() -> dict[str, dict[str, bytes]]:
    """Each learner's model file, as its members (name -> bytes)."""
    manifest = {"qe_version": __version__, "families": ["surface"], "label_range": [1.0, 5.0]}
    out = {}
    for key, (name, params) in LEARNERS.items():
        payload = {
            "estimator": prediction_only(_fitted(name, params)),
            "feature_names": FEATURES,
            "manifest_json": json.dumps(manifest),
        }
        with zipfile.ZipFile(io.BytesIO(skops_io().dumps(payload))) as archive:
            out[key] = {member: archive.read(member) for member in archive.namelist()}
    return out


def _nodes(schema: Any) -> Iterator[dict[str, Any]]:
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if "__loader__" in node:
                yield node
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)


def _npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=True)
    return buffer.getvalue()


@st.composite
def _array_change(draw: st.DrawFn, array: np.ndarray) -> np.ndarray | bytes:
    """A mutated copy of ``array`` (or damaged ``.npy`` bytes)."""
    kind = draw(st.sampled_from(["value", "value", "value", "cycle", "dtype", "shape", "header"]))
    array = array.copy()
    fields = array.dtype.names
    if kind in ("value", "cycle") and array.size:
        field = draw(st.sampled_from(fields)) if fields else None
        flat = (array[field] if field else array).reshape(-1)
        index = draw(st.integers(0, flat.size - 1))
        if kind == "cycle" and flat.dtype.kind in "iu":
            value: Any = draw(st.integers(0, index))  # a child pointing back at or above its node
        else:
            value = draw(st.sampled_from([*SPECIAL, flat.size, flat.size + 1, -2, -3]))
        with contextlib.suppress(ValueError, OverflowError, TypeError), np.errstate(all="ignore"):
            flat[index] = np.asarray(value).astype(flat.dtype)
        return array
    if kind == "dtype":
        choices = ["<f4", ">f8", "<i8", "<i4", "<u4", "u1", "?", "<c16", "O", "<f8"]
        dtype = draw(st.sampled_from(choices))
        if fields:
            return np.zeros(array.shape, dtype=[(name, dtype) for name in fields]) if dtype != "O" else array
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            return array.astype(dtype)
    if kind == "shape":
        how = draw(st.sampled_from(["flat", "half", "empty", "twice", "axis", "transpose", "columns"]))
        if how == "flat":
            return array.reshape(-1)
        if how == "half":
            return array[: max(0, len(array) // 2)] if array.ndim else array
        if how == "empty":
            return np.empty((0, *array.shape[1:]), dtype=array.dtype)
        if how == "twice":
            return np.concatenate([array, array]) if array.ndim else array
        if how == "axis":
            return array[None]
        if how == "transpose":
            return array.T
        return array[..., :1] if array.ndim > 1 else array
    data = _npy(array)
    if draw(st.booleans()):
        return data[: draw(st.integers(0, len(data) - 1))]
    return data.replace(b"'shape': (", b"'shape': (1000000000, ", 1)


@st.composite
def mutated(draw: st.DrawFn, models: dict[str, dict[str, bytes]]) -> tuple[str, bytes]:
    """A learner's model file with one thing changed, as zip bytes."""
    name = draw(st.sampled_from(sorted(models)))
    members = dict(models[name])
    schema = json.loads(members["schema.json"])
    nodes = list(_nodes(schema))
    arrays = sorted(
        {node["file"] for node in nodes if node["__loader__"] == "NdArrayNode" and "file" in node}
    )
    target = draw(st.sampled_from(["array", "array", "array", "json", "id", "drop"]))
    if target == "array":
        member = draw(st.sampled_from(arrays))
        change = draw(_array_change(np.load(io.BytesIO(members[member]), allow_pickle=False)))
        members[member] = change if isinstance(change, bytes) else _npy(change)
    else:
        if target == "json":
            node = draw(st.sampled_from([n for n in nodes if n["__loader__"] == "JsonNode"]))
            node["content"] = json.dumps(draw(st.sampled_from(JSON_VALUES)))
            node.pop("__id__", None)
        elif target == "id":
            node, other = draw(st.sampled_from(nodes)), draw(st.sampled_from(nodes))
            node["__id__"] = other.get("__id__", 1)
        else:
            holders = [n for n in nodes if isinstance(n.get("content"), dict) and n["content"]]
            content = draw(st.sampled_from(holders))["content"]
            content.pop(draw(st.sampled_from(sorted(content))))
        members["schema.json"] = json.dumps(schema).encode()
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for member, data in members.items():
            archive.writestr(member, data)
    return name, buffer.getvalue()


@pytest.fixture(scope="module")
def model_path(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("fuzz") / "model.skops"


@given(data=st.data())
def test_a_mutated_model_scores_finite_numbers_or_is_refused_in_one_line(data, models, model_path):
    name, raw = data.draw(mutated(models), label="model")
    count_example("model reader")
    model_path.write_bytes(raw)
    with hang_guard(HANG_GUARD, "the model reader"):
        try:
            scores, _ = QEModel.load(model_path).checked_scores(ROWS)
        except QEInputError as exc:
            message = str(exc)
            assert "\n" not in message and message.startswith(f"{model_path}: "), message
            return
    assert scores.shape == (2,) and np.isfinite(scores).all(), (name, scores)
