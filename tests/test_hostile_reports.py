"""Hostile run directories: ``qe report`` reads only files of the run and of the data directory, never
embeds another file's content, and fails with one line on a directory it cannot write."""

from __future__ import annotations

import contextlib
import json
import stat
import subprocess
from pathlib import Path

import pytest

pytest.importorskip("matplotlib")

from qe.cli import main
from qe.data import DATASETS
from tests.helpers import write_lines

SECRET = "SECRET-TOKEN-5678"
METRICS = {"test": {"MAE": 0.9, "RMSE": 1.0, "DeltaAvg": 0.0, "Spearman": 0.0}}


def _run_dir(folder: Path, config: str) -> Path:
    """A hand-made run directory: its config, one prediction and metrics."""
    folder.mkdir()
    (folder / "config.toml").write_text(config)
    (folder / "predictions.tsv").write_text("id\tscore\n0\t3.000000\n")
    (folder / "metrics.json").write_text(json.dumps(METRICS))
    (folder / "signature.txt").write_text("a run of qe's\n")
    return folder


@pytest.fixture()
def data_root(tmp_path, monkeypatch) -> Path:
    """The data directory the user trusts ($QE_DATA_DIR); the secret lives elsewhere."""
    root = tmp_path / "data"
    root.mkdir()
    monkeypatch.setenv("QE_DATA_DIR", str(root))
    return root


def _outputs(run: Path, err: str) -> str:
    return (run / "report.md").read_text() + (run / "report.html").read_text() + err


def test_an_edited_config_cannot_make_the_report_read_other_files(tmp_path, data_root, capsys):
    """config.toml names a secret file as the test split: it used to be read and quoted in report.md."""
    secret = write_lines(tmp_path / "secret.txt", [SECRET])
    config = f'name = "x"\n[data.test]\nsrc = "{secret}"\nmt = "{secret}"\nlabels = "{secret}"\n'
    run = _run_dir(tmp_path / "run", config)
    assert main(["report", str(run)]) == 0
    err = capsys.readouterr().err
    assert SECRET not in _outputs(run, err)
    assert "outside the run directory and the data directory" in err
    assert "Gold labels could not be read" in (run / "report.md").read_text()


def test_a_config_data_dir_outside_the_data_directory_is_not_read(tmp_path, data_root, capsys):
    """A registered dataset looked up in a folder the run names (here holding a secret as labels)."""
    elsewhere = tmp_path / "elsewhere"
    for role, entry in DATASETS["wmt12-en-es"].splits["test"].items():
        target = elsewhere / DATASETS["wmt12-en-es"].folder / entry.path
        target.parent.mkdir(parents=True, exist_ok=True)
        write_lines(target, [SECRET if role == "labels" else "a sentence ."])
    config = f'name = "x"\n[data]\ndataset = "wmt12-en-es"\ntest_split = "test"\ndata_dir = "{elsewhere}"\n'
    run = _run_dir(tmp_path / "run", config)
    assert main(["report", str(run)]) == 0
    err = capsys.readouterr().err
    assert SECRET not in _outputs(run, err) and "data_dir" in err


