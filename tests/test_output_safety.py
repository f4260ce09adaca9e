"""Outputs never destroy user data: --overwrite replaces only what qe wrote, outputs are never inputs,
output problems are one line with exit 2, signals leave no staging and no orphaned worker."""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from qe.cli import main
from qe.stream.state import state_path
from tests.helpers import write_config, write_lines
from tests.helpers.bundles import SRC, TGT, small_config
from tests.helpers.toy import EN, ES, sentences, toy_config

REPO = Path(__file__).resolve().parents[1]
MARKER = ".qe-output"


def _tree(folder: Path) -> dict[str, bytes | None]:
    """Every path under ``folder`` (hidden ones too) with its bytes (None for a directory)."""
    return {
        str(p.relative_to(folder)): None if p.is_dir() else p.read_bytes() for p in sorted(folder.rglob("*"))
    }


def _one_line_error(capsys, argv: list[str], *needles: str) -> str:
    capsys.readouterr()
    code = main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2, err
    assert len(err) == 1 and err[0].startswith("qe: error: "), err
    for needle in needles:
        assert needle in err[0], err
    return err[0]


@pytest.fixture()
def inputs(tmp_path: Path, monkeypatch) -> dict[str, Path]:
    """A toy experiment config and a toy bundle config with its data, kept apart from the outputs."""
    root = tmp_path / "inputs"
    root.mkdir()
    config = toy_config(root, learner='name = "svr"\nparams = { C = 10.0 }')
    data = root / "data"
    (data / "corpus").mkdir(parents=True)
    write_lines(data / "corpus" / "toy.en", SRC)
    write_lines(data / "corpus" / "toy.es", TGT)
    write_lines(data / "eval.en", ["Nothing like the corpus ."])
    write_lines(data / "truecase.en", ["the (7/9) The (2)", "house (4/4)", "small (3/3)"])
    bundle = write_config(root / "bundle.toml", small_config())
    monkeypatch.setenv("QE_CACHE_DIR", str(tmp_path / "cache"))
    return {"config": config, "bundle": bundle, "data": data}


def _argv(command: str, inputs: dict[str, Path], out: str | Path, *extra: str) -> list[str]:
    if command == "run":
        return ["run", str(inputs["config"]), "--output-dir", str(out), "--quiet", *extra]
    if command == "ablate":
        argv = ["ablate", str(inputs["config"]), "--output-dir", str(out), "--quiet"]
        return [*argv, "--bootstrap-samples", "20", *extra]
    argv = ["resources", "build", str(inputs["bundle"]), "--output", str(out), "--quiet"]
    return [*argv, "--data-dir", str(inputs["data"]), *extra]


KINDS = {"run": "run", "ablate": "ablation", "resources": "bundle"}
COMMANDS = list(KINDS)


# ---------------------------------------------------------------------- the working directory (6)


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("target", [".", ".."])
def test_overwrite_never_replaces_the_working_directory_or_its_parents(
    tmp_path, inputs, capsys, monkeypatch, command, target
):
    home = tmp_path / "home"
    work = home / "work"
    work.mkdir(parents=True)
    (work / "thesis.txt").write_text("four years of work\n")
    (home / "notes.txt").write_text("notes\n")
    monkeypatch.chdir(work)
    before = _tree(home)
    _one_line_error(capsys, _argv(command, inputs, target, "--overwrite"), "working directory")
    assert _tree(home) == before


def test_an_empty_working_directory_is_refused_too(tmp_path, inputs, capsys, monkeypatch):
    work = tmp_path / "empty"
    work.mkdir()
    monkeypatch.chdir(work)
    _one_line_error(capsys, _argv("run", inputs, "."), "working directory")
    assert list(work.iterdir()) == [] and sorted(p.name for p in tmp_path.iterdir() if p.name[0] == ".") == []


# ---------------------------------------------------------------------- only what qe wrote (7)


@pytest.mark.parametrize("command", COMMANDS)
def test_overwrite_refuses_a_directory_qe_did_not_write(tmp_path, inputs, capsys, command):
    out = tmp_path / "out"
    out.mkdir()
    (out / "thesis.txt").write_text("four years of work\n")
    _one_line_error(capsys, _argv(command, inputs, out, "--overwrite"), "thesis.txt")
    assert _tree(out) == {"thesis.txt": b"four years of work\n"}
    # without --overwrite: refused too, without suggesting --overwrite (it would not help)
    message = _one_line_error(capsys, _argv(command, inputs, out), "thesis.txt")
    assert "--overwrite" not in message
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


