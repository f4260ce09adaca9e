"""Ready-made models by name (issue 21): the catalogue's records against the configs and datasets they
name, the name resolver (names, paths, hostile names), and `qe models build` / `list` / `qe predict
--model NAME` on a tiny model built the same way as the real ones."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from qe.cli import main
from qe.infra.errors import QEInputError
from qe.model import catalog
from qe.model.catalog import CATALOG, LABEL_KINDS, ReadyModel, find_ready, model_argument, read_manifest
from tests.helpers import REPO, write_lines
from tests.helpers.toy import EN, ES, sentences

# ------------------------------------------------------------------------------------------ records


def test_the_catalogue_holds_wmt12_en_es_and_each_mlqe_pairs_da_and_hter_model():
    from qe.data.sets.wmt20_mlqe import MLQE_PAIRS

    mlqe = {f"mlqe-{kind}-{pair}" for kind in ("da", "hter") for pair in MLQE_PAIRS}
    expected = {"wmt12-en-es", "wmt12-en-es-fast", "mlqe-da-multilingual"} | mlqe
    assert set(CATALOG) == expected
    assert CATALOG["wmt12-en-es"].config == "configs/wmt12-best-rawtext.toml"  # the best raw-text system
    assert CATALOG["wmt12-en-es-fast"].config == "configs/wmt12-extracted-svr.toml"  # 17 features, SVR
    assert CATALOG["mlqe-hter-en-de"].config == "configs/mlqe/pe-en-de-best.toml"
    assert CATALOG["mlqe-da-ro-en"].bundle_config == "configs/mlqe/resources-da-ro-en.toml"


def test_the_catalogue_reads_the_configs_of_this_checkout():
    """The records' configs are found beside the code (moving the module once pointed it at qe/)."""
    from qe.model import catalog

    assert catalog.REPO == REPO
    for record in CATALOG.values():
        assert (catalog.REPO / record.config).is_file() and (catalog.REPO / record.bundle_config).is_file()


@pytest.mark.parametrize("name", sorted(CATALOG))
def test_each_record_agrees_with_its_configs_and_dataset(name):
    """Languages, label kind and bundle of a record are those of the dataset and configs it builds from."""
    from qe.bundle import read_bundle_config
    from qe.data import DATASETS
    from qe.run.config import load_config

    record = CATALOG[name]
    config = load_config(REPO / record.config)
    datasets = [DATASETS[name] for name in config.data.datasets or [config.data.dataset]]
    languages = {tuple(dataset.languages) for dataset in datasets}
    assert record.languages == (languages.pop() if len(datasets) == 1 else ("mul", "mul"))
    kinds = {"wmt12-en-es": "effort", "mlqe-pe": "hter", "mlqe-da": "da"}
    assert {kinds[dataset.name.split("/")[0]] for dataset in datasets} == {record.label}
    bundle = read_bundle_config(REPO / record.bundle_config)
    assert Path(config.features.resources).name == bundle.name  # the bundle the config reads
    assert (bundle.languages.src, bundle.languages.tgt) == record.languages
    assert set(record.figures) <= {"MAE", "RMSE", "DeltaAvg", "Spearman", "Pearson", "MAE_exact"}


def test_label_kinds_say_which_way_is_better():
    # HTER counts edits: lower is better; a DA z-score and WMT12's 1-5 effort (5 = little editing): higher
    assert LABEL_KINDS["hter"].direction == "lower is better"
    assert LABEL_KINDS["da"].higher_is_better and LABEL_KINDS["effort"].higher_is_better
    assert CATALOG["mlqe-hter-si-en"].label_kind.name == "HTER"
    assert CATALOG["wmt12-en-es"].label_kind.name == "WMT12 effort 1-5"


# ------------------------------------------------------------------------------------------ resolver


def test_a_name_resolves_only_inside_the_models_directory(tmp_path, monkeypatch):
    monkeypatch.setenv("QE_MODELS_DIR", str(tmp_path / "models"))
    with pytest.raises(
        QEInputError, match="'wmt12-en-es' is not built yet: run `qe models build wmt12-en-es`"
    ):
        model_argument("wmt12-en-es")
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "wmt12-en-es.skops").write_bytes(b"model")
    with pytest.raises(QEInputError, match="not built yet"):  # a model without its manifest is not built
        find_ready("wmt12-en-es")
    (tmp_path / "models" / "wmt12-en-es.json").write_text("{}")
    assert model_argument("wmt12-en-es") == tmp_path / "models" / "wmt12-en-es.skops"
    assert find_ready("wmt12-en-es", tmp_path / "models") == tmp_path / "models" / "wmt12-en-es.skops"


