"""The scoring context (``qe.model.scoring``): `qe predict` reads the model file once, each input once (the
chunks come from the bytes the whole-file scan kept, within ``qe.stream.inputs.MEMORY_BUDGET``) and
binds the families once per process (issue 20), as `qe features` does; a context scores any number of
batches, from any thread, as scoring everything at once does."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from qe.features.base import Pairs
from qe.features.registry import make_families
from qe.infra.errors import QEInputError
from qe.model.file import QEModel
from qe.model.scoring import ScoringContext
from tests.helpers import write_lines
from tests.helpers.scoring import scored_at_once

REPO = Path(__file__).resolve().parents[1]
NMT_LOG = REPO / "tests" / "fixtures" / "nmt" / "fairseq_generate.txt"

# Runs `qe ARGV` in a fresh process (so that its workers are forked and inherit the counters), noting
# as JSON lines each open of a watched file, each FeatureFamily.bind and each chunk scored, by process.
_PROBE = """
import builtins, io, json, os, sys
from pathlib import Path

log, watched, budget = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
if budget != "-":
    import qe.stream.inputs
    qe.stream.inputs.MEMORY_BUDGET = int(budget)
watched = {str(Path(path).resolve()): name for name, path in watched.items()}
real_open, real_os_open = builtins.open, os.open

def note(*event):
    with real_open(log, "a") as handle:
        handle.write(json.dumps([os.getpid(), *event]) + "\\n")

def name_of(file):
    return watched.get(str(Path(file).resolve())) if isinstance(file, str | os.PathLike) else None

def counting_open(file, *args, **kwargs):
    if name_of(file):
        note("open", name_of(file))
    return real_open(file, *args, **kwargs)

def counting_os_open(file, *args, **kwargs):
    if name_of(file):
        note("open", name_of(file))
    return real_os_open(file, *args, **kwargs)

builtins.open = io.open = counting_open
os.open = counting_os_open

from qe.features.base import FeatureFamily
real_bind = FeatureFamily.bind
def bind(self, resources):
    note("bind", self.name)
    return real_bind(self, resources)
FeatureFamily.bind = bind

from qe.commands.features import FeatureTask
from qe.commands.predict import PredictTask
for task in (FeatureTask, PredictTask):
    def process(self, state, chunk, real=task.process):
        note("chunk", len(chunk))
        return real(self, state, chunk)
    task.process = process