@pytest.mark.parametrize("command", COMMANDS)
def test_own_output_is_marked_and_replaced_unless_a_foreign_file_is_in_it(tmp_path, inputs, capsys, command):
    out = tmp_path / "out"
    assert main(_argv(command, inputs, out)) == 0
    assert json.loads((out / MARKER).read_text())["kind"] == KINDS[command]
    _one_line_error(capsys, _argv(command, inputs, out), "--overwrite")  # qe's own: --overwrite helps
    (out / "sentinel").write_text("old\n")  # replaced along with the rest? no: a foreign file
    before = _tree(out)
    _one_line_error(capsys, _argv(command, inputs, out, "--overwrite"), "sentinel")
    assert _tree(out) == before
    (out / "sentinel").unlink()
    inode = out.stat().st_ino
    assert main(_argv(command, inputs, out, "--overwrite")) == 0
    assert out.stat().st_ino != inode  # a new directory swapped in, not files rewritten in place
    assert json.loads((out / MARKER).read_text())["kind"] == KINDS[command]
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_overwrite_refuses_output_of_another_kind(tmp_path, inputs, capsys):
    bundle = tmp_path / "bundle"
    assert main(_argv("resources", inputs, bundle)) == 0
    before = _tree(bundle)
    _one_line_error(capsys, _argv("run", inputs, bundle, "--overwrite"), "resource bundle")
    _one_line_error(capsys, _argv("ablate", inputs, bundle, "--overwrite"), "resource bundle")
    assert _tree(bundle) == before


@pytest.mark.parametrize("command", ["run", "resources"])
def test_output_written_by_an_earlier_version_is_still_replaced(tmp_path, inputs, command):
    out = tmp_path / "out"
    assert main(_argv(command, inputs, out)) == 0
    (out / MARKER).unlink()  # as written before the marker existed (make demo reruns with --overwrite)
    assert main(_argv(command, inputs, out, "--overwrite")) == 0
    assert (out / MARKER).is_file()


def test_a_legacy_looking_directory_with_any_other_file_is_refused(tmp_path, inputs, capsys):
    out = tmp_path / "out"
    assert main(_argv("run", inputs, out)) == 0
    (out / MARKER).unlink()
    (out / "draft.docx").write_bytes(b"PK\x03\x04")
    before = _tree(out)
    _one_line_error(capsys, _argv("run", inputs, out, "--overwrite"), "draft.docx")
    assert _tree(out) == before


def test_overwrite_refuses_a_directory_holding_an_input(tmp_path, inputs, capsys):
    out = tmp_path / "run"
    assert main(_argv("run", inputs, out)) == 0
    before = _tree(out)
    # rerunning a run's own resolved config into the same run directory
    argv = ["run", str(out / "config.toml"), "--output-dir", str(out), "--quiet", "--overwrite"]
    _one_line_error(capsys, argv, "config.toml")
    assert _tree(out) == before
    data = inputs["data"]
    before = _tree(data)
    _one_line_error(capsys, _argv("resources", inputs, data, "--overwrite"), "toy.en")
    assert _tree(data) == before
    # the data directory of a run config, given on the command line
    _one_line_error(capsys, _argv("run", inputs, inputs["config"].parent, "--overwrite"), "input")


@pytest.mark.parametrize("command", COMMANDS)
def test_output_dir_that_is_an_existing_file(tmp_path, inputs, capsys, command):
    out = tmp_path / "file"
    out.write_text("precious\n")
    _one_line_error(capsys, _argv(command, inputs, out, "--overwrite"), "not a directory")
    assert out.read_text() == "precious\n"


@pytest.mark.parametrize("command", COMMANDS)
def test_output_dir_that_is_a_symlink_is_refused(tmp_path, inputs, capsys, command):
    real = tmp_path / "real"
    assert main(_argv(command, inputs, real)) == 0
    link = tmp_path / "link"
    link.symlink_to(real)
    before = _tree(real)
    _one_line_error(capsys, _argv(command, inputs, link, "--overwrite"), "symbolic link")
    assert _tree(real) == before and link.is_symlink()


# ---------------------------------------------------------------------- outputs that are inputs (8)


