"""A run does each shared piece of work once (issue 20): ``qe run`` with a ``[[report.against]]`` system, and
``qe ablate``, open the resource bundle once, load each split once and hash each of its texts once (the
fingerprint in the signature and the feature cache's key come from the same pass), make and bind each
feature family once and make the learner once. Counted by wrapping the functions that do that work, and
``hashlib``'s constructors for the hashing passes over each text."""

from __future__ import annotations

import collections
import functools
import hashlib
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import qe.data
import qe.infra.io
import qe.learners.factory
import qe.selection
from qe.bundle import ResourceBundle
from qe.cli import main
from qe.features.registry import family_class
from tests.helpers import write_config, write_lines
from tests.helpers.bundles import build, small_config, write_small_data
from tests.helpers.hashing import HashPasses
from tests.helpers.toy import EN, ES, sentences

FAMILIES = ("surface", "ibm1")
SIZES = {"train": 40, "test": 12}
# A word that only one text (a split's src or mt file) holds, on its first line: the hashing passes over
# that text are the hash objects fed it.
MARKERS = {f"{split}.{column}": f"Marked{split}{column}" for split in SIZES for column in ("src", "mt")}
# Likewise a number only one line-input file (the nmt family's, named in [data.<split>]) holds.
INPUT_MARKERS = {
    f"{split}.{name}": f"-0.{k}{j}1234567"
    for k, split in enumerate(SIZES)
    for j, name in enumerate(("nmt_logprobs", "nmt_score"))
}


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny bundle with IBM1 tables both ways (for the ibm1 family)."""
    root = tmp_path_factory.mktemp("bundle")
    config = small_config(ibm1={"iterations": 3, "directions": ["s2t", "t2s"], "min_prob": 0.0})
    build(root, write_small_data(root / "data"), config)
    return root / "out"


def _config(
    tmp_path: Path, bundle: Path, against: bool, selection: dict[str, Any] | None = None, inputs: bool = False
) -> Path:
    """Our system (surface and ibm1 features; ``inputs``: also nmt, whose inputs are files named in
    ``[data.<split>]``), optionally with a ``[[report.against]]`` system of one of its families."""
    data: dict[str, Any] = {"label_range": [1, 5]}
    for seed, (split, n) in enumerate(SIZES.items()):
        src, mt = sentences(n, EN, seed), sentences(n, ES, seed + 10)
        src[0], mt[0] = f"{MARKERS[f'{split}.src']} {src[0]}", f"{MARKERS[f'{split}.mt']} {mt[0]}"
        labels = [f"{1 + 4 * (len(m) % 7) / 6:.2f}" for m in mt]
        files = {"src": src, "mt": mt, "labels": labels}
        if inputs:
            files["nmt_logprobs"] = [f"-0.{k % 9 + 1} -{k % 4}.5 -0.25" for k in range(n)]
            files["nmt_score"] = [f"-{k % 7}.75" for k in range(n)]
            for name in ("nmt_logprobs", "nmt_score"):
                files[name][0] = INPUT_MARKERS[f"{split}.{name}"]
        data[split] = {k: str(write_lines(tmp_path / f"{split}.{k}", v)) for k, v in files.items()}
    config = {
        "name": "counted",
        "data": data,
        "features": {
            "families": [*FAMILIES, "nmt"] if inputs else list(FAMILIES),
            "resources": str(bundle),
            "settings": {"ibm1": {"pos": False}},
        },
        "learner": {"name": "svr", "grid": {"C": [1.0, 10.0]}},
        "cv": {"folds": 3, "n_jobs": 1},
    }
    if selection is not None:
        config["selection"] = selection
    if against:  # a second system on the same data, bundle and learner: one of our two families (and nmt)
        families = ["ibm1", "nmt"] if inputs else ["ibm1"]
        config["report"] = {"against": [{"name": " and ".join(families), "features": {"families": families}}]}
    return write_config(tmp_path / "counted.toml", config)


class Counts:
    """Calls of the wrapped functions, by a label of their arguments; the hashing passes over each text."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.monkeypatch = monkeypatch
        self.calls: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
        self.hashed = HashPasses(monkeypatch, {**MARKERS, **INPUT_MARKERS})

    def wrap(self, owner: Any, name: str, what: str, label: Callable[..., Any] = lambda *a, **k: "") -> None:
        """Count the calls of ``owner.name`` under ``what``, also where a qe module imported it by name
        (there, possibly as the wrapper of an earlier test: ``__wrapped__`` leads back to it)."""
        original = getattr(owner, name)

        @functools.wraps(original)
        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls[what][label(*args, **kwargs)] += 1
            return original(*args, **kwargs)

        self.monkeypatch.setattr(owner, name, counted)
        for module in list(sys.modules.values()):
            if module is owner or not getattr(module, "__name__", "").startswith("qe"):
                continue
            found = getattr(module, name, None)
            while found is not original and hasattr(found, "__wrapped__"):
                found = found.__wrapped__
            if found is original:
                self.monkeypatch.setattr(module, name, counted)


