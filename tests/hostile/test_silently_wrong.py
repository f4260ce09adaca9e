"""Silently wrong results: input that a command took with exit 0 and turned into a wrong answer
(main ba3d5b8). A JSONL table's columns came from its first row alone (a first row without
``score`` dropped every label), a bundle's ``mt2.json`` edited to translate the wrong way was used
with a version warning, and ``qe compare`` read a ``metrics.json`` linked from outside the run.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from qe.cli import main
from qe.infra.errors import QEInputError
from tests.helpers import write_lines

SRC = [f"the {w} sat on the mat number {i} ." for i, w in enumerate(["cat", "dog", "bird", "cow"] * 5)]
MT = [f"el {w} se sentó en la alfombra {i} ." for i, w in enumerate(["gato", "perro", "pájaro", "vaca"] * 5)]


def _rows(count: int) -> list[dict]:
    return [
        {"id": f"s{i}", "src": SRC[i % 20], "mt": MT[i % 20], "score": (i * 7 % 10) / 10}
        for i in range(count)
    ]


def _lacking(rows: list[dict], index: int, column: str) -> list[dict]:
    rows[index] = {key: value for key, value in rows[index].items() if key != column}
    return rows


@pytest.mark.parametrize(
    ("index", "column", "other"),
    [
        (0, "score", 2),  # the case: exit 0, every label ignored, no test block
        (99, "id", 1),  # its id would have been its position, "99", beside "s0" ... "s98"
    ],
)
def test_a_jsonl_row_lacking_a_column_the_others_have_is_one_line(tmp_path, capsys, index, column, other):
    write_lines(tmp_path / "train.jsonl", [json.dumps(row) for row in _rows(20)])
    test = write_lines(
        tmp_path / "test.jsonl", [json.dumps(row) for row in _lacking(_rows(100), index, column)]
    )
    config = tmp_path / "c.toml"
    config.write_text(
        '[data.train]\ntable = "train.jsonl"\n[data.test]\ntable = "test.jsonl"\n'
        '[features]\nfamilies = ["surface"]\n[learner]\nname = "mean"\n[cv]\nfolds = 3\n'
    )
    assert main(["run", str(config), "--output-dir", str(tmp_path / "run"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"{test}:{index + 1}: lacks the column '{column}', which line {other} has" in err
    assert not (tmp_path / "run").exists()


def test_the_columns_of_a_jsonl_table_are_those_of_all_its_rows(tmp_path):
    from qe.data import load_table

    path = write_lines(tmp_path / "t.jsonl", [json.dumps(row) for row in _lacking(_rows(5), 0, "score")])
    with pytest.raises(QEInputError) as info:
        load_table(path)
    assert (info.value.path, info.value.line) == (str(path), 1)
    rows = [json.dumps({**row, "note": "x"}) for row in _rows(5)]  # every row with an extra column: fine
    assert load_table(write_lines(tmp_path / "u.jsonl", rows)).labels.tolist() == [0.0, 0.7, 0.4, 0.1, 0.8]


def _eng_spa_installed() -> bool:
    from qe.resources.mt2 import installed_pairs

    return "eng-spa" in installed_pairs() and "spa-eng" in installed_pairs()


@pytest.mark.skipif(not _eng_spa_installed(), reason="Apertium eng-spa is not installed")
def test_a_bundle_mt2_edited_to_translate_the_wrong_way_is_refused(tmp_path):
    from qe.bundle import clear_loaded_members, open_bundle

    config = tmp_path / "b.toml"
    config.write_text('name = "b"\n[languages]\nsrc = "en"\ntgt = "es"\n[mt2]\npair = "eng-spa"\n')
    bundle = tmp_path / "bundle"
    assert main(["resources", "build", str(config), "--output", str(bundle), "--quiet"]) == 0
    assert open_bundle(bundle)["mt2"].pair == "eng-spa"
    member = bundle / "mt2.json"
    member.write_text(member.read_text().replace('"eng-spa"', '"spa-eng"'))
    manifest = json.loads((bundle / "manifest.json").read_text())  # edited to match, as a forger would
    entry = manifest["members"]["mt2"]
    entry.update(sha256=hashlib.sha256(member.read_bytes()).hexdigest(), bytes=member.stat().st_size)
    (bundle / "manifest.json").write_text(json.dumps(manifest))
    clear_loaded_members()
    with pytest.raises(QEInputError, match="translates es into en, but the data is en -> es") as info:
        open_bundle(bundle)["mt2"]
    assert info.value.path == str(member)


def _run_with_metrics(folder: Path) -> Path:
    folder.mkdir()
    (folder / "config.toml").write_text('name = "run"\n[data]\ndataset = "wmt12-en-es"\n')
    (folder / "metrics.json").write_text(
        json.dumps({"test": {"MAE": 0.6, "RMSE": 0.8, "DeltaAvg": 0.5, "Spearman": 0.5}})
    )
    return folder


@pytest.mark.parametrize("name", ["metrics.json", "config.toml"])
def test_qe_compare_reads_no_file_linked_from_outside_the_run(tmp_path, capsys, name):
    run = _run_with_metrics(tmp_path / "run")
    outside = _run_with_metrics(tmp_path / "elsewhere") / name  # e.g. another user's results
    (run / name).unlink()
    (run / name).symlink_to(outside)
    assert main(["compare", str(run)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{run / name}: {name} is a link to a file outside" in err, err
    (run / name).unlink()
    (run / name).write_text(outside.read_text())  # the same file inside the run is read
    assert main(["compare", str(run)]) == 0
    assert "0.6" in capsys.readouterr().out