def _link(kind: str, target: Path, place: Path) -> Path:
    if kind == "same":
        return target
    if kind == "symlink":
        place.symlink_to(target)
    else:
        os.link(target, place)
    return place


@pytest.mark.parametrize("kind", ["same", "symlink", "hardlink"])
@pytest.mark.parametrize("role", ["src", "mt"])
def test_features_refuses_to_write_over_an_input(tmp_path, capsys, kind, role):
    files = {
        "src": write_lines(tmp_path / "s.tsv", ["The house is small ."]),
        "mt": write_lines(tmp_path / "m.tsv", ["La casa es pequeña ."]),
    }
    out = _link(kind, files[role], tmp_path / "elsewhere.tsv")
    before = _tree(tmp_path)
    argv = ["features", "--src", str(files["src"]), "--mt", str(files["mt"]), "--out", str(out)]
    _one_line_error(capsys, [*argv, "--families", "surface", "--quiet"], "input")
    assert _tree(tmp_path) == before


@pytest.mark.parametrize(("role", "kind"), [("model", "same"), ("src", "symlink"), ("mt", "hardlink")])
def test_predict_refuses_to_write_over_an_input(tmp_path, surface_model, capsys, role, kind):
    shutil.copy(surface_model, tmp_path / "model.skops")
    files = {
        "model": tmp_path / "model.skops",
        "src": write_lines(tmp_path / "new.en", ["The house is small ."]),
        "mt": write_lines(tmp_path / "new.es", ["La casa es pequeña ."]),
    }
    out = _link(kind, files[role], tmp_path / "scores.tsv")
    before = _tree(tmp_path)
    argv = ["predict", "--model", str(files["model"]), "--src", str(files["src"]), "--mt", str(files["mt"])]
    _one_line_error(capsys, [*argv, "--out", str(out), "--quiet", "--no-language-check"], "input")
    assert _tree(tmp_path) == before


def test_resources_build_refuses_a_bundle_path_that_is_its_config(tmp_path, inputs, capsys):
    before = _tree(inputs["bundle"].parent)
    _one_line_error(capsys, _argv("resources", inputs, inputs["bundle"], "--overwrite"), "input")
    assert _tree(inputs["bundle"].parent) == before


# ---------------------------------------------------------------------- one line, never a traceback


def _stream_argv(command: str, tmp_path: Path, model: Path, out: Path) -> list[str]:
    src = write_lines(tmp_path / "in.en", ["The house is small ."] * 3)
    mt = write_lines(tmp_path / "in.es", ["La casa es pequeña ."] * 3)
    if command == "features":
        argv = ["features", "--families", "surface"]
    else:
        argv = ["predict", "--model", str(model), "--no-language-check"]
    return [*argv, "--src", str(src), "--mt", str(mt), "--out", str(out), "--quiet"]


@pytest.mark.parametrize("command", ["features", "predict"])
def test_output_file_name_too_long(tmp_path, surface_model, capsys, command):
    out = tmp_path / ("x" * 300 + ".tsv")
    _one_line_error(capsys, _stream_argv(command, tmp_path, surface_model, out), "name")
    # long enough for the file itself, but not for the hidden files written beside it
    out = tmp_path / ("y" * 250 + ".tsv")
    _one_line_error(capsys, _stream_argv(command, tmp_path, surface_model, out), "name")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.en", "in.es"]


@pytest.mark.parametrize("command", COMMANDS)
def test_output_dir_name_too_long(tmp_path, inputs, capsys, command):
    _one_line_error(capsys, _argv(command, inputs, tmp_path / ("r" * 300)), "name")
    _one_line_error(capsys, _argv(command, inputs, tmp_path / ("r" * 250)), "name")
    assert not any(p.name.startswith((".", "r")) for p in tmp_path.iterdir())


@pytest.mark.parametrize("command", ["features", "predict"])
def test_out_that_is_an_existing_directory(tmp_path, surface_model, capsys, command):
    out = tmp_path / "table.tsv"
    out.mkdir()
    (out / "keep.txt").write_text("keep\n")
    message = _one_line_error(capsys, _stream_argv(command, tmp_path, surface_model, out), "directory")
    assert "resume" not in message
    assert _tree(out) == {"keep.txt": b"keep\n"}
    assert not any(p.name.startswith(".") for p in tmp_path.iterdir())