from qe.cli import main
note("main")
sys.exit(main(sys.argv[4:]))
"""


def _counted(
    tmp_path: Path, watched: dict[str, Path], *argv: str, budget: int | None = None
) -> tuple[int, list[list]]:
    """Run ``qe argv`` under the probe (with ``budget`` as ``MEMORY_BUDGET``): the parent's pid and the
    events noted by every process."""
    log = tmp_path / "events.jsonl"
    log.unlink(missing_ok=True)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    names = json.dumps({name: str(path) for name, path in watched.items()})
    command = [sys.executable, "-c", _PROBE, str(log), names, "-" if budget is None else str(budget)]
    command += [*argv, "--quiet"]
    done = subprocess.run(command, env=env, capture_output=True, text=True, cwd=tmp_path, check=False)
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in log.read_text().splitlines()]
    (parent,) = [pid for pid, kind, *_ in events if kind == "main"]
    return parent, events


@pytest.mark.parametrize("jobs", [1, 2])
def test_predict_reads_the_model_and_each_input_once_and_binds_once_per_process(
    tmp_path, surface_model, pairs, jobs
):
    src, mt = pairs
    argv = ["predict", "--model", str(surface_model), "--src", str(src), "--mt", str(mt)]
    argv += ["--out", str(tmp_path / "scores.tsv"), "--jobs", str(jobs), "--chunk-size", "64"]
    parent, events = _counted(tmp_path, {"model": surface_model, "src": src, "mt": mt}, *argv)
    opens = Counter(name for _, kind, *rest in events if kind == "open" for name in rest)
    # 40e1459: the model twice (load, then its hash); 2bfca9c: each input twice (scan, then chunks)
    assert opens == {"model": 1, "src": 1, "mt": 1}
    binds = Counter((pid, name) for pid, kind, *rest in events if kind == "bind" for name in rest)
    assert binds == {(parent, "surface"): 1}  # 40e1459: once more per chunk; forked workers inherit
    scored = Counter()
    for pid, kind, *rest in events:
        if kind == "chunk":
            scored["parent" if pid == parent else "workers"] += rest[0]
    # 600 pairs in chunks of 64; with two jobs the workers score them all, the parent only warms up
    assert scored == ({"parent": 600} if jobs == 1 else {"parent": 8, "workers": 600})
    assert len((tmp_path / "scores.tsv").read_text().splitlines()) == 601


@pytest.mark.slow
@pytest.mark.parametrize("jobs", [1, 2])
def test_an_input_beyond_the_memory_budget_is_read_a_second_time_with_the_same_scores(
    tmp_path, surface_model, pairs, jobs
):
    """The inputs kept from the scan hold at most MEMORY_BUDGET bytes together: with room for the
    source alone, the MT file is opened again for its chunks; with none, both are."""
    src, mt = pairs
    argv = ["predict", "--model", str(surface_model), "--src", str(src), "--mt", str(mt)]
    argv += ["--jobs", str(jobs), "--chunk-size", "64"]
    watched = {"model": surface_model, "src": src, "mt": mt}
    outputs = {}
    for budget, reads in [(None, 1), (src.stat().st_size, 1), (0, 2)]:
        out = tmp_path / f"scores-{budget}.tsv"
        _, events = _counted(tmp_path, watched, *argv, "--out", str(out), budget=budget)
        opens = Counter(name for _, kind, *rest in events if kind == "open" for name in rest)
        assert opens == {"model": 1, "src": reads, "mt": 1 if budget is None else 2}
        outputs[budget] = out.read_bytes()
    assert len(set(outputs.values())) == 1 and outputs[None].count(b"\n") == 601


@pytest.mark.parametrize("jobs", [1, 2])
def test_features_reads_each_input_once_and_binds_once_per_process(tmp_path, pairs, jobs):
    """`qe features` bound every family in the parent's checks, again in its task's setup and again
    for every chunk (2bfca9c: 2 + 10 binds with one job); now once per process, forked workers
    inheriting the parent's."""
    src, mt = pairs
    argv = ["features", "--families", "surface", "--src", str(src), "--mt", str(mt)]
    argv += ["--out", str(tmp_path / "f.tsv"), "--jobs", str(jobs), "--chunk-size", "64"]
    parent, events = _counted(tmp_path, {"src": src, "mt": mt}, *argv)
    assert Counter(rest[0] for _, kind, *rest in events if kind == "open") == {"src": 1, "mt": 1}
    binds = Counter((pid, name) for pid, kind, *rest in events if kind == "bind" for name in rest)
    assert binds == {(parent, "surface"): 1}
    assert sum(rest[0] for pid, kind, *rest in events if kind == "chunk" and pid != parent) == (
        0 if jobs == 1 else 600
    )
    assert len((tmp_path / "f.tsv").read_text().splitlines()) == 601


def test_a_decoder_log_is_checked_against_the_scanned_line_count(tmp_path):
    """The whole-input id check of a decoder log took a third read of the source (40e1459: 3 opens);
    that the check still refuses a log of other sentences: tests/test_nmt_family.py."""
    src = write_lines(tmp_path / "src", ["ein Hund", ".", "das ist gut ."])
    mt = write_lines(tmp_path / "mt", ["a dog", "-", "that is good ."])
    argv = ["features", "--families", "nmt", "--nmt-fairseq", str(NMT_LOG), "--chunk-size", "2"]
    argv += ["--src", str(src), "--mt", str(mt), "--out", str(tmp_path / "f.tsv")]
    _, events = _counted(tmp_path, {"src": src, "mt": mt}, *argv)
    assert Counter(rest[0] for _, kind, *rest in events if kind == "open") == {"src": 1, "mt": 1}


