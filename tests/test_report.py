"""`qe report`: tables that match the run's files, valid PNG figures, escaped HTML, clear errors."""

from __future__ import annotations

import json
import math
import shutil
import struct
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from qe.cli import main
from qe.report import label_bands, residuals_by_band
from tests.helpers import write_lines

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
NAME = "toy <b>&co"  # needs escaping in HTML


def _toy_split(folder: Path, n: int, seed: int) -> dict[str, Path]:
    """Labels fall with the source length; the third feature is pure noise."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 14, n)
    src = [" ".join(["word"] * k) for k in lengths]
    mt = [" ".join(["palabra"] * (k + int(rng.integers(0, 3)))) for k in lengths]
    labels = [f"{np.clip(5 - 0.3 * k + rng.normal(0, 0.2), 1, 5):.2f}" for k in lengths]
    noise = rng.normal(0, 1, n)
    rows = ["len\tmt_len\tnoise"] + [
        f"{k}\t{len(m.split())}\t{z:.4f}" for k, m, z in zip(lengths, mt, noise, strict=True)
    ]
    folder.mkdir()
    return {
        "src": write_lines(folder / "src.txt", src),
        "mt": write_lines(folder / "mt.txt", mt),
        "labels": write_lines(folder / "labels.txt", labels),
        "features": write_lines(folder / "features.tsv", rows),
    }


def _config(root: Path, key: str, learner: str, selection: str = "") -> Path:
    lines = [f'name = "{NAME}"', 'description = "a toy run"', "[data]", "label_range = [1, 5]"]
    for split, n, seed in (("train", 90, 0), ("test", 40, 1)):
        if not (root / split).exists():
            _toy_split(root / split, n, seed)
        lines.append(f"[data.{split}]")
        lines += [f'{role} = "{root / split / f}"' for role, f in _FILES.items()]
    lines += ["[features]", "sets = []", "families = []", "[learner]", learner, "[cv]", "folds = 3"]
    if selection:
        lines += ["[selection]", f'name = "{selection}"']
    path = root / f"{key}.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


_FILES = {"src": "src.txt", "mt": "mt.txt", "labels": "labels.txt", "features": "features.tsv"}


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """Three small runs: SVR with CFS selection, M5P, random forest (all on the same toy data)."""
    root = tmp_path_factory.mktemp("report")
    learners = {
        "svr": ('name = "svr"\ngrid = { C = [1.0, 10.0] }', "cfs"),
        "m5p": ('name = "m5p"', ""),
        "rf": ('name = "random_forest"\nparams = { n_estimators = 50 }', ""),
    }
    out = {}
    for key, (learner, selection) in learners.items():
        config = _config(root, key, learner, selection)
        out[key] = root / f"run-{key}"
        assert main(["run", str(config), "--output-dir", str(out[key]), "--quiet"]) == 0
    out["root"] = root
    return out


def _md_table(text: str, first_header: str) -> list[list[str]]:
    """The rows (cells) of the Markdown table whose first header cell is ``first_header``."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"| {first_header} |"))
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split(" | ")])
    return rows


def _check_png(path: Path) -> None:
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC and data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    assert width >= 300 and height >= 200 and len(data) > 5000
    from PIL import Image

    with Image.open(path) as image:
        colours = image.convert("RGB").getcolors(maxcolors=1 << 16)
    assert colours is None or len(colours) > 20  # not a blank canvas


def test_label_bands_and_residuals_by_hand():
    assert label_bands(1, 5) == [(1.0, 2.0), (2.0, 3.0), (3.0, 4.0), (4.0, 5.0)]
    gold = np.array([1.0, 1.5, 2.0, 4.9, 5.0])
    pred = np.array([2.0, 1.5, 1.0, 5.0, 4.0])
    rows = residuals_by_band(gold, pred, label_bands(1, 5))
    assert [r["band"] for r in rows] == ["[1, 2)", "[2, 3)", "[3, 4)", "[4, 5]"]
    assert [r["n"] for r in rows] == [2, 1, 0, 2]
    assert rows[0]["mean_residual"] == pytest.approx(0.5) and rows[0]["MAE"] == pytest.approx(0.5)
    assert rows[1]["mean_residual"] == pytest.approx(-1.0) and rows[1]["MAE"] == pytest.approx(1.0)
    assert math.isnan(rows[2]["mean_residual"]) and math.isnan(rows[2]["MAE"])
    assert rows[3]["mean_residual"] == pytest.approx(-0.45) and rows[3]["MAE"] == pytest.approx(0.55)


