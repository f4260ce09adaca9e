"""The `qe` command end to end: runs, evaluation, and one-line errors with exit code 2 on bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from qe.cli import main
from tests.helpers import write_lines
from tests.helpers.toy import toy_config

REPO = Path(__file__).resolve().parents[1]


def test_run_writes_the_contracted_files(tmp_path, capsys):
    config = toy_config(tmp_path)
    out = tmp_path / "run"
    assert main(["run", str(config), "--output-dir", str(out), "--quiet"]) == 0
    assert {p.name for p in out.iterdir()} >= {
        "config.toml",
        "signature.txt",
        "metrics.json",
        "predictions.tsv",
    }
    metrics = json.loads((out / "metrics.json").read_text())
    assert {"MAE", "RMSE", "DeltaAvg", "Spearman", "Pearson"} <= set(metrics["test"])
    assert {"MAE", "DeltaAvg"} <= set(metrics["cv"])
    rows = (out / "predictions.tsv").read_text().splitlines()
    assert rows[0] == "id\tscore" and len(rows) == 31
    scores = [float(r.split("\t")[1]) for r in rows[1:]]
    assert min(scores) >= 1 and max(scores) <= 5
    assert "learner:SVR(C=" in (out / "signature.txt").read_text()
    # same config and seed -> same numbers
    again = tmp_path / "again"
    assert main(["run", str(config), "--output-dir", str(again), "--quiet"]) == 0
    assert (again / "predictions.tsv").read_text() == (out / "predictions.tsv").read_text()
    # an existing run is refused unless --overwrite
    capsys.readouterr()
    assert main(["run", str(config), "--output-dir", str(out), "--quiet"]) == 2
    assert "already holds a run" in capsys.readouterr().err
    assert main(["run", str(config), "--output-dir", str(out), "--quiet", "--overwrite"]) == 0
    # evaluate the predictions against the test labels
    capsys.readouterr()
    assert (
        main(
            [
                "evaluate",
                "--gold",
                str(tmp_path / "test/labels.txt"),
                "--pred",
                str(out / "predictions.tsv"),
                "--json",
            ]
        )
        == 0
    )
    evaluated = json.loads(capsys.readouterr().out)
    assert evaluated["MAE"] == pytest.approx(metrics["test"]["MAE"])


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda t: t.replace("[cv]", "[cv]\nfoldz = 3"), "unknown key 'cv.foldz'"),
        (lambda t: t.replace("label_range", "colour = 1\nlabel_range"), "unknown key 'data.colour'"),
        (
            lambda t: t.replace("src.txt", "nowhere.txt", 1),
            "nowhere.txt': expected an existing file",  # data.train.src = '/tmp/...nowhere.txt'
        ),
        (lambda t: t.replace('name = "svr"', 'name = "svm"'), "unknown learner 'svm'"),
        (lambda t: t + "[[[", "invalid TOML"),
        (lambda t: t + '[[report.against]]\nconfig = "toy.toml"\n', "needs name"),
        (
            lambda t: t + '[[report.against]]\nname = "x"\nconfig = "toy.toml"\nfeatures = {}\n',
            "report.against[0].config = 'toy.toml': expected exactly one of config = FILE or features = ",
        ),
        (
            lambda t: t + '[[report.against]]\nname = "x"\nconfig = "gone.toml"\n',
            "report.against[0].config = 'gone.toml': expected an existing config file",
        ),
        (
            lambda t: t + '[[report.against]]\nname = "x"\nfeatures = { famlies = [] }\n',
            "unknown key 'report.against[0].features.famlies'",
        ),
    ],
)
def test_bad_configs_exit_2_with_one_line(tmp_path, capsys, edit, message):
    config = toy_config(tmp_path)
    config.write_text(edit(config.read_text()))
    assert main(["run", str(config), "--output-dir", str(tmp_path / "out"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_run_tests_itself_against_other_systems_by_paired_bootstrap(tmp_path, capsys):
    config = toy_config(tmp_path)
    constant = tmp_path / "constant.toml"
    constant.write_text(
        config.read_text().replace('name = "svr"\ngrid = { C = [1.0, 10.0] }', 'name = "mean"')
    )
    config.write_text(
        config.read_text()
        + '[[report.against]]\nname = "constant"\nconfig = "constant.toml"\n'
        + '[[report.against]]\nname = "itself"\nfeatures = {}\n'
    )
    out = tmp_path / "run"
    assert main(["run", str(config), "--output-dir", str(out), "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert "| **constant (ours, test)** |" in printed and "Paired bootstrap of toy against each" in printed
    against = json.loads((out / "metrics.json").read_text())["against"]
    # The constant system predicts the training mean for every test sentence.
    train_mean = np.mean([float(v) for v in (tmp_path / "train/labels.txt").read_text().split()])
    test_labels = np.array([float(v) for v in (tmp_path / "test/labels.txt").read_text().split()])
    assert against["constant"]["bootstrap"]["MAE"]["b"] == pytest.approx(
        np.mean(np.abs(test_labels - train_mean))
    )
    # The toy label is a clean function of length: the SVR beats the constant in every resample.
    assert against["constant"]["bootstrap"]["MAE"]["p_value"] == 0.0
    # Against an identical system (same features, learner and seed) no resample can show a win.
    assert all(
        test["a_wins"] == 0.0 and test["p_value"] == 1.0 for test in against["itself"]["bootstrap"].values()
    )


def test_bad_labels_through_the_cli_leave_no_output(tmp_path, capsys):
    config = toy_config(tmp_path)
    labels = tmp_path / "train/labels.txt"
    lines = labels.read_text().splitlines()
    lines[4] = "NaN"
    labels.write_text("\n".join(lines) + "\n")
    assert main(["run", str(config), "--output-dir", str(tmp_path / "out"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith("labels.txt:5: label 'NaN' is not a finite number")
    assert not (tmp_path / "out").exists() and not list(tmp_path.glob(".out.*"))


def test_evaluate_wmt12_submission_format_and_mismatch(tmp_path, capsys):
    gold = write_lines(tmp_path / "gold", ["5", "1", "3", "2"])
    # segment ids out of order; ranks only (scores 0): segment 1 best, then 3, 4, 2
    sub = write_lines(tmp_path / "sub", ["T_A\t3\t0\t2", "T_A\t1\t0\t1", "T_A\t2\t0\t4", "T_A\t4\t0\t3"])
    assert main(["evaluate", "--gold", str(gold), "--pred", str(sub), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["DeltaAvg"] == pytest.approx((5 + 3) / 2 - 2.75)
    short = write_lines(tmp_path / "short", ["1", "2"])
    assert main(["evaluate", "--gold", str(gold), "--pred", str(short)]) == 2
    assert "has 2 predictions but" in capsys.readouterr().err


def test_console_script_help_and_exit_codes():
    result = subprocess.run(
        [sys.executable, "-m", "qe.cli", "--help"], capture_output=True, text=True, cwd=REPO
    )
    assert result.returncode == 0 and "run" in result.stdout and "evaluate" in result.stdout
    result = subprocess.run(
        [sys.executable, "-m", "qe.cli", "evaluate", "--gold", "/nonexistent", "--pred", "x"],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert result.returncode == 2 and result.stderr.strip() == "qe: error: /nonexistent: file not found"


def _fake_run(folder: Path, mae: float) -> Path:
    folder.mkdir(parents=True)
    test = {"MAE": mae, "RMSE": 0.8, "DeltaAvg": 0.5, "Spearman": 0.5}
    (folder / "metrics.json").write_text(json.dumps({"test": test, "cv": test}))
    (folder / "config.toml").write_text('[data]\ndataset = "wmt12-en-es"\n')  # the WMT12 columns
    return folder


def test_compare_keeps_runs_that_share_a_folder_name(tmp_path, capsys):
    a = _fake_run(tmp_path / "runs" / "a" / "x", 0.111)
    b = _fake_run(tmp_path / "runs" / "b" / "x", 0.222)
    c = _fake_run(tmp_path / "runs" / "c", 0.333)
    assert main(["compare", str(a), str(b), str(c), str(a)]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| **")]
    assert rows == [
        "| **a/x** | 0.111 | 0.800 | 0.500 | 0.500 | n/a | n/a |",
        "| **b/x** | 0.222 | 0.800 | 0.500 | 0.500 | n/a | n/a |",
        "| **c** | 0.333 | 0.800 | 0.500 | 0.500 | n/a | n/a |",
        "| **a/x #2** | 0.111 | 0.800 | 0.500 | 0.500 | n/a | n/a |",
    ]


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ('{"test": 5}', "test = 5: expected a table"),
        (
            '{"test": {"MAE": "low", "RMSE": 1, "DeltaAvg": 1, "Spearman": 1}}',
            "test.MAE = 'low': expected a number",
        ),
        ("[1, 2]", "corrupt metrics.json: expected a JSON object"),
    ],
)
def test_compare_names_a_malformed_metrics_file(tmp_path, capsys, content, problem):
    run = _fake_run(tmp_path / "run", 0.5)
    (run / "metrics.json").write_text(content)
    assert main(["compare", str(run)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"qe: error: {run / 'metrics.json'}: {problem}"


@pytest.mark.parametrize(
    ("families", "message"),
    [
        ("", "--families names no family"),
        (",,", "--families names no family"),
        ("surface,surface", "--families lists 'surface' twice"),
    ],
)
def test_features_families_that_name_nothing_or_one_twice_are_one_line(tmp_path, capsys, families, message):
    """An empty list ended in numpy's 'need at least one array' traceback; a family listed twice wrote
    every column name twice."""
    src = write_lines(tmp_path / "s.txt", ["The house is small ."])
    mt = write_lines(tmp_path / "m.txt", ["La casa es pequeña ."])
    argv = ["features", "--src", str(src), "--mt", str(mt), "--families", families]
    assert main([*argv, "--out", str(tmp_path / "f.tsv")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"qe: error: {message}" or err.startswith(f"qe: error: {message}")
    assert not (tmp_path / "f.tsv").exists()