@pytest.fixture()
def counts(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Counts:
    monkeypatch.setenv("QE_CACHE_DIR", str(tmp_path / "cache"))  # every family extracted, not read back
    found = Counts(monkeypatch)
    found.wrap(ResourceBundle, "__init__", "bundle opened")
    found.wrap(qe.data, "load_parallel", "split loaded", lambda *a, **k: k["name"])
    found.wrap(qe.infra.io, "read_lines", "file read", lambda path, **k: Path(path).name)
    for name in FAMILIES:
        cls = family_class(name)
        found.wrap(cls, "__init__", "family made", lambda family, *a, **k: type(family).__name__)
        found.wrap(cls, "bind", "family bound", lambda family, resources: id(family))
    found.wrap(qe.learners.factory, "make_learner", "learner made")
    return found


def _each_once(counts: Counts, inputs: bool = False) -> None:
    calls = counts.calls
    assert calls["bundle opened"] == {"": 1}
    assert calls["split loaded"] == {"train": 1, "test": 1}
    read = [f"{split}.{name}" for split in SIZES for name in ("src", "mt", "labels")]
    read += list(INPUT_MARKERS) if inputs else []
    assert calls["file read"] == dict.fromkeys(read, 1)  # 7974b6f: the inputs once per system
    # 7974b6f: each text twice (fingerprint, cache key), each input twice (signature, cache key)
    assert counts.hashed.counts() == dict.fromkeys(sorted([*MARKERS, *(INPUT_MARKERS if inputs else [])]), 1)
    assert calls["family made"] == {"SurfaceFamily": 1, "IBM1Features": 1}
    assert list(calls["family bound"].values()) == [1, 1]  # two families, each bound once
    assert calls["learner made"] == {"": 1}


def test_a_run_with_an_against_system_does_each_piece_of_work_once(tmp_path, bundle, counts, capsys):
    config = _config(tmp_path, bundle, against=True)
    assert main(["run", str(config), "--output-dir", str(tmp_path / "run"), "--quiet"]) == 0, (
        capsys.readouterr()
    )
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert list(metrics["against"]) == ["ibm1"]  # the second system was fitted and compared
    assert "family:surface(" in metrics["signature"] and "family:ibm1(" in metrics["signature"]
    _each_once(counts)


def test_an_ablation_does_each_piece_of_work_once_for_all_its_variants(tmp_path, bundle, counts, capsys):
    config = _config(tmp_path, bundle, against=False)
    assert main(["ablate", str(config), "--output-dir", str(tmp_path / "ablation"), "--quiet"]) == 0, (
        capsys.readouterr()
    )
    systems = json.loads((tmp_path / "ablation" / "ablation.json").read_text())["systems"]
    assert set(systems) == {"full", *(f"{kind}:{name}" for name in FAMILIES for kind in ("without", "only"))}
    _each_once(counts)


def test_a_run_makes_its_selector_once(tmp_path, bundle, counts, capsys):
    """The config check and the selection stage each made the selector (2bfca9c: twice); the run's
    context makes it once, before any extraction, with what its record takes from the run."""
    counts.wrap(qe.selection, "make_selector", "selector made", lambda name, **params: name)
    config = _config(tmp_path, bundle, against=True, selection={"name": "correlation", "params": {"k": 3}})
    assert main(["run", str(config), "--output-dir", str(tmp_path / "run"), "--quiet"]) == 0, (
        capsys.readouterr()
    )
    assert counts.calls["selector made"] == {"correlation": 1}
    selection = json.loads((tmp_path / "run" / "selection.json").read_text())
    assert selection["n_selected"] == 3 and selection["params"]["k"] == 3
    _each_once(counts)


@pytest.mark.parametrize("command", ["run", "ablate"])
def test_line_inputs_are_read_and_hashed_once(tmp_path, bundle, counts, capsys, command):
    """Files named in ``[data.<split>]`` (here the nmt family's log-probabilities and scores) are read
    once for all the systems of a run, and hashed once for the signature and the feature cache."""
    config = _config(tmp_path, bundle, against=command == "run", inputs=True)
    assert main([command, str(config), "--output-dir", str(tmp_path / "out"), "--quiet"]) == 0, (
        capsys.readouterr()
    )
    _each_once(counts, inputs=True)
    if command == "run":
        signature = (tmp_path / "out" / "signature.txt").read_text()
        for split in SIZES:
            for name in ("nmt_logprobs", "nmt_score"):
                sha = hashlib.sha256((tmp_path / f"{split}.{name}").read_bytes()).hexdigest()[:16]
                assert f"|input.{split}.{name}:{sha}|" in signature