@pytest.mark.parametrize("command", ["features", "predict"])
def test_out_that_is_a_pipe_is_not_replaced(tmp_path, surface_model, capsys, command):
    out = tmp_path / "pipe.tsv"
    os.mkfifo(out)
    _one_line_error(capsys, _stream_argv(command, tmp_path, surface_model, out), "not a regular file")
    assert stat.S_ISFIFO(os.lstat(out).st_mode)
    assert not any(p.name.startswith(".") for p in tmp_path.iterdir())


def _unwritable_dir(tmp_path: Path) -> Path:
    """A directory nobody may create files in: chmod 0o555, or (root ignores modes) sysfs."""
    if os.geteuid() != 0:
        folder = tmp_path / "read-only"
        folder.mkdir()
        folder.chmod(0o555)
        return folder
    if not os.path.isdir("/sys/kernel"):
        pytest.skip("running as root without sysfs: no directory refuses writes")
    return Path("/sys/kernel")


@pytest.mark.parametrize("command", ["features", "predict"])
def test_read_only_output_directory_file(tmp_path, surface_model, capsys, command):
    out = _unwritable_dir(tmp_path) / "scores.tsv"
    try:
        _one_line_error(capsys, _stream_argv(command, tmp_path, surface_model, out), str(out.parent))
    finally:
        if out.parent.parent == tmp_path:
            out.parent.chmod(0o755)


@pytest.mark.parametrize("command", COMMANDS)
def test_read_only_output_directory(tmp_path, inputs, capsys, command):
    out = _unwritable_dir(tmp_path) / "qe-output-test"
    try:
        _one_line_error(capsys, _argv(command, inputs, out), str(out.parent))
    finally:
        if out.parent.parent == tmp_path:
            out.parent.chmod(0o755)


def _disk_full(*args, **kwargs):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def _disk_full_after(calls: int):
    """An ``os.fsync`` that works ``calls`` times, then finds the disk full."""
    real, count = os.fsync, [0]

    def fsync(fd: int) -> None:
        count[0] += 1
        if count[0] > calls:
            _disk_full()
        real(fd)

    return fsync


@pytest.mark.parametrize("command", ["features", "predict"])
def test_full_filesystem_while_streaming(tmp_path, surface_model, capsys, monkeypatch, command):
    argv = [*_stream_argv(command, tmp_path, surface_model, tmp_path / "out.tsv"), "--chunk-size", "1"]
    # header, first chunk, its state record: then the disk is full
    monkeypatch.setattr(os, "fsync", _disk_full_after(3))
    message = _one_line_error(capsys, argv, "No space left on device")
    assert "--resume" in message  # the chunks written so far are kept
    monkeypatch.undo()
    assert main([*argv, "--resume"]) == 0
    assert not any(p.name.startswith(".") for p in tmp_path.iterdir())


@pytest.mark.parametrize("command", COMMANDS)
def test_full_filesystem_while_writing_a_directory(tmp_path, inputs, capsys, monkeypatch, command):
    monkeypatch.setattr(os, "fsync", _disk_full)
    _one_line_error(capsys, _argv(command, inputs, tmp_path / "out"), "No space left on device")
    assert not (tmp_path / "out").exists()
    assert not any(p.name.startswith(".") for p in tmp_path.iterdir())


def _can_mount_tmpfs() -> bool:
    if os.geteuid() != 0 or not shutil.which("unshare"):
        return False
    mount = "mount -t tmpfs -o size=16k tmpfs /mnt"
    probe = subprocess.run(["unshare", "-m", "sh", "-c", mount], check=False, capture_output=True)
    return probe.returncode == 0


@pytest.mark.skipif(not _can_mount_tmpfs(), reason="needs root and unshare to mount a tiny tmpfs")
@pytest.mark.parametrize("command", ["features", "run"])
def test_a_really_full_filesystem(tmp_path, inputs, command):
    full = tmp_path / "full"
    full.mkdir()
    if command == "features":
        src = write_lines(tmp_path / "in.en", sentences(3000, EN, 1))
        mt = write_lines(tmp_path / "in.es", sentences(3000, ES, 2))
        argv = ["features", "--families", "surface", "--src", str(src), "--mt", str(mt)]
        argv += ["--out", str(full / "out.tsv"), "--quiet", "--chunk-size", "500"]
    else:
        argv = _argv("run", inputs, full / "run")
    qe = " ".join(f"'{a}'" for a in [sys.executable, "-m", "qe", *argv])
    script = f"mount -t tmpfs -o size=4k tmpfs '{full}' && cd '{REPO}' && {qe}"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(["unshare", "-m", "sh", "-c", script], env=env, capture_output=True, text=True)
    err = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(err) == 1 and "No space left on device" in err[0], done.stderr