def test_report_tables_match_the_run_files(runs, capsys):
    run = runs["svr"]
    assert main(["report", str(run), "--data-dir", str(runs["root"])]) == 0  # the test data is there
    assert "report.md" in capsys.readouterr().out
    text = (run / "report.md").read_text()
    metrics = json.loads((run / "metrics.json").read_text())
    table = _md_table(text, "system")
    ours = {row[0]: row[1:] for row in table if row[0].startswith("**")}
    # the run is on files, not WMT12: exact MAE / RMSE, scipy's Spearman, Pearson; no published rows
    assert "| system | MAE | RMSE | DeltaAvg | Spearman | Pearson |" in text
    shown = ("MAE_exact", "RMSE_exact", "DeltaAvg", "Spearman_scipy", "Pearson")
    test_row = ours[r"**toy \<b\>&co (ours, test)**"]
    assert test_row == [f"{metrics['test'][m]:.3f}" for m in shown]
    assert ours[r"**toy \<b\>&co (ours, 3-fold CV on train)**"] == [f"{metrics['cv'][m]:.3f}" for m in shown]
    assert not any("published" in row[0] for row in table)

    # residual bands recomputed from the gold labels and predictions.tsv with plain loops
    gold = [float(x) for x in (runs["root"] / "test/labels.txt").read_text().split()]
    pred = [float(line.split("\t")[1]) for line in (run / "predictions.tsv").read_text().splitlines()[1:]]
    expected = []
    for low, high in ((1, 2), (2, 3), (3, 4), (4, 5)):
        res = [p - g for g, p in zip(gold, pred, strict=True) if low <= g < high or (high == 5 and g == 5)]
        if res:
            mean, mae = f"{sum(res) / len(res):.3f}", f"{sum(abs(r) for r in res) / len(res):.3f}"
        else:
            mean = mae = "n/a"
        expected.append([str(len(res)), mean, mae])
    assert [row[1:] for row in _md_table(text, "band")] == expected

    # the selection path as selection.json has it
    selection = json.loads((run / "selection.json").read_text())
    path_rows = _md_table(text, "step")
    assert [row[1] for row in path_rows] == [
        step["feature"] + (" (locally predictive)" if step.get("locally_predictive") else "")
        for step in selection["path"]
    ]
    assert [row[2] for row in path_rows] == [f"{step['score']:.4f}" for step in selection["path"]]
    assert "not available for SVR" in text

    for name in ("scatter", "residual_bands", "selection_path"):
        _check_png(run / "report_files" / f"{name}.png")
        assert f"](report_files/{name}.png)" in text
    assert not (run / "report_files/importances.png").exists()
    # a second report is byte-identical
    before = (run / "report.md").read_bytes(), (run / "report_files/scatter.png").read_bytes()
    assert main(["report", str(run), "--data-dir", str(runs["root"])]) == 0
    assert ((run / "report.md").read_bytes(), (run / "report_files/scatter.png").read_bytes()) == before


def test_html_is_escaped_and_well_formed(runs):
    run = runs["svr"]
    assert main(["report", str(run)]) == 0
    page = (run / "report.html").read_text()
    assert "toy &lt;b&gt;&amp;co (ours, test)" in page and "<b>" not in page
    root = ET.fromstring(page.removeprefix("<!DOCTYPE html>\n"))  # well-formed XML as well
    assert root.tag == "html"
    images = [img.get("src") for img in root.iter("img")]
    assert images and all((run / src).is_file() for src in images)
    cells = [td.text for td in root.iter("td")]
    metrics = json.loads((run / "metrics.json").read_text())
    assert f"{metrics['test']['DeltaAvg']:.3f}" in cells


def test_m5p_report_shows_the_tree(runs):
    run = runs["m5p"]
    assert main(["report", str(run)]) == 0
    text = (run / "report.md").read_text()
    tree = (run / "model.txt").read_text().strip()
    assert f"```\n{tree}\n```" in text and "Number of Rules" in text
    assert tree.replace("<", "&lt;").replace(">", "&gt;") in (run / "report.html").read_text()


