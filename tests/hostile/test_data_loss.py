"""Data loss: a command replacing or deleting files of the user's that qe did not write (main ba3d5b8).

``qe report`` wrote its figures through a ``report_files`` link into a folder of the user's (and
deleted the figures the new report lacked there); ``qe init --force`` replaced the user's own
``NAME-resources.toml`` beside ``--out``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from qe.cli import main
from tests.helpers import write_lines

FIGURES = ("scatter", "residual_bands", "selection_path", "importances", "ablation")
METRICS = {"test": {"MAE": 0.9, "RMSE": 1.0, "DeltaAvg": 0.0, "Spearman": 0.0}}


def _run_dir(folder: Path) -> Path:
    """A run directory as qe run leaves it (config, predictions, metrics, signature)."""
    folder.mkdir()
    (folder / "config.toml").write_text('name = "x"\n')
    (folder / "predictions.tsv").write_text("id\tscore\n0\t3.000000\n")
    (folder / "metrics.json").write_text(json.dumps(METRICS))
    (folder / "signature.txt").write_text("a run of qe's\n")
    return folder


def _users_folder(folder: Path) -> dict[Path, str]:
    """A folder of the user's holding files named like the report's figures."""
    folder.mkdir()
    files = {folder / f"{name}.png": f"the user's own {name} figure" for name in FIGURES}
    for path, text in files.items():
        path.write_text(text)
    return files


def _link_report_files(run: Path, target: Path) -> None:
    (run / "report_files").symlink_to(target, target_is_directory=True)


def _link_report_md(run: Path, target: Path) -> None:
    (run / "report.md").symlink_to(target / "scatter.png")


@pytest.mark.parametrize("link", [_link_report_files, _link_report_md], ids=["report_files", "report.md"])
@pytest.mark.parametrize("out", [False, True], ids=["into-the-run", "with-out"])
def test_qe_report_never_writes_through_a_link_it_did_not_make(tmp_path, monkeypatch, capsys, link, out):
    pytest.importorskip("matplotlib")
    monkeypatch.setenv("QE_DATA_DIR", str(tmp_path))
    users = _users_folder(tmp_path / "mine")
    run = _run_dir(tmp_path / "run")
    target = run
    if out:  # --out naming another run directory of qe's, which holds the link
        target = tmp_path / "other-run"
        shutil.copytree(run, target)
    link(target, tmp_path / "mine")
    args = ["report", str(run)] + (["--out", str(target)] if out else [])
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "symbolic link" in err and "Traceback" not in err, err
    assert {path: path.read_text() for path in users} == users  # nothing replaced, nothing deleted
    assert not (target / "report.html").exists()  # nothing written at all
    assert (target / ("report_files" if link is _link_report_files else "report.md")).is_symlink()


SRC = [f"the {w} sat on the mat number {i} ." for i, w in enumerate(["cat", "dog", "bird", "cow"] * 5)]
MT = [f"el {w} se sentó en la alfombra {i} ." for i, w in enumerate(["gato", "perro", "pájaro", "vaca"] * 5)]
HTER = [f"{(i * 7 % 10) / 10:.1f}" for i in range(20)]


def _init_args(folder: Path) -> list[str]:
    files = {}
    for role, values in (("src", SRC), ("mt", MT), ("labels", HTER), ("pe", MT)):
        files[f"train.{role}"] = write_lines(folder / f"train.{role}", values[:14])
        files[f"test.{role}"] = write_lines(folder / f"test.{role}", values[14:])
    return [
        "init",
        *("--src", str(files["train.src"]), "--mt", str(files["train.mt"])),
        *("--labels", str(files["train.labels"]), "--post-edits", str(files["train.pe"])),
        *("--test-src", str(files["test.src"]), "--test-mt", str(files["test.mt"])),
        *("--src-lang", "en", "--tgt-lang", "es", "--out", str(folder / "mine.toml"), "--force"),
    ]


def test_qe_init_force_never_replaces_a_config_of_the_users(tmp_path, capsys):
    """--force replaces only what qe init wrote: neither --out nor the resources config beside it
    when they are the user's own files, and nothing is written when either is refused."""
    args = _init_args(tmp_path)
    config, resources = tmp_path / "mine.toml", tmp_path / "mine-resources.toml"
    config.write_text("# my own experiment\n")
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(config) in err and "not written by qe init" in err, err
    assert config.read_text() == "# my own experiment\n"
    assert not resources.exists()
    ours = "# Written by `qe init`; an earlier config\n"
    config.write_text(ours)  # one qe init wrote: --force may replace it, but not the user's bundle config
    resources.write_text('# my own bundle config, hand-tuned\nname = "mine"\n')
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(resources) in err and "not written by qe init" in err, err
    assert resources.read_text() == '# my own bundle config, hand-tuned\nname = "mine"\n'
    assert config.read_text() == ours  # refused before anything was written
    assert sorted(p.name for p in tmp_path.glob(".mine*")) == []  # no draft left behind

    resources.unlink()  # once it is gone, qe init writes both; --force then replaces its own
    assert main(args) == 0
    assert "[edits]" in resources.read_text() and "[learner]" in config.read_text()
    capsys.readouterr()
    resources.write_text(resources.read_text().replace('"mine"', '"older"'))
    assert main(args) == 0
    assert '"older"' not in resources.read_text()


@pytest.mark.parametrize("light", [False, True])
def test_qe_init_never_writes_its_bundle_config_over_an_input(tmp_path, capsys, light):
    """The bundle config qe init writes beside --out (``NAME-resources.toml``) is refused when it is
    one of the inputs, in the rich path and in --light alike; the input keeps its lines."""
    args = _init_args(tmp_path)
    post_edits = tmp_path / "mine-resources.toml"
    (tmp_path / "train.pe").rename(post_edits)
    args[args.index(str(tmp_path / "train.pe"))] = str(post_edits)
    before = post_edits.read_bytes()
    assert main([*args, *(["--light"] if light else [])]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(post_edits) in err, err
    assert post_edits.read_bytes() == before
    assert not (tmp_path / "mine.toml").exists()