# ---------------------------------------------------------------------- signals (9)


def _slow_config(tmp_path: Path) -> Path:
    """A toy config whose grid search keeps two workers busy for a while."""
    rng = np.random.default_rng(0)
    folder = tmp_path / "slow"
    folder.mkdir()
    lines = ['name = "slow"', "[data]", "label_range = [1, 5]"]
    for split, n in (("train", 1500), ("test", 50)):
        x = rng.normal(size=(n, 8))
        table = write_lines(folder / f"{split}.tsv", ["\t".join(f"{v:.4f}" for v in row) for row in x])
        labels = write_lines(folder / f"{split}.labels", [f"{3 + np.tanh(row[0]):.3f}" for row in x])
        src = write_lines(folder / f"{split}.src", ["a b"] * n)
        mt = write_lines(folder / f"{split}.mt", ["c d"] * n)
        lines += [f"[data.{split}]", f'src = "{src}"', f'mt = "{mt}"', f'labels = "{labels}"']
        lines.append(f'features = "{table}"')
    grid = ", ".join(str(c) for c in np.geomspace(0.01, 1000, 40).round(4))
    lines += ["[features]", "sets = []", "families = []", "[learner]", 'name = "svr"']
    lines += [f"grid = {{ C = [{grid}], gamma = [0.01, 0.1, 1.0] }}", "[cv]", "folds = 5"]
    config = folder / "slow.toml"
    config.write_text("\n".join(lines) + "\n")
    return config