def test_random_forest_importances_are_the_models(runs):
    run = runs["rf"]
    assert main(["report", str(run)]) == 0
    rows = _md_table((run / "report.md").read_text(), "feature")
    assert {r[0] for r in rows} == {"len", "mt_len", "noise"}
    assert rows[-1][0] == "noise"  # the labels are built from the lengths; the noise column is noise
    assert sum(float(r[1]) for r in rows) == pytest.approx(1.0, abs=2e-4)
    from qe.model.file import QEModel

    model = QEModel.load(run / "model.skops")
    forest = model.estimator.steps[-1][1]
    expected = dict(zip(model.feature_names, forest.feature_importances_, strict=True))
    assert {r[0]: r[1] for r in rows} == {k: f"{v:.4f}" for k, v in expected.items()}
    _check_png(run / "report_files/importances.png")


def test_ablation_results_join_the_report(runs, tmp_path):
    ablation = tmp_path / "ablation"
    ablation.mkdir()
    systems = {
        "full": {
            "n_features": 3,
            "cv": {"MAE": 0.5},
            "test": {
                "MAE": 0.61,
                "MAE_exact": 0.61,
                "RMSE_exact": 0.8,
                "DeltaAvg": 0.5,
                "Spearman_scipy": 0.6,
                "Pearson": 0.7,
            },
        },
        "without:noise": {
            "n_features": 2,
            "cv": {"MAE": 0.49},
            "test": {
                "MAE": 0.6,
                "MAE_exact": 0.6,
                "RMSE_exact": 0.79,
                "DeltaAvg": 0.52,
                "Spearman_scipy": 0.61,
            },
            "bootstrap_vs_full": {
                "MAE": {"metric": "MAE", "a": 0.6, "b": 0.61, "a_wins": 0.8, "p_value": 0.2}
            },
        },
    }
    (ablation / "ablation.json").write_text(json.dumps({"config": "toy", "systems": systems}))
    run = runs["m5p"]
    assert main(["report", str(run), "--ablation", str(ablation)]) == 0
    rows = _md_table((run / "report.md").read_text().split("## Ablation")[1], "system")
    assert rows == [
        ["**full**", "3", "0.500", "0.610", "0.800", "0.500", "0.600", "0.700", "-"],
        ["without:noise", "2", "0.490", "0.600", "0.790", "0.520", "0.610", "n/a", "0.200"],
    ]
    _check_png(run / "report_files/ablation.png")
    # a report without the ablation drops its figure again
    assert main(["report", str(run)]) == 0
    assert not (run / "report_files/ablation.png").exists()


def test_report_of_a_real_ablation_directory(runs, tmp_path):
    config = runs["root"] / "m5p.toml"  # the SVR's has [selection], which qe ablate refuses
    out = tmp_path / "abl"
    assert (
        main(["ablate", str(config), "--output-dir", str(out), "--quiet", "--bootstrap-samples", "20"]) == 0
    )
    assert main(["report", str(out)]) == 0
    text = (out / "report.md").read_text()
    result = json.loads((out / "ablation.json").read_text())
    rows = {row[0].strip("*"): row for row in _md_table(text.split("## Ablation")[1], "system")}
    assert set(rows) == set(result["systems"])
    for name, system in result["systems"].items():
        assert rows[name][3] == f"{system['test']['MAE_exact']:.3f}"
        assert rows[name][7] == f"{system['test']['Pearson']:.3f}"
    _check_png(out / "report_files/ablation.png")


def test_missing_gold_labels_give_a_note_not_a_failure(runs, tmp_path, capsys):
    run = tmp_path / "copy"
    shutil.copytree(runs["svr"], run)
    config = run / "config.toml"
    config.write_text(config.read_text().replace("test/labels.txt", "test/gone.txt"))
    assert main(["report", str(run), "--data-dir", str(runs["root"])]) == 0
    err = capsys.readouterr().err
    assert err.startswith("qe: warning: Gold labels could not be read") and "gone.txt" in err
    text = (run / "report.md").read_text()
    assert "Gold labels could not be read" in text and not (run / "report_files/scatter.png").exists()


