"""Hostile model files (issue 22, items 1-6 and 12, main ba3d5b8): when the numpy reader gave up on
an array, scikit-learn's compiled code ran on it. Structured or empty support vectors and node
indices out of range crashed ``qe predict`` with a segmentation fault; trees with a cycle hung it
beyond SIGTERM; others read outside their arrays, or gave scores from arrays that disagree with the
model (10 support-vector columns for 72 features, an index of -1 wrapping round), NaN, infinite or
300-digit scores with exit 0, or a score clipped silently to the label range; a 2 GB file that is not
a model was read whole before it was refused, and a 252 KB model unpacking to 246 MB took 960 MB.
Each case is now refused with one line naming the model file: before any prediction for what the
file holds, at the pair for a score that is not a finite number of at most 1e100.
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import skops.io as sio

from qe import __version__
from qe.cli import main
from qe.features.base import Pairs
from qe.learners.factory import make_learner
from tests.helpers import write_lines
from tests.helpers.zipmembers import read_members, write_zip

REPO = Path(__file__).resolve().parents[2]
N_FEATURES = 72  # the surface family's features, as in the models
HANG_GUARD = 120  # seconds: far more than any case takes; a case still running then has hung


@pytest.fixture(scope="module")
def features() -> list[str]:
    from qe.features.extractor import extract_features
    from qe.features.registry import make_families

    table = extract_features(
        make_families(["surface"]), Pairs.of(["a b"], ["c d"], ids=["0"]), progress=False
    )
    assert len(table.columns) == N_FEATURES
    return list(table.columns)


@pytest.fixture(scope="module")
def pair(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("pair")
    src = ["The house is small .", "The cat sat on the mat ."]
    mt = ["La casa es pequeña .", "El gato se sentó en la alfombra ."]
    return write_lines(root / "src.txt", src), write_lines(root / "mt.txt", mt)


def _fitted(name: str, params: dict[str, Any] | None = None) -> Any:
    """A learner fitted on 80 rows of 72 features (labels 1-5 that some splits can find)."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(80, N_FEATURES)) * 10
    y = np.clip(3 + np.sign(x[:, 0]) + 0.1 * x[:, 1], 1, 5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return make_learner(name, params).fit(x, y)


def _dump(path: Path, estimator: Any, features: list[str], label_range: list[float] | None = None) -> Path:
    """Write a model file the way a stranger would: skops itself, no qe check on the way."""
    manifest = {
        "qe_version": __version__,
        "families": ["surface"],
        "family_settings": {},
        "feature_sets": [],
        "resources": None,
        "label_range": label_range,
    }
    payload = {"estimator": estimator, "feature_names": features, "manifest_json": json.dumps(manifest)}
    path.write_bytes(sio.dumps(payload))
    return path


def _edit(path: Path, attribute: str, change: Callable[[Any], Any]) -> Path:
    """Replace the value of ``attribute`` in the first object holding it (breadth first): an array
    (``change`` gets a copy and returns the new one) or a JSON value (``change`` returns the new one)."""
    members = read_members(path)
    schema = json.loads(members["schema.json"])
    found = []
    stack = [schema]
    while stack:
        node = stack.pop(0)
        if isinstance(node, dict):
            content = node.get("content")
            if isinstance(content, dict) and isinstance(content.get(attribute), dict):
                found.append(content[attribute])
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    target = found[0]
    if "file" in target:
        buffer = io.BytesIO()
        np.save(buffer, change(np.load(io.BytesIO(members[target["file"]])).copy()))
        members[target["file"]] = buffer.getvalue()
    else:
        target["content"] = json.dumps(change(json.loads(target["content"])))
        target.pop("__id__", None)  # skops shares one node among equal small values: this is another
        members["schema.json"] = json.dumps(schema).encode()
    return write_zip(path, members)


def _set(index: Any, field: str | None, value: Any) -> Callable[[np.ndarray], np.ndarray]:
    def change(array: np.ndarray) -> np.ndarray:
        (array if field is None else array[field])[index] = value
        return array

    return change


def _first_inner(nodes: np.ndarray, leaf_field: str) -> int:
    """The first inner node of a tree's records (scikit-learn: left_child -1 at leaves)."""
    inner = nodes[leaf_field] == 0 if leaf_field == "is_leaf" else nodes[leaf_field] != -1
    return int(np.flatnonzero(inner)[0])


def _predict_argv(model: Path, pair: tuple[Path, Path]) -> list[str]:
    src, mt = pair
    return ["predict", "--model", str(model), "--src", str(src), "--mt", str(mt), "--quiet"]


def _subprocess(model: Path, pair: tuple[Path, Path], out: Path) -> subprocess.CompletedProcess:
    """``qe predict`` in a process of its own (a crash must not take the tests with it); a run still
    going after the hang guard gets SIGTERM, then SIGKILL, and fails the case."""
    argv = [sys.executable, "-m", "qe", *_predict_argv(model, pair), "--out", str(out)]
    proc = subprocess.Popen(
        argv,
        cwd=out.parent,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        stdout, stderr = proc.communicate(timeout=HANG_GUARD)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.communicate(timeout=10)
            pytest.fail("qe predict hung until SIGTERM")
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            pytest.fail("qe predict hung and ignored SIGTERM")
    return subprocess.CompletedProcess(argv, proc.returncode, stdout, stderr)


def _one_line(stderr: str, model: Path) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"qe: error: {model}: "), stderr
    return lines[0]


# ---------------------------------------------------------------------- items 1-3: crashes, reads, hangs


def _maker(name: str, params: dict[str, Any] | None = None) -> Callable[..., Path]:
    """``make(path, features, label_range=None)``: a fitted ``name`` learner written to ``path``."""

    def make(path: Path, features: list[str], label_range: list[float] | None = None) -> Path:
        return _dump(path, _fitted(name, params), features, label_range)

    return make


_svr = _maker("svr")
_poly = _maker("svr", {"kernel": "poly", "degree": 2})
_hgb = _maker("gradient_boosting", {"max_iter": 5, "min_samples_leaf": 5})
_forest = _maker("random_forest", {"n_estimators": 3})
_m5p = _maker("m5p", {"unpruned": True})
_ridge = _maker("ridge")
_average = _maker("average", {"members": [{"name": "ridge"}, {"name": "mean"}]})


def _hgb_node(field: str, value: Any) -> Callable:
    def change(nodes):
        nodes[field][_first_inner(nodes, "is_leaf")] = value
        return nodes

    return change


def _forest_node(field: str, value: int) -> Callable:
    def change(nodes):
        nodes[field][_first_inner(nodes, "left_child")] = value
        return nodes

    return change


def _records(array: np.ndarray) -> np.ndarray:
    """``array`` as records of its values and a second field (libsvm read them as numbers)."""
    records = np.zeros(array.shape, dtype=[("value", "<f8"), ("other", "<i8")])
    records["value"] = array
    return records


def _root_children(left: str, right: str, value: int | None) -> Callable:
    """Both children of the root set to ``value`` (``None``: one past the last node), so every row
    follows one."""

    def change(nodes):
        nodes[left][0] = nodes[right][0] = len(nodes) + 1 if value is None else value
        return nodes

    return change


def _cycle(left: str, right: str) -> Callable:
    return _root_children(left, right, 0)  # every row comes back to the root


CRASHES = {
    # item 1: segmentation faults (exit 139, no message)
    "svr-support-vectors-of-records": (_svr, "support_vectors_", lambda a: _records(a)),
    "svr-no-support-vectors": (_svr, "support_vectors_", lambda a: a[:0]),
    "hgb-left-4e9": (_hgb, "nodes", _root_children("left", "right", 4_000_000_000)),
    "hgb-feature-1e9": (_hgb, "nodes", _hgb_node("feature_idx", 10**9)),
    "forest-left-child-1e12": (_forest, "nodes", _root_children("left_child", "right_child", 10**12)),
    "forest-child-past-node-count": (_forest, "nodes", _root_children("left_child", "right_child", None)),
    "forest-feature-1e9": (_forest, "nodes", _forest_node("feature", 10**9)),
    # item 2: reads outside the arrays (scores changing from run to run)
    "hgb-categorical-split-empty-bitset": (_hgb, "nodes", _hgb_node("is_categorical", 1)),
    "forest-feature-72-of-72": (_forest, "nodes", _forest_node("feature", N_FEATURES)),
    # item 3: hangs that SIGTERM did not end
    "hgb-cycle": (_hgb, "nodes", _cycle("left", "right")),
    "forest-cycle": (_forest, "nodes", _cycle("left_child", "right_child")),
}


@pytest.mark.parametrize("case", list(CRASHES))
def test_arrays_that_crashed_read_astray_or_hung_are_refused_in_one_line(tmp_path, features, pair, case):
    make, attribute, change = CRASHES[case]
    model = _edit(make(tmp_path / "m.skops", features), attribute, change)
    out = tmp_path / "scores.tsv"
    result = _subprocess(model, pair, out)
    assert result.returncode == 2, (result.returncode, result.stderr[-2000:])
    err = _one_line(result.stderr, model)
    assert "damaged or was not written by qe" in err
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["m.skops"]


# ---------------------------------------------------------------------- items 4 and 5: wrong or wild scores


def _m5p_child(value: int) -> Callable:
    def change(left):
        left[int(np.flatnonzero(left >= 0)[0])] = value
        return left

    return change


def _leaf_values(value: float) -> Callable:
    def change(nodes):
        nodes["value"][nodes["is_leaf"] == 1] = value
        return nodes

    return change


def _times(factor: float) -> Callable:
    return lambda array: array * factor


def _case(make, edits, expected, options=(), label_range=None) -> tuple:
    """A model made by ``make`` with ``edits`` (attribute, change) applied; ``expected`` in its error."""
    return make, edits, expected, options, label_range


NAN_INTERCEPT = [("_intercept_", _set(0, None, np.nan))]
INF_DUAL = [("_dual_coef_", _set((0, 0), None, np.inf))]
HUGE_COEF = [("coef_", lambda a: np.full_like(a, 1e308))]
WRONG = {
    # item 4: arrays that disagree with the model, taken silently
    "svr-10-columns-of-72": _case(_svr, [("support_vectors_", lambda a: a[:, :10])], "(n, 72)"),
    "m5p-child-minus-1": _case(_m5p, [("left", _m5p_child(-1))], "child index"),
    "hgb-feature-minus-3": _case(_hgb, [("nodes", _hgb_node("feature_idx", -3))], "feature outside"),
    # item 5: NaN, infinite and 300-digit scores written with exit 0
    "nan-support-vectors": _case(_svr, [("support_vectors_", _set((0, 0), None, np.nan))], "NaN"),
    "nan-intercept": _case(_svr, NAN_INTERCEPT, "NaN"),
    "nan-gamma": _case(_svr, [("_gamma", lambda a: np.float64(np.nan))], "_gamma"),
    "nan-averaging-weights": _case(_average, [("weights_", _set(0, None, np.nan))], "NaN"),
    "nan-m5p-leaf-coefficients": _case(_m5p, [("leaf_coef", lambda a: a * np.nan)], "leaf coefficients"),
    "nan-hgb-leaf-values": _case(_hgb, [("nodes", _leaf_values(np.nan))], "leaf value"),
    "nan-intercept-wmt12": _case(_svr, NAN_INTERCEPT, "NaN", ("--format", "wmt12")),
    "inf-dual-coefficients": _case(_svr, INF_DUAL, "NaN or inf"),
    "inf-dual-coefficients-clipped": _case(_svr, INF_DUAL, "NaN or inf", label_range=[1.0, 5.0]),
    "1e308-coefficients": _case(_ridge, HUGE_COEF, "line 1 the score"),
    "1e308-coefficients-clipped": _case(_ridge, HUGE_COEF, "line 1 the score", label_range=[1.0, 5.0]),
    "degree-1000-polynomial": _case(
        _poly, [("degree", lambda value: 1000), ("coef0", lambda value: 2.0)], "line 1 the score"
    ),
}


@pytest.mark.parametrize("case", list(WRONG))
def test_arrays_giving_wrong_or_wild_scores_are_refused_in_one_line(tmp_path, capsys, features, pair, case):
    make, edits, expected, options, label_range = WRONG[case]
    model = make(tmp_path / "m.skops", features, label_range=label_range)
    for attribute, change in edits:
        _edit(model, attribute, change)
    out = tmp_path / "scores.tsv"
    capsys.readouterr()
    code = main([*_predict_argv(model, pair), *options, "--out", str(out)])
    err = _one_line(capsys.readouterr().err, model)
    assert code == 2 and expected in err, err
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["m.skops"]


def test_a_clipped_score_is_reported_not_silent(tmp_path, capsys, features, pair):
    """Clipping to the training label range is how qe scores; how many were clipped is said."""
    model = _dump(tmp_path / "m.skops", _fitted("ridge"), features, label_range=[1.0, 5.0])
    _edit(model, "intercept_", lambda value: np.asarray(value) + 100.0)  # every score above 5
    out = tmp_path / "scores.tsv"
    assert main([*_predict_argv(model, pair), "--out", str(out)]) == 0
    assert out.read_text().splitlines()[1:] == ["0\t5.000000", "1\t5.000000"]
    warning = capsys.readouterr().err.strip()
    assert warning == (
        "qe: warning: 2 of the 2 scores written were outside the training label range [1, 5] and were "
        "clipped to it"
    )


# ---------------------------------------------------------------------- items 6 and 12: size


# Runs a command and prints its peak resident memory (KB) last on standard error: measured from a small
# process of its own, since a child forked from pytest would count pytest's memory from before its exec.
_MEASURE = (
    "import resource, subprocess, sys; code = subprocess.run(sys.argv[1:]).returncode; "
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr); sys.exit(code)"
)