@pytest.mark.parametrize("name", ["model.txt", "config.toml", "predictions.tsv"])
def test_run_files_linked_out_of_the_run_directory_are_refused(tmp_path, data_root, capsys, name):
    secret = write_lines(tmp_path / "secret.txt", [SECRET])
    run = _run_dir(tmp_path / "run", 'name = "x"\n')
    (run / name).unlink(missing_ok=True)
    (run / name).symlink_to(secret)
    assert main(["report", str(run)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and name in err and "outside" in err and SECRET not in err
    assert not (run / "report.md").exists()


def test_a_bad_line_in_a_data_file_is_named_not_quoted_in_the_report(tmp_path, data_root, capsys):
    """Inside the data directory too: the report names the file and line, never the line's text."""
    src = write_lines(data_root / "src.txt", ["a sentence ."])
    labels = write_lines(data_root / "labels.txt", [SECRET])
    config = f'name = "x"\n[data.test]\nsrc = "{src}"\nmt = "{src}"\nlabels = "{labels}"\n'
    run = _run_dir(tmp_path / "run", config)
    assert main(["report", str(run)]) == 0
    capsys.readouterr()
    text = (run / "report.md").read_text() + (run / "report.html").read_text()
    assert SECRET not in text and "labels.txt:1" in text


@contextlib.contextmanager
def _read_only(folder: Path):
    """Make ``folder`` unwritable: a read-only mode, or (for root, whom modes do not stop) the
    immutable attribute; skip when neither works here."""
    attempts = [
        (lambda: folder.chmod(stat.S_IRUSR | stat.S_IXUSR), lambda: folder.chmod(stat.S_IRWXU)),
        (
            lambda: subprocess.run(["chattr", "+i", str(folder)], capture_output=True, check=False),
            lambda: subprocess.run(["chattr", "-i", str(folder)], capture_output=True, check=False),
        ),
    ]
    for apply, undo in attempts:
        apply()
        try:
            (folder / ".probe").touch()
        except OSError:
            try:
                yield
            finally:
                undo()
            return
        (folder / ".probe").unlink()
        undo()
    pytest.skip("cannot make a folder read-only here")


def test_a_read_only_run_directory_gives_one_line_or_a_report_elsewhere(tmp_path, data_root, capsys):
    run = _run_dir(tmp_path / "run", 'name = "x"\n')
    with _read_only(run):
        assert main(["report", str(run)]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "--out" in err and str(run) in err
        out = tmp_path / "elsewhere"
        assert main(["report", str(run), "--out", str(out)]) == 0
        assert (out / "report.md").is_file() and (out / "report.html").is_file()
        assert not (run / "report.md").exists()


def test_an_unwritable_output_gives_one_line(tmp_path, data_root, capsys):
    """A report written where a file stands (as root, read-only folders do not stop writes)."""
    run = _run_dir(tmp_path / "run", 'name = "x"\n')
    blocker = write_lines(tmp_path / "a-file", ["not a folder"])
    assert main(["report", str(run), "--out", str(blocker)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("qe: error: ") and "is not a directory" in err
    assert blocker.read_text() == "not a folder\n"


def test_report_out_never_replaces_a_users_files(tmp_path, data_root, capsys):
    """--out into a folder of the user's: report.md was replaced and report_files/*.png deleted."""
    run = _run_dir(tmp_path / "run", 'name = "x"\n')
    mine = tmp_path / "mine"
    (mine / "report_files").mkdir(parents=True)
    write_lines(mine / "report.md", ["my notes"])
    write_lines(mine / "report_files" / "scatter.png", ["my figure"])
    assert main(["report", str(run), "--out", str(mine)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "qe did not write" in err
    assert (mine / "report.md").read_text() == "my notes\n"
    assert (mine / "report_files" / "scatter.png").read_text() == "my figure\n"


def test_report_out_into_a_new_folder_can_be_written_again(tmp_path, data_root, capsys):
    run = _run_dir(tmp_path / "run", 'name = "x"\n')
    out = tmp_path / "reports"
    assert main(["report", str(run), "--out", str(out)]) == 0
    assert json.loads((out / ".qe-output").read_text())["kind"] == "report"
    assert main(["report", str(run), "--out", str(out)]) == 0  # its own report: replaced
    other = _run_dir(tmp_path / "other", 'name = "y"\n')
    assert main(["report", str(run), "--out", str(other)]) == 0  # a run's report files are qe's too
    assert (other / "report.md").is_file() and (other / "config.toml").read_text() == 'name = "y"\n'


def test_report_never_writes_into_a_folder_qe_did_not_write(tmp_path, data_root, capsys):
    """A folder holding a metrics.json and the user's report.md: report.md was replaced, a figure deleted."""
    folder = tmp_path / "mine"
    (folder / "report_files").mkdir(parents=True)
    (folder / "metrics.json").write_text(json.dumps(METRICS))
    write_lines(folder / "report.md", ["my notes"])
    write_lines(folder / "report_files" / "scatter.png", ["my figure"])
    assert main(["report", str(folder)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "pass --out DIR" in err
    assert (folder / "report.md").read_text() == "my notes\n"
    assert (folder / "report_files" / "scatter.png").read_text() == "my figure\n"


@pytest.mark.parametrize(
    "metrics",
    [
        '{"test": ' + "[" * 100000 + "]" * 100000 + "}",  # RecursionError before
        '{"test": {"MAE": ' + "9" * 5000 + "}}",  # ValueError (integer string conversion limit)
    ],
)
def test_a_metrics_file_json_cannot_read_is_one_line(tmp_path, data_root, capsys, metrics):
    run = _run_dir(tmp_path / "run", 'name = "x"\n')
    (run / "metrics.json").write_text(metrics)
    for argv in (["report", str(run)], ["compare", str(run), str(run)]):
        capsys.readouterr()
        assert main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "corrupt metrics.json" in err


def test_a_metrics_file_with_a_byte_order_mark_is_read(tmp_path, data_root):
    run = _run_dir(tmp_path / "run", 'name = "x"\n')
    (run / "metrics.json").write_bytes(b"\xef\xbb\xbf" + json.dumps(METRICS).encode())
    assert main(["report", str(run)]) == 0


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("metrics.json", json.dumps({**METRICS, "seconds": "slow"})),
        ("metrics.json", json.dumps({**METRICS, "cv": {**METRICS["test"], "grid_best_params": "C"}})),
        ("config.toml", "[data]\ndataset = 7\n"),
        ("config.toml", 'data = "x"\n'),
    ],
)
def test_edited_run_files_of_the_wrong_type_are_one_line(tmp_path, data_root, capsys, name, text):
    run = _run_dir(tmp_path / "run", 'name = "x"\n')
    (run / name).write_text(text)
    code = main(["report", str(run)])  # an AttributeError / ValueError traceback before
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("qe: error: ")]
    assert (code, len(errors)) in ((0, 0), (2, 1))


def test_a_bad_prediction_is_named_by_line_never_quoted(tmp_path, data_root, capsys):
    run = _run_dir(tmp_path / "run", 'name = "x"\n')
    (run / "predictions.tsv").write_text(f"id\tscore\n0\t{SECRET}\n")
    assert main(["report", str(run)]) == 2
    err = capsys.readouterr().err.strip()
    assert "predictions.tsv:2" in err and SECRET not in err


@pytest.mark.parametrize(("value", "shown"), [("NaN", "nan"), ("Infinity", "inf"), ("true", "true")])
def test_metrics_that_are_not_finite_numbers_are_refused(tmp_path, data_root, capsys, value, shown):
    """qe compare printed inf for them."""
    run = _run_dir(tmp_path / "run", 'name = "x"\n')
    (run / "metrics.json").write_text(json.dumps(METRICS).replace("0.9", value, 1))
    assert main(["compare", str(run), str(run)]) == 2
    expected = f"qe: error: {run / 'metrics.json'}: test.MAE = {shown}: expected a number"
    assert capsys.readouterr().err.strip() == expected


@pytest.mark.parametrize(
    ("name", "content", "problem"),
    [
        ("metrics.json", {"train": {}}, "test = null: expected a table of test metrics (or cv = a table"),
        ("metrics.json", {"cv": [1]}, "cv = [1]: expected a table"),
        ("ablation.json", {"systems": {"base": 3}}, "systems.base = 3: expected a table"),
    ],
)
def test_a_run_file_of_the_wrong_shape_is_refused_in_the_one_wording(
    tmp_path, capsys, name, content, problem
):
    """metrics.json and ablation.json are checked by the schema's rules: ``file: key = value: expected``."""
    run = tmp_path / "run"
    run.mkdir()
    (run / name).write_text(json.dumps(content))
    assert main(["report", str(run)]) == 2
    assert capsys.readouterr().err.strip().startswith(f"qe: error: {run / name}: {problem}")