def _wait(condition, what: str, proc: subprocess.Popen, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        if proc.poll() is not None:
            pytest.fail(f"the run ended (exit {proc.returncode}) before {what}")
        time.sleep(0.02)
    pytest.fail(f"timed out waiting for {what}")


def test_sigterm_during_run_is_one_line_and_leaves_no_staging(tmp_path):
    config = _slow_config(tmp_path)
    out = tmp_path / "runs" / "slow"
    out.parent.mkdir()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    argv = [sys.executable, "-m", "qe", "run", str(config), "--output-dir", str(out), "--quiet"]
    proc = subprocess.Popen(argv, env=env, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        _wait(lambda: any(out.parent.iterdir()), "the staging directory appeared", proc)
        time.sleep(0.5)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode in (130, 143)
    assert err.strip().splitlines() == ["qe: interrupted"]
    assert list(out.parent.iterdir()) == []


def test_sigterm_during_features_keeps_what_resume_needs(tmp_path):
    src = write_lines(tmp_path / "in.en", sentences(4000, EN, 1))
    mt = write_lines(tmp_path / "in.es", sentences(4000, ES, 2))
    out = tmp_path / "out.tsv"
    argv = [sys.executable, "-m", "qe", "features", "--families", "surface", "--src", str(src)]
    argv += ["--mt", str(mt), "--out", str(out), "--quiet", "--chunk-size", "400"]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(argv, env=env, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        _wait(lambda: state_path(out).exists(), "a chunk was written", proc)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode in (130, 143)
    assert err.strip().splitlines()[-1] == "qe: interrupted" and "--resume" in err
    assert subprocess.run([*argv, "--resume"], env=env, capture_output=True).returncode == 0
    assert len(out.read_text().splitlines()) == 4001


def _processes() -> dict[int, tuple[int, str, str]]:
    """pid -> (parent pid, state, command line) of every process, from /proc."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        found[int(entry.name)] = (int(fields[1]), fields[0], cmdline)
    return found


def _alive(pids: set[int]) -> set[int]:
    table = _processes()
    return {pid for pid in pids if pid in table and table[pid][1] != "Z"}


@pytest.mark.slow
@pytest.mark.parametrize("command", ["features", "predict", "run"])
def test_sigkill_leaves_no_worker_behind(tmp_path, surface_model, command):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    if command == "run":
        argv = ["run", str(_slow_config(tmp_path)), "--output-dir", str(tmp_path / "run"), "--jobs", "2"]
    else:
        src = write_lines(tmp_path / "in.en", sentences(10000, EN, 1))
        mt = write_lines(tmp_path / "in.es", sentences(10000, ES, 2))
        if command == "features":
            argv = ["features", "--families", "surface"]
        else:
            argv = ["predict", "--model", str(surface_model), "--no-language-check"]
        argv += ["--src", str(src), "--mt", str(mt), "--out", str(tmp_path / "out.tsv"), "--jobs", "2"]
        argv += ["--chunk-size", "500"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "qe", *argv, "--quiet"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    children: dict[int, str] = {}  # workers, and the resource trackers joblib starts beside them
    try:

        def two_workers() -> bool:
            table = _processes()
            own = table.get(proc.pid, (0, "", ""))[2]  # a forked worker has its parent's command line
            children.update({pid: cmd for pid, (ppid, _, cmd) in table.items() if ppid == proc.pid})
            workers = {pid for pid, cmd in children.items() if "popen_loky_posix" in cmd or cmd == own}
            return len(_alive(workers)) >= 2

        _wait(two_workers, "two workers started", proc)
        time.sleep(1.0)  # let them load their state and start working
        proc.kill()
        proc.wait()
        deadline = time.monotonic() + 5
        while _alive(set(children)) and time.monotonic() < deadline:
            time.sleep(0.1)
        left = {pid: children[pid] for pid in _alive(set(children))}
        assert left == {}, "processes outlived their killed parent"
    finally:
        for pid in _alive(set(children)):
            os.kill(pid, signal.SIGKILL)
        if proc.poll() is None:
            proc.kill()


# ---------------------------------------------------------------------- hidden files beside --out


def _pair(folder: Path) -> tuple[Path, Path]:
    """One sentence pair to score, as source and MT files in ``folder``."""
    return (
        write_lines(folder / "new.en", ["The house is small ."]),
        write_lines(folder / "new.es", ["La casa es pequeña ."]),
    )


def _predict_argv(model: Path, src: Path, mt: Path, out: Path) -> list[str]:
    argv = ["predict", "--model", str(model), "--src", str(src), "--mt", str(mt), "--out", str(out)]
    return [*argv, "--quiet", "--no-language-check"]


@pytest.mark.parametrize(
    ("hidden", "as_input", "needle"),
    [
        (".scores.tsv.partial", True, "choose another output name"),  # truncated, then deleted
        (".scores.tsv.lock", True, "choose another output name"),  # deleted at the end
        (".scores.tsv.state.json", True, "choose another output name"),
        (".scores.tsv.lock", False, "qe did not write"),  # a user's notes where qe keeps its lock
    ],
)
def test_a_file_where_qe_keeps_its_hidden_files_is_never_touched(
    tmp_path,
    surface_model,
    capsys,
    hidden,
    as_input,
    needle,
):
    src, mt = _pair(tmp_path)
    mine = write_lines(tmp_path / hidden, ["The house is small ."])
    before = _tree(tmp_path)
    argv = _predict_argv(surface_model, mine if as_input else src, mt, tmp_path / "scores.tsv")
    _one_line_error(capsys, argv, needle)
    assert _tree(tmp_path) == before


def test_a_link_in_place_of_the_partial_output_is_never_written_through(tmp_path, surface_model, capsys):
    """A symlink .scores.tsv.partial -> victim: the victim used to receive the predictions."""
    src, mt = _pair(tmp_path)
    victim = write_lines(tmp_path / "victim.txt", ["precious"])
    (tmp_path / ".scores.tsv.partial").symlink_to(victim)
    _one_line_error(
        capsys, _predict_argv(surface_model, src, mt, tmp_path / "scores.tsv"), "not a file qe wrote"
    )
    assert victim.read_text() == "precious\n" and not (tmp_path / "scores.tsv").exists()


def test_a_parts_folder_holding_a_users_file_is_kept(tmp_path, capsys):
    pytest.importorskip("pyarrow")
    src, mt = _pair(tmp_path)
    parts = tmp_path / ".f.parquet.parts"
    parts.mkdir()
    write_lines(parts / "mine.txt", ["keep me"])
    before = _tree(tmp_path)
    argv = ["features", "--src", str(src), "--mt", str(mt), "--families", "surface", "--quiet"]
    _one_line_error(capsys, [*argv, "--out", str(tmp_path / "f.parquet")], "mine.txt", "qe did not write")
    assert _tree(tmp_path) == before


def test_only_temporaries_named_as_qe_names_them_are_cleaned_up(tmp_path, surface_model, capsys):
    src, mt = _pair(tmp_path)
    mine = write_lines(tmp_path / ".scores.tsv.my-backup.tmp", ["keep me"])
    stale = write_lines(tmp_path / ".scores.tsv.ab12cd_9.tmp", ["left by an interrupted write"])
    assert main(_predict_argv(surface_model, src, mt, tmp_path / "scores.tsv")) == 0
    assert mine.read_text() == "keep me\n" and not stale.exists()


def test_features_never_writes_into_the_bundle_it_reads(tmp_path, capsys):
    """--out inside --resources replaced a bundle member (the bundle then failed its hash check)."""
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    member = write_lines(bundle / "ngrams.src.tsv", ["model bytes"])
    src, mt = _pair(tmp_path)
    argv = ["features", "--src", str(src), "--mt", str(mt), "--families", "surface"]
    argv += ["--resources", str(bundle)]
    _one_line_error(capsys, [*argv, "--out", str(member), "--quiet"], "inside the input folder")
    assert member.read_text() == "model bytes\n"


def test_overwrite_keeps_a_users_figure_and_a_users_temporary(tmp_path, inputs, capsys):
    out = tmp_path / "run"
    assert main(_argv("run", inputs, out)) == 0
    (out / "report_files").mkdir()
    write_lines(out / "report_files" / "my_plot.png", ["mine"])
    before = _tree(out)
    _one_line_error(capsys, _argv("run", inputs, out, "--overwrite"), "report_files/my_plot.png")
    assert _tree(out) == before
    (out / "report_files" / "my_plot.png").unlink()
    write_lines(out / ".predictions.tsv.my-backup.tmp", ["mine"])
    _one_line_error(capsys, _argv("run", inputs, out, "--overwrite"), ".predictions.tsv.my-backup.tmp")


def test_init_never_writes_its_config_over_an_input(tmp_path, capsys):
    files = {}
    for name, lines in (("train.en", SRC * 4), ("train.es", TGT * 4), ("test.en", SRC), ("test.es", TGT)):
        files[name] = write_lines(tmp_path / name, lines)
    labels = write_lines(tmp_path / "labels.toml", [str(0.1 * (i % 9)) for i in range(len(SRC) * 4)])
    before = _tree(tmp_path)
    argv = ["init", "--src", str(files["train.en"]), "--mt", str(files["train.es"]), "--labels", str(labels)]
    argv += ["--test-src", str(files["test.en"]), "--test-mt", str(files["test.es"])]
    argv += ["--src-lang", "en", "--tgt-lang", "es", "--out", str(labels), "--force"]
    _one_line_error(capsys, argv, "is an input")
    assert _tree(tmp_path) == before


def test_outputs_get_the_usual_permissions(tmp_path):
    """Files written atomically were private (0600, from mkstemp) while streamed TSVs were 0644."""
    from qe.infra.io import write_text_atomic

    old = os.umask(0o027)
    try:
        write_text_atomic(tmp_path / "a.txt", "x\n")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "a.txt").stat().st_mode) == 0o640


def test_staging_left_by_a_killed_run_is_removed_by_the_next_one(tmp_path, inputs):
    """SIGKILL leaves the hidden staging folder (tens of MB for a bundle); a later run cleans it up,
    but never the staging folder of a run still alive, nor a folder that is not a staging of qe's."""
    import socket

    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    out = tmp_path / "run"

    def staging(name: str, pid: int | None) -> Path:
        folder = tmp_path / name
        folder.mkdir()
        marker = {"format": "qe-output/1", "kind": "run", "qe_version": "0"}
        if pid is not None:
            marker["staging_of"] = {"pid": pid, "host": socket.gethostname()}
        (folder / MARKER).write_text(json.dumps(marker))
        (folder / "model.skops").write_bytes(b"x" * 1000)
        return folder

    abandoned = staging(".run.abcd1234", int(dead.stdout))
    alive = staging(".run.efgh5678", os.getpid())
    unmarked = staging(".run.ijkl9012", None)
    assert main(_argv("run", inputs, out)) == 0
    assert not abandoned.exists() and alive.exists() and unmarked.exists()
