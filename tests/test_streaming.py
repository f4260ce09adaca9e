"""Streamed prediction and feature extraction: chunked reading, identical output, kill-and-resume."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from qe.cli import main
from qe.commands.predict import PredictTask
from qe.features.base import Pairs
from qe.features.extractor import extract_features
from qe.features.registry import make_families
from qe.infra.errors import QEInputError
from qe.stream import inputs
from qe.stream.chunks import iter_chunks
from qe.stream.state import state_path
from tests.helpers import write_lines
from tests.helpers.scoring import scored_at_once
from tests.helpers.toy import EN, ES, sentences

REPO = Path(__file__).resolve().parents[1]


def _hidden(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


# ---------------------------------------------------------------------- reading


def test_chunks_are_aligned_and_resume_from_byte_offsets(tmp_path):
    src = write_lines(tmp_path / "s", b"a\r\nb\nc c\nd\ne")  # CRLF and no final newline accepted
    mt = write_lines(tmp_path / "m", ["A", "B", "C", "D", "E"])
    chunks = list(iter_chunks({"src": src, "mt": mt}, 2))
    assert [c.lines["src"] for c in chunks] == [["a", "b"], ["c c", "d"], ["e"]]
    assert [c.lines["mt"] for c in chunks] == [["A", "B"], ["C", "D"], ["E"]]
    assert [c.ids for c in chunks] == [["0", "1"], ["2", "3"], ["4"]]
    # byte offsets after each chunk: "a\r\nb\n" is 5 bytes, then "c c\nd\n" 6 more
    assert chunks[0].offsets == {"src": 5, "mt": 4} and chunks[1].offsets == {"src": 11, "mt": 8}
    rest = list(iter_chunks({"src": src, "mt": mt}, 5, start=2, offsets=chunks[0].offsets, first_index=1))
    assert [(c.index, c.start, c.lines["src"]) for c in rest] == [(1, 2, ["c c", "d", "e"])]


@pytest.mark.parametrize(
    ("content", "message", "line"),
    [
        (b"ok\n\xff\xfe\nok\n", "invalid UTF-8 at byte 0", 2),
        (b"ok\nok\n  \n", "blank line", 3),
        (b"", "file is empty", None),
    ],
)
def test_bad_input_is_refused_naming_file_and_line(tmp_path, content, message, line):
    path = write_lines(tmp_path / "bad.txt", content)
    with pytest.raises(QEInputError) as info:
        inputs.read_input(path)
    assert info.value.message == message and info.value.line == line and info.value.path == str(path)
    if content:
        other = write_lines(tmp_path / "other.txt", ["x", "y", "z"])
        with pytest.raises(QEInputError) as info:
            list(iter_chunks({"src": other, "mt": path}, 10))
        assert info.value.message == message and info.value.line == line


@pytest.mark.parametrize("block", [1, 2, 3, 5, 1 << 20])
@pytest.mark.parametrize(
    ("content", "message", "line"),
    [
        ("ok\né€😀 x\r\nlast".encode(), None, 3),  # multi-byte characters split by small blocks
        ("a\n \u3000\nb\n".encode(), "blank line", 2),  # an ideographic space is blank too
        ("\ufeff\nb\n".encode(), "blank line", 1),  # a BOM alone on line 1
        ("\ufeffa b\nc\n".encode(), None, 2),
        (b"a\nb\n\n", "blank line", 3),
        (b"a\nb\xc3", "invalid UTF-8 at byte 1", 2),  # cut inside a character at the end
    ],
)
def test_scan_in_blocks_agrees_with_reading_line_by_line(
    tmp_path, monkeypatch, block, content, message, line
):
    monkeypatch.setattr(inputs, "SCAN_BLOCK", block)
    path = tmp_path / "in.txt"
    path.write_bytes(content)
    if message is None:
        info, _ = inputs.read_input(path)
        digest = hashlib.sha256(content).hexdigest()
        assert (info.lines, info.size, info.sha256) == (line, len(content), digest)
        text = content.decode("utf-8").removeprefix("\ufeff").replace("\r\n", "\n")
        lines = text.removesuffix("\n").split("\n")
        chunks = list(iter_chunks({"src": path}, 2))
        assert [text for chunk in chunks for text in chunk.lines["src"]] == lines
        # the scan keeps the bytes it checked when they fit (a BOM sends it line by line, same handle)
        assert inputs.read_input(path, keep=len(content)) == (info, content)
        assert inputs.read_input(path, keep=len(content) - 1) == (info, None)
        kept = list(iter_chunks({"src": tmp_path / "gone"}, 2, kept={"src": content}))
        assert [(c.lines, c.offsets) for c in kept] == [(c.lines, c.offsets) for c in chunks]
        return
    for keep in (0, len(content)):
        with pytest.raises(QEInputError) as refused:
            inputs.read_input(path, keep=keep)
        assert (refused.value.message, refused.value.line) == (message, line)
    with pytest.raises(QEInputError) as refused:
        list(iter_chunks({"src": path}, 2))
    assert (refused.value.message, refused.value.line) == (message, line)


def test_reader_reports_where_one_file_ends(tmp_path):
    src = write_lines(tmp_path / "src.txt", ["a", "b", "c", "d"])
    mt = write_lines(tmp_path / "mt.txt", ["A", "B"])
    with pytest.raises(QEInputError) as info:
        list(iter_chunks({"src": src, "mt": mt}, 3))
    assert info.value.path == str(mt) and info.value.line == 3  # mt ends after line 2


def test_line_count_mismatch_exits_2_before_any_output(tmp_path, surface_model, pairs, capsys):
    short = write_lines(tmp_path / "short.txt", sentences(599, ES, 6))
    out = tmp_path / "scores.tsv"
    args = ["predict", "--model", str(surface_model), "--src", str(pairs[0]), "--mt", str(short)]
    assert main([*args, "--out", str(out), "--quiet"]) == 2
    assert f"{short}:600: has 599 lines but {pairs[0]} has 600" in capsys.readouterr().err
    assert not out.exists() and _hidden(tmp_path) == []


# ---------------------------------------------------------------------- predict


def _reference_tsv(model_path: Path, src: Path, mt: Path) -> tuple[str, np.ndarray]:
    """The whole input scored in memory at once (``scored_at_once``), formatted by hand."""
    scores = scored_at_once(model_path, src.read_text().splitlines(), mt.read_text().splitlines())
    return "id\tscore\n" + "".join(f"{i}\t{s:.6f}\n" for i, s in enumerate(scores)), scores


@pytest.mark.parametrize(("chunk", "jobs"), [(1000, 1), (7, 1), (64, 2)])
def test_streamed_scores_equal_scoring_everything_at_once(tmp_path, surface_model, pairs, chunk, jobs):
    expected, _ = _reference_tsv(surface_model, *pairs)
    out = tmp_path / "scores.tsv"
    args = ["predict", "--model", str(surface_model), "--src", str(pairs[0]), "--mt", str(pairs[1])]
    assert main([*args, "--out", str(out), "--chunk-size", str(chunk), "--jobs", str(jobs), "--quiet"]) == 0
    assert out.read_text() == expected
    assert _hidden(tmp_path) == []


def test_wmt12_ranks_cover_all_chunks(tmp_path, surface_model, pairs, capsys):
    _, scores = _reference_tsv(surface_model, *pairs)
    args = ["predict", "--model", str(surface_model), "--src", str(pairs[0]), "--mt", str(pairs[1])]
    for out in (tmp_path / "sub.txt", None):
        target = ["--out", str(out)] if out else []
        assert (
            main([*args, *target, "--format", "wmt12", "--method", "T_x", "--chunk-size", "50", "--quiet"])
            == 0
        )
        text = out.read_text() if out else capsys.readouterr().out
        rows = [line.split("\t") for line in text.splitlines()]
        assert [r[1] for r in rows] == [str(i) for i in range(1, 601)] and {r[0] for r in rows} == {"T_x"}
        ranks = np.array([int(r[3]) for r in rows])
        # rank 1 = highest score over the whole input, ties broken by position (checked by sorting)
        best_first = sorted(range(600), key=lambda i: (-scores[i], i))
        assert [best_first[r - 1] for r in ranks] == list(range(600))
    assert _hidden(tmp_path) == []


def test_language_check_reads_the_first_chunk(tmp_path, surface_model, pairs, capsys):
    spanish_src = write_lines(tmp_path / "src.txt", sentences(600, ES, 7))
    args = ["predict", "--model", str(surface_model), "--src", str(spanish_src), "--mt", str(pairs[1])]
    assert main([*args, "--out", str(tmp_path / "o.tsv"), "--chunk-size", "100", "--quiet"]) == 2
    assert "the source file looks like 'es'" in capsys.readouterr().err
    assert not (tmp_path / "o.tsv").exists() and _hidden(tmp_path) == []
    assert main([*args, "--out", str(tmp_path / "o.tsv"), "--no-language-check", "--quiet"]) == 0


def test_dask_local_cluster_gives_identical_output(tmp_path, surface_model, pairs):
    pytest.importorskip("distributed")
    expected, _ = _reference_tsv(surface_model, *pairs)
    out = tmp_path / "scores.tsv"
    args = ["predict", "--model", str(surface_model), "--src", str(pairs[0]), "--mt", str(pairs[1])]
    assert (
        main([*args, "--out", str(out), "--backend", "dask", "--jobs", "1", "--chunk-size", "150", "--quiet"])
        == 0
    )
    assert out.read_text() == expected


def test_resume_needs_an_output_file_and_a_scheduler_needs_dask(surface_model, pairs, capsys):
    args = [
        "predict",
        "--model",
        str(surface_model),
        "--src",
        str(pairs[0]),
        "--mt",
        str(pairs[1]),
        "--quiet",
    ]
    assert main([*args, "--resume"]) == 2
    assert "--resume needs --out" in capsys.readouterr().err
    assert main([*args, "--scheduler", "tcp://127.0.0.1:1"]) == 2
    assert "only makes sense with backend 'dask'" in capsys.readouterr().err


# ---------------------------------------------------------------------- kill and resume


def _wait_for_chunks(state: Path, proc: subprocess.Popen, chunks: int, timeout: float = 120.0) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"the run ended before it could be killed (exit {proc.returncode})")
        try:
            done = json.loads(state.read_text())["chunks_done"]
        except (FileNotFoundError, json.JSONDecodeError, KeyError):
            done = 0
        if done >= chunks:
            return done
        time.sleep(0.01)
    pytest.fail("no progress recorded in the state file")


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["tsv", "wmt12"])
def test_killed_run_resumes_to_the_uninterrupted_output(tmp_path, surface_model, fmt):
    src = write_lines(tmp_path / "src.txt", sentences(1500, EN, 11))
    mt = write_lines(tmp_path / "mt.txt", sentences(1500, ES, 12))
    whole, cut = tmp_path / "whole", tmp_path / "cut"
    whole.mkdir()
    cut.mkdir()
    base = [sys.executable, "-m", "qe", "predict", "--model", str(surface_model), "--src", str(src)]
    base += ["--mt", str(mt), "--format", fmt, "--chunk-size", "25", "--quiet"]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    subprocess.run([*base, "--out", str(whole / "out")], check=True, env=env, cwd=REPO)

    target = cut / "out"
    proc = subprocess.Popen([*base, "--out", str(target)], env=env, cwd=REPO, start_new_session=True)
    try:
        done = _wait_for_chunks(state_path(target), proc, 5)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert not target.exists()
    state = json.loads(state_path(target).read_text())
    assert 5 <= done <= state["chunks_done"] < 60
    partial = next(p for p in cut.iterdir() if p.name in (".out.partial", ".out.scores"))
    # a chunk written after the last recorded one (state not yet saved) must be dropped on resume
    with open(partial, "ab") as handle:
        handle.write(b"half a chunk\n" if fmt == "tsv" else b"\0" * 16)

    resumed = subprocess.run(
        [*base, "--out", str(target), "--resume"], env=env, cwd=REPO, capture_output=True
    )
    assert resumed.returncode == 0, resumed.stderr.decode()
    assert f"resuming at pair {state['pairs_done']:,}" in resumed.stderr.decode()
    assert target.read_bytes() == (whole / "out").read_bytes()
    assert _hidden(cut) == [] and _hidden(whole) == []


def test_resume_refuses_a_changed_input_and_a_plain_rerun_starts_over(
    tmp_path, surface_model, pairs, capsys, monkeypatch
):
    expected, _ = _reference_tsv(surface_model, *pairs)
    out = tmp_path / "scores.tsv"
    args = ["predict", "--model", str(surface_model), "--src", str(pairs[0]), "--out", str(out), "--quiet"]
    args += ["--chunk-size", "100"]
    original = PredictTask.process

    def interrupted(self, state, chunk):
        if chunk.index == 3:
            raise KeyboardInterrupt
        return original(self, state, chunk)

    monkeypatch.setattr(PredictTask, "process", interrupted)
    assert main([*args, "--mt", str(pairs[1])]) == 130  # one job: chunks run in this process
    assert "rerun with --resume" in capsys.readouterr().err
    monkeypatch.setattr(PredictTask, "process", original)
    assert json.loads(state_path(out).read_text())["pairs_done"] == 300 and not out.exists()

    changed = write_lines(tmp_path / "mt2.txt", pairs[1].read_bytes().replace(b"el", b"la", 1))
    assert main([*args, "--mt", str(changed), "--resume"]) == 2
    assert "this input changed since the interrupted run" in capsys.readouterr().err
    assert state_path(out).exists()  # kept: it can still resume with its own input
    assert main([*args, "--mt", str(pairs[1]), "--resume", "--format", "wmt12"]) == 2
    assert "other options" in capsys.readouterr().err
    assert main([*args, "--mt", str(pairs[1]), "--resume"]) == 0
    assert "resuming at pair 300 of 600 (3 chunks done)" in capsys.readouterr().err
    assert out.read_text() == expected and _hidden(tmp_path) == []

    # an unfinished run is discarded (with a note) when --resume is not given
    monkeypatch.setattr(PredictTask, "process", interrupted)
    assert main([*args, "--mt", str(pairs[1])]) == 130
    monkeypatch.setattr(PredictTask, "process", original)
    assert main([*args, "--mt", str(pairs[1])]) == 0
    assert "discarding the unfinished run" in capsys.readouterr().err
    assert out.read_text() == expected and _hidden(tmp_path) == []


# ---------------------------------------------------------------------- features


def test_streamed_features_equal_one_table_extracted_at_once(tmp_path, pairs):
    src_lines, mt_lines = pairs[0].read_text().splitlines(), pairs[1].read_text().splitlines()
    table = extract_features(
        make_families(["surface"]),
        Pairs.of(src_lines, mt_lines, ids=[str(i) for i in range(600)]),
        progress=False,
    )
    tsv, parquet = tmp_path / "f.tsv", tmp_path / "f.parquet"
    base = ["features", "--src", str(pairs[0]), "--mt", str(pairs[1]), "--families", "surface", "--quiet"]
    assert main([*base, "--out", str(tsv), "--chunk-size", "128", "--jobs", "2"]) == 0
    assert tsv.read_text() == table.to_csv(None, sep="\t", index=False, float_format="%.6g")
    assert main([*base, "--out", str(parquet), "--chunk-size", "128"]) == 0
    pd.testing.assert_frame_equal(pd.read_parquet(parquet), table)
    assert _hidden(tmp_path) == []


def test_tokenization_memos_do_not_outlive_a_chunk(pairs):
    """A worker keeps families and resources across chunks but not the sentences it has seen."""
    from qe.commands.features import FeatureTask
    from qe.text.processing import TextProcessor

    task = FeatureTask(("surface",), "{}", None)
    state = task.setup()
    chunk = next(iter_chunks({"src": pairs[0], "mt": pairs[1]}, 50))
    task.process(state, chunk)
    kept = vars(state[0][0]).get("_processors", {}).values()
    processors = [p for p in kept if isinstance(p, TextProcessor)]
    assert processors, "the surface family keeps its tokenizers"
    assert all(p.tokenize_many(["fresh words here"]) == [["fresh", "words", "here"]] for p in processors)
    task.process(state, chunk)
    assert all(len(p._memo) == 0 for p in processors)


@pytest.mark.parametrize(
    ("damage", "problem"),
    [
        ({"position": -5}, "position = -5: expected an integer >= 0"),
        ({"pairs_done": "abc"}, "pairs_done = 'abc': expected an integer >= 0"),
        ({"chunks_done": None}, "chunks_done = null: expected an integer >= 0"),
        ({"offsets": "zz"}, "offsets = 'zz': expected a table"),
        ({"offsets": {"src": -1}}, "offsets.src = -1: expected an integer >= 0"),
        ({"inputs": "x"}, "inputs = 'x': expected a table"),
    ],
)
def test_resume_refuses_a_damaged_state_file_in_one_line(tmp_path, surface_model, damage, problem):
    """Edited counts in the state file ended in a ValueError / TypeError traceback, or 'Invalid argument'."""
    src = write_lines(tmp_path / "src.txt", sentences(1500, EN, 11))
    mt = write_lines(tmp_path / "mt.txt", sentences(1500, ES, 12))
    base = [sys.executable, "-m", "qe", "predict", "--model", str(surface_model), "--src", str(src)]
    base += ["--mt", str(mt), "--chunk-size", "25", "--quiet"]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    target = tmp_path / "out.tsv"
    proc = subprocess.Popen([*base, "--out", str(target)], env=env, cwd=REPO, start_new_session=True)
    try:
        _wait_for_chunks(state_path(target), proc, 2)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    state = json.loads(state_path(target).read_text())
    state_path(target).write_text(json.dumps({**state, **damage}))
    resumed = subprocess.run(
        [*base, "--out", str(target), "--resume"], env=env, cwd=REPO, capture_output=True
    )
    err = resumed.stderr.decode().strip().splitlines()
    assert resumed.returncode == 2 and len(err) == 1, err
    expected = (
        f"qe: error: {state_path(target)}: {problem} (a damaged state file: run again without --resume)"
    )
    assert err[0] == expected


def test_strict_checks_every_chunk_not_only_the_first(tmp_path, surface_model, capsys):
    """--strict let an emoji-only MT line through when it was not in the first chunk."""
    src = write_lines(tmp_path / "s.txt", ["The cat sat .", "The dog ran .", "A bird sang ."])
    mt = write_lines(tmp_path / "m.txt", ["El gato .", "El perro .", "\U0001f44d\U0001f3fd\U0001f44d"])
    argv = ["predict", "--model", str(surface_model), "--src", str(src), "--mt", str(mt), "--quiet"]
    for chunk in ("10", "2"):
        capsys.readouterr()
        assert main([*argv, "--strict", "--chunk-size", chunk, "--out", str(tmp_path / "o.tsv")]) == 2
        err = capsys.readouterr().err.strip()
        assert f"{mt}:3" in err and "emoji" in err