def _measured(argv: list[str], cwd: Path) -> tuple[int, str, int]:
    """Exit code, standard error and peak resident memory (MB) of a command run to its end."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    result = subprocess.run(
        [sys.executable, "-c", _MEASURE, *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=HANG_GUARD,
    )
    *lines, peak = result.stderr.strip().splitlines()
    return result.returncode, "\n".join(lines), int(peak) // 1024


def test_a_2_gb_file_that_is_not_a_model_is_refused_before_it_is_read(tmp_path, pair):
    big = tmp_path / "big.skops"
    with open(big, "wb") as handle:
        handle.truncate(2 << 30)  # sparse: no disk used
    argv = [sys.executable, "-m", "qe", *_predict_argv(big, pair)]
    code, stderr, peak = _measured(argv, tmp_path)
    err = _one_line(stderr, big)
    assert code == 2 and "is 2,147,483,648 bytes, more than a qe model file may be" in err
    assert peak < 200, f"{peak} MB"


def test_a_small_model_unpacking_to_246_mb_is_refused_before_it_is_unpacked(tmp_path, features, pair):
    """A 252 KB file whose array of zeros unpacks to 246 MB (inside the old 256 MB limit)."""
    model = _svr(tmp_path / "m.skops", features)
    _edit(model, "_probA", lambda a: np.zeros(246 << 17))  # 246 MB of float64 zeros
    assert model.stat().st_size < 300 << 10
    argv = [sys.executable, "-m", "qe", *_predict_argv(model, pair)]
    code, stderr, peak = _measured(argv, tmp_path)
    err = _one_line(stderr, model)
    assert code == 2 and "its members unpack to 258,0" in err and "zip bomb" in err
    assert peak < 200, f"{peak} MB"
