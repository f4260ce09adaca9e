"""Hostile configs, options and the files beside them (main ba3d5b8): TOML or JSON nested thousands
deep was a ``RecursionError`` traceback wherever it was read (configs, ``--set``, run directories,
bundle manifests, output markers, state files); ``--set surface.src_lang='{'`` and language
"codes" like ``English`` were taken as languages; a mixed-script line's warning named the expected
script as the offending one; ``qe init`` wrote its configs with mode 0600.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from qe.cli import main
from tests.helpers import write_lines

DEPTH = 5000
DEEP_TOML = "x = " + "[" * DEPTH + "]" * DEPTH + "\n"
DEEP_JSON = "[" * DEPTH + "]" * DEPTH
SRC = [f"the {w} sat on the mat number {i} ." for i, w in enumerate(["cat", "dog", "bird", "cow"] * 5)]
MT = [f"el {w} se sentó en la alfombra {i} ." for i, w in enumerate(["gato", "perro", "pájaro", "vaca"] * 5)]
HTER = [f"{(i * 7 % 10) / 10:.1f}" for i in range(20)]


def _texts(folder: Path) -> list[str]:
    src, mt = write_lines(folder / "s.txt", SRC[:5]), write_lines(folder / "m.txt", MT[:5])
    return ["features", "--src", str(src), "--mt", str(mt), "--families", "surface", "--quiet"]


def _config(folder: Path) -> Path:
    """A config qe run accepts (text files, surface features, the mean learner)."""
    for split, rows in (("train", range(14)), ("test", range(14, 20))):
        for role, values in (("src", SRC), ("mt", MT), ("labels", HTER)):
            write_lines(folder / f"{split}.{role}", [values[i] for i in rows])
    config = folder / "c.toml"
    config.write_text(
        "".join(
            f'[data.{s}]\nsrc = "{s}.src"\nmt = "{s}.mt"\nlabels = "{s}.labels"\n' for s in ("train", "test")
        )
        + '[features]\nfamilies = ["surface"]\n[learner]\nname = "mean"\n[cv]\nfolds = 3\n'
    )
    return config


def _run_dir(folder: Path) -> Path:
    run = folder / "run"
    run.mkdir()
    (run / "config.toml").write_text(DEEP_TOML)
    (run / "metrics.json").write_text(
        json.dumps({"test": {"MAE": 1, "RMSE": 1, "DeltaAvg": 0, "Spearman": 0}})
    )
    (run / "predictions.tsv").write_text("id\tscore\n0\t3.0\n")
    (run / "signature.txt").write_text("x\n")
    return run


def experiment_config(folder: Path) -> tuple[list[str], Path]:
    path = write_lines(folder / "deep.toml", [DEEP_TOML])
    return ["run", str(path), "--output-dir", str(folder / "out"), "--quiet"], path


def bundle_config(folder: Path) -> tuple[list[str], Path]:
    path = write_lines(folder / "deep.toml", ['[languages]\nsrc = "en"\ntgt = "es"\n' + DEEP_TOML])
    return ["resources", "build", str(path), "--output", str(folder / "b"), "--quiet"], path


def checked_config(folder: Path) -> tuple[list[str], Path]:
    path = write_lines(folder / "deep.toml", [DEEP_TOML])
    return ["resources", "check", str(path)], path


def report_run(folder: Path) -> tuple[list[str], Path]:
    run = _run_dir(folder)
    return ["report", str(run)], run / "config.toml"


def compare_run(folder: Path) -> tuple[list[str], Path]:
    run = _run_dir(folder)
    return ["compare", str(run)], run / "config.toml"


def set_option(folder: Path) -> tuple[list[str], str]:
    return [*_texts(folder), "--set", f"surface.style={DEEP_JSON}", "--out", str(folder / "o.tsv")], "--set"


def bundle_manifest(folder: Path) -> tuple[list[str], Path]:
    bundle = folder / "bundle"
    bundle.mkdir()
    (bundle / "manifest.json").write_text(DEEP_JSON)
    return [
        *_texts(folder),
        "--resources",
        str(bundle),
        "--out",
        str(folder / "o.tsv"),
    ], bundle / "manifest.json"


def output_marker(folder: Path) -> tuple[list[str], Path]:
    out = folder / "out"
    out.mkdir()
    (out / ".qe-output").write_text(DEEP_JSON)
    return ["run", str(_config(folder)), "--output-dir", str(out), "--quiet"], out


def state_file(folder: Path) -> tuple[list[str], Path]:
    state = folder / ".o.tsv.state.json"
    state.write_text(DEEP_JSON)
    return [*_texts(folder), "--out", str(folder / "o.tsv"), "--resume"], state


@pytest.mark.parametrize(
    "case",
    [
        experiment_config,
        bundle_config,
        checked_config,
        report_run,
        compare_run,
        set_option,
        bundle_manifest,
        output_marker,
        state_file,
    ],
)
def test_deep_nesting_is_one_line_naming_the_file(tmp_path, monkeypatch, capsys, case: Callable):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("QE_DATA_DIR", str(tmp_path))
    args, named = case(tmp_path)
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{named}" in err and "Traceback" not in err, err


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("{", "not valid JSON"),  # was taken as the word "{"
        ('["en"', "not valid JSON"),
        ('"{"', "expected a language code"),
        ("English", "expected a language code"),
        ("e n", "expected a language code"),
    ],
)
def test_set_takes_no_malformed_value_for_a_language(tmp_path, capsys, value, message):
    args = [*_texts(tmp_path), "--set", f"surface.src_lang={value}", "--out", str(tmp_path / "o.tsv")]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and "src_lang" in err, err
    assert not (tmp_path / "o.tsv").exists()


@pytest.mark.parametrize(
    "setting",
    ['[features.settings.surface]\ntgt_lang = "Spanish"\n', '[data.languages]\nsrc = "{"\ntgt = "es"\n'],
)
def test_a_config_names_languages_by_code(tmp_path, capsys, setting):
    config = _config(tmp_path)
    config.write_text(config.read_text() + setting)
    assert main(["run", str(config), "--output-dir", str(tmp_path / "run"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{config}: " in err and "expected a language code" in err, err


def test_a_mixed_script_line_names_the_script_that_is_not_expected():
    from qe.text.langid import script_findings

    # 4 Latin, 3 Cyrillic and 3 Greek letters: not mostly Latin, and Latin is the commonest script
    lines = ["Esto es una frase normal y corriente ."] * 10 + ["abcd абв αβγ"]
    (finding,) = script_findings(lines, "es", "MT", "mt.txt")
    assert finding.line == 11 and finding.message.endswith("e.g. Cyrillic"), finding.message


def test_qe_init_writes_its_configs_with_the_umasks_mode(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    files = {}
    for split, rows in (("train", range(14)), ("test", range(14, 20))):
        for role, values in (("src", SRC), ("mt", MT), ("labels", HTER), ("pe", MT)):
            files[f"{split}.{role}"] = str(
                write_lines(tmp_path / f"{split}.{role}", [values[i] for i in rows])
            )
    args = ["init", "--src", files["train.src"], "--mt", files["train.mt"], "--labels", files["train.labels"]]
    args += [
        "--post-edits",
        files["train.pe"],
        "--test-src",
        files["test.src"],
        "--test-mt",
        files["test.mt"],
    ]
    args += ["--src-lang", "en", "--tgt-lang", "es", "--out", "mine.toml"]
    previous = os.umask(0o022)
    try:
        assert main(args) == 0
    finally:
        os.umask(previous)
    for name in ("mine.toml", "mine-resources.toml"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o644, name