def test_bad_run_directories_exit_2_with_one_line(runs, tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    corrupt = tmp_path / "corrupt"
    shutil.copytree(runs["m5p"], corrupt)
    (corrupt / "metrics.json").write_text('{"test": {"MAE": ')
    no_numbers = tmp_path / "no-numbers"
    shutil.copytree(runs["m5p"], no_numbers)
    (no_numbers / "metrics.json").write_text('{"test": {"MAE": "x"}}')
    cases = [
        (tmp_path / "nowhere", "nowhere: run directory not found"),
        (empty, "not a run directory (no metrics.json or ablation.json)"),
        (corrupt, "metrics.json: corrupt metrics.json"),
        (no_numbers, "no-numbers/metrics.json: test.MAE = 'x': expected a number"),
    ]
    for path, message in cases:
        capsys.readouterr()
        assert main(["report", str(path)]) == 2
        err = capsys.readouterr().err.strip()
        assert message in err and len(err.splitlines()) == 1 and err.startswith("qe: error: ")
    assert not (empty / "report.md").exists()


def test_registered_dataset_gold_from_the_data_dir(data_dir, tmp_path):
    """A hand-made run on WMT12 test predicting 3.0 everywhere: bands follow from the gold file alone."""
    run = tmp_path / "constant"
    run.mkdir()
    gold = [
        float(x)
        for x in (data_dir / "wmt12-qe/test_set_annotations/target_system.effort").read_text().split()
    ]
    (run / "config.toml").write_text(
        'name = "constant"\n[data]\ndataset = "wmt12-en-es"\ntrain_split = "train"\ntest_split = "test"\n'
    )
    (run / "predictions.tsv").write_text(
        "id\tscore\n" + "".join(f"{i}\t3.000000\n" for i in range(len(gold)))
    )
    fake = {"MAE": 0.9, "RMSE": 1.0, "DeltaAvg": 0.0, "Spearman": 0.0}
    (run / "metrics.json").write_text(json.dumps({"test": fake}))
    (run / "signature.txt").write_text("a run of qe's\n")
    assert main(["report", str(run), "--data-dir", str(data_dir)]) == 0
    rows = _md_table((run / "report.md").read_text(), "band")
    bands = [(1, 2), (2, 3), (3, 4), (4, 5)]
    counts = [sum(low <= g < high or (high == 5 and g == 5) for g in gold) for low, high in bands]
    assert [int(r[1]) for r in rows] == counts and sum(counts) == 422
    for row, (low, high) in zip(rows, bands, strict=True):
        inside = [g for g in gold if low <= g < high or (high == 5 and g == 5)]
        assert row[2] == f"{sum(3.0 - g for g in inside) / len(inside):.3f}"
    assert (
        "Feature importances are not available: the run directory has no model.skops."
        in (run / "report.md").read_text()
    )


def test_bootstrap_results_against_other_systems_join_the_report(runs, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(runs["m5p"], run)
    metrics = json.loads((run / "metrics.json").read_text())
    bootstrap = {m: {"a": 0.6, "b": 0.7, "a_wins": 0.98, "p_value": 0.02} for m in ("MAE", "RMSE")}
    bootstrap.update(
        {m: {"a": 0.5, "b": 0.4, "a_wins": 0.1, "p_value": 0.9} for m in ("DeltaAvg", "Spearman_scipy")}
    )
    metrics["against"] = {
        "baseline": {
            "test": {"MAE_exact": 0.7, "RMSE_exact": 0.85, "DeltaAvg": 0.4, "Spearman_scipy": 0.41},
            "bootstrap": bootstrap,
        }
    }
    (run / "metrics.json").write_text(json.dumps(metrics))
    assert main(["report", str(run)]) == 0
    text = (run / "report.md").read_text()
    assert ["baseline (ours, test)", "0.700", "0.850", "0.400", "0.410", "n/a"] in _md_table(text, "system")
    assert _md_table(text, "against") == [
        [
            "baseline",
            "0.600 vs 0.700, p 0.020",
            "0.600 vs 0.700, p 0.020",
            "0.500 vs 0.400, p 0.900",
            "0.500 vs 0.400, p 0.900",
        ]
    ]