# ---------------------------------------------------------------------- the context


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def test_batches_score_as_the_whole_input_at_once(surface_model, pairs):
    """Scores equal the model's at once (families made and bound afresh, all pairs in one table),
    however the pairs are cut into batches and however often the context is used."""
    src, mt = (_lines(path)[:200] for path in pairs)
    expected = scored_at_once(surface_model, src, mt)
    context = ScoringContext.open(surface_model)
    whole = context.score(Pairs.of(src, mt))
    parts = [context.score(Pairs.of(src[i : i + 37], mt[i : i + 37], start=i)) for i in range(0, 200, 37)]
    np.testing.assert_array_equal(whole.scores, expected)
    # in batches of another size the kernel sums may round differently in the last bit
    np.testing.assert_allclose(np.concatenate([part.scores for part in parts]), expected, rtol=1e-12)
    np.testing.assert_array_equal(context.score(Pairs.of(src, mt)).scores, expected)
    assert whole.features is None
    table = context.score(Pairs.of(src[:3], mt[:3]), keep_features=True).features
    assert list(table.columns) == list(context.feature_names) and len(table) == 3


def test_threads_share_one_context(surface_model, pairs):
    src, mt = (_lines(path)[:120] for path in pairs)
    context = ScoringContext.open(surface_model)
    expected = context.score(Pairs.of(src, mt)).scores
    results: dict[int, np.ndarray] = {}

    def work(k: int) -> None:
        begin = 10 * k
        results[k] = context.score(
            Pairs.of(src[begin : begin + 40], mt[begin : begin + 40], start=begin)
        ).scores

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for k, scores in results.items():
        np.testing.assert_allclose(scores, expected[10 * k : 10 * k + 40], rtol=1e-12)


def test_what_a_service_reads_from_the_context(tmp_path, surface_model):
    context = ScoringContext.open(surface_model)
    model = QEModel.load(surface_model)
    assert context.feature_names == tuple(model.feature_names) and context.feature_names[0].startswith(
        "surface."
    )
    assert context.signature == model.manifest.signature and "family:surface" in context.signature
    assert context.label_range == (1.0, 5.0) and context.languages == {"src": "en", "tgt": "es"}
    assert context.label_kind is None and context.higher_is_better is None  # this manifest does not say
    assert context.model_sha256 == hashlib.sha256(surface_model.read_bytes()).hexdigest()
    assert context.bundle_signature is None and context.pair_inputs == ()
    model.manifest = model.manifest.with_changes(label_kind="HTER", higher_is_better=False)
    model.save(tmp_path / "hter.skops")
    told = ScoringContext.open(tmp_path / "hter.skops")
    assert (told.label_kind, told.higher_is_better) == ("HTER", False)
    with pytest.raises(QEInputError, match=r"manifest\.higher_is_better = 'no': expected true or false$"):
        model.manifest.with_changes(higher_is_better="no")  # a crafted file: tests/test_hostile_models.py


def test_pair_inputs_are_those_no_bundle_member_provides(surface_model):
    model = QEModel.load(surface_model)
    pseudoref = make_families(["surface", "pseudoref"], {"pseudoref": {"backtranslation": True}})
    context = ScoringContext(model, None, pseudoref, {})
    assert context.pair_inputs == ("pseudo_ref", "back_translation")

    class Bundle:  # a bundle with an mt2 member translates them itself
        def __contains__(self, name: str) -> bool:
            return name == "mt2"

    assert ScoringContext(model, Bundle(), pseudoref, {}).pair_inputs == ()


def test_a_batch_must_be_aligned_and_not_empty(surface_model):
    context = ScoringContext.open(surface_model)
    with pytest.raises(QEInputError, match="2 source sentences but 1 lines of mt"):
        context.score(Pairs.of(["a b", "c d"], ["x y"]))
    with pytest.raises(QEInputError, match="no sentence pairs"):
        context.score(Pairs.of([], []))