def test_paths_stay_paths(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_lines(tmp_path / "mine", ["not a model"])
    assert model_argument("mine") == Path("mine")  # an existing file, as before names existed
    for text in ("runs/x/model.skops", "model.skops", "../x", str(tmp_path / "absent"), "./wmt12-en-es"):
        assert model_argument(text) == Path(text)


@pytest.mark.parametrize(
    "name",
    [
        "../x",
        "../../etc/passwd",
        "/etc/passwd",
        "wmt12-en-es/../../x",
        "wmt12-en-es.skops",
        "WMT12-EN-ES",
        " wmt12-en-es",
        "wmt12-en-es\n",
        "a\x00b",
        "x" * 5000,
        "",
        ".",
        "resources",
    ],
)
def test_a_name_is_never_a_path(tmp_path, name):
    """``find_ready`` (names only, as the server will use it) refuses anything not in the catalogue,
    without touching the file system, in one line listing the known names."""
    with pytest.raises(QEInputError) as caught:
        find_ready(name, tmp_path)
    message = str(caught.value)
    assert "unknown model name" in message and "wmt12-en-es, wmt12-en-es-fast, mlqe-da-ro-en" in message
    assert "\n" not in message and "\x00" not in message and len(message) < 700


def test_an_unknown_word_lists_the_known_names(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    known = "wmt12-en-es, wmt12-en-es-fast, mlqe-da"
    with pytest.raises(QEInputError, match=rf"unknown model name 'en-es'; known names: {known}"):
        model_argument("en-es")


def test_predict_with_an_unknown_name_is_one_line_and_exit_2(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO), "QE_MODELS_DIR": str(tmp_path)}
    for name, message in (
        ("nope", "qe: error: unknown model name 'nope'; known names: wmt12-en-es, "),
        ("mlqe-da-en-de", "model 'mlqe-da-en-de' is not built yet: run `qe models build mlqe-da-en-de`"),
    ):
        result = subprocess.run(
            [sys.executable, "-m", "qe", "predict", "--model", name, "--src", "s", "--mt", "m"],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env=env,
            check=False,
        )
        assert result.returncode == 2 and result.stdout == ""
        assert result.stderr.count("\n") == 1 and message in result.stderr, result.stderr


# ------------------------------------------------------------------------------- build, list, predict


@pytest.fixture()
def tiny(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ReadyModel:
    """A catalogue record of a small surface-feature SVR (no bundle), its config beside the test."""
    lines = ['name = "tiny"', "[data]", "label_range = [1, 5]"]
    for split, n, seed in (("train", 60, 0), ("test", 20, 1)):
        src, mt = sentences(n, EN, seed), sentences(n, ES, seed + 10)
        write_lines(tmp_path / f"{split}.src", src)
        write_lines(tmp_path / f"{split}.mt", mt)
        write_lines(tmp_path / f"{split}.labels", [f"{1 + 4 * (len(m) % 7) / 6:.2f}" for m in mt])
        lines += [f"[data.{split}]"] + [f'{k} = "{split}.{k}"' for k in ("src", "mt", "labels")]
    lines += ["[features]", 'families = ["surface"]', "[learner]", 'name = "svr"', "[cv]", "folds = 3"]
    (tmp_path / "tiny.toml").write_text("\n".join(lines) + "\n")
    record = ReadyModel(
        "tiny",
        str(tmp_path / "tiny.toml"),
        None,
        ("en", "es"),
        "effort",
        "60 toy pairs",
        "20 toy pairs",
        ("MAE",),
    )
    monkeypatch.setitem(catalog.CATALOG, "tiny", record)
    monkeypatch.setenv("QE_MODELS_DIR", str(tmp_path / "models"))
    monkeypatch.chdir(tmp_path)
    return record


def test_build_list_and_predict_by_name(tiny, tmp_path, capsys):
    assert main(["models", "list"]) == 0
    assert "tiny  en-es  WMT12 effort 1-5 (higher is better)  not built (qe models build tiny)" in (
        capsys.readouterr().out
    )
    assert main(["models", "build", "tiny", "--quiet"]) == 0
    assert "tiny: built in" in capsys.readouterr().out
    run = tmp_path / "models" / "runs" / "tiny"
    metrics = json.loads((run / "metrics.json").read_text())
    manifest = read_manifest("tiny")
    assert manifest["test"] == {"MAE": metrics["test"]["MAE"]} and manifest["training_rows"] == 60
    assert manifest["signature"] == (run / "signature.txt").read_text().strip()
    assert (tmp_path / "models" / "tiny.skops").read_bytes() == (run / "model.skops").read_bytes()

    assert main(["models", "list"]) == 0
    out = capsys.readouterr().out.splitlines()
    at = out.index("tiny  en-es  WMT12 effort 1-5 (higher is better)  built")
    assert out[at + 1 : at + 4] == [
        "    training: 60 toy pairs (60 pairs)",
        f"    test: 20 toy pairs: MAE {metrics['test']['MAE']:.3f}",
        f"    signature: {metrics['signature']}",
    ]
    assert out[-1] == f"1 of {len(CATALOG)} ready-made models built in {tmp_path / 'models'}"
    assert main(["models", "list", "--json"]) == 0
    listed = {item["name"]: item for item in json.loads(capsys.readouterr().out)}
    assert listed["tiny"]["built"] and not listed["wmt12-en-es"]["built"]
    assert listed["tiny"]["label"]["higher_is_better"] is True

    # scoring by name gives the run's own test predictions
    assert main(["predict", "--model", "tiny", "--src", "test.src", "--mt", "test.mt", "--out", "p.tsv"]) == 0
    assert (tmp_path / "p.tsv").read_text() == (run / "predictions.tsv").read_text()

    # built from the same config: kept; --force builds it again, a changed config too
    assert main(["models", "build", "tiny", "--quiet"]) == 0
    assert "tiny: already built from these configs" in capsys.readouterr().out
    (tmp_path / "tiny.toml").write_text("seed = 7\n" + (tmp_path / "tiny.toml").read_text())
    assert main(["models", "build", "tiny", "--quiet"]) == 0
    assert "tiny: built in" in capsys.readouterr().out
    assert "seed:7" in read_manifest("tiny")["signature"]


def test_build_refuses_unknown_names_before_building_anything(tiny, tmp_path, capsys):
    assert main(["models", "build", "tiny", "../x"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown model name '../x'; known names: " in err
    assert not (tmp_path / "models").exists()


def test_a_manifest_qe_did_not_write_is_refused(tiny, tmp_path, capsys):
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "tiny.skops").write_bytes(b"x")
    (tmp_path / "models" / "tiny.json").write_text(json.dumps({"format": "other", "name": "tiny"}))
    assert main(["models", "list"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "tiny.json: not a ready-model manifest" in err
