"""`qe init` without labels (issue 23 item 3): nothing to train, so it checks the pairs and offers the
ready multilingual model, with commands that name the user's files and a model the catalogue knows."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from qe.cli import build_parser, main
from qe.config.features import POOLED_FAMILIES
from qe.model.catalog import CATALOG
from qe.run.config import load_config
from tests.helpers import REPO, write_lines
from tests.helpers.toy import EN, ES, sentences


def pairs(folder: Path, n: int = 12, mt_name: str = "mt.txt") -> list[str]:
    src = write_lines(folder / "src.txt", sentences(n, EN, 0))
    mt = write_lines(folder / mt_name, sentences(n, ES, 1))
    return ["--src", str(src), "--mt", str(mt)]


def commands(out: str) -> list[list[str]]:
    return [shlex.split(line, comments=True) for line in out.splitlines() if line.strip().startswith("qe ")]


def fake_built_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Point the catalogue at a models folder where the offered model's two files exist, so the parser
    accepts its name on a clean clone, where the model is never built."""
    monkeypatch.setenv("QE_MODELS_DIR", str(tmp_path / "models"))
    (tmp_path / "models").mkdir()
    for suffix in (".skops", ".json"):
        (tmp_path / "models" / f"mlqe-da-multilingual{suffix}").touch()


def test_no_labels_offers_the_multilingual_model_for_the_users_files(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    argv = pairs(tmp_path, mt_name="my translations.txt")
    assert main(["init", *argv, "--src-lang", "en", "--tgt-lang", "de"]) == 0
    out = capsys.readouterr().out
    assert "no --labels" in out and "12 pairs" in out
    assert "not among the encoder's" not in out  # en and de are USE-M languages
    build, predict = commands(out)
    assert build == ["qe", "models", "build", "mlqe-da-multilingual"]
    # each command is one qe's own parser accepts (the model taken as built: its two files exist)
    fake_built_model(tmp_path, monkeypatch)
    assert build_parser("models").parse_args(build[1:]).names == ["mlqe-da-multilingual"]
    parsed = build_parser("predict").parse_args(predict[1:])
    assert parsed.model == tmp_path / "models" / "mlqe-da-multilingual.skops"
    assert (str(parsed.src), str(parsed.mt)) == (argv[1], argv[3])  # a path with a space survives quoting
    assert parsed.out == Path(f"{argv[3]}.scores.tsv")  # beside the MT file, never over it
    assert not (tmp_path / "config.toml").exists()  # nothing to train: no experiment config written


def test_test_files_are_offered_too_and_an_unknown_language_is_named(tmp_path, capsys, monkeypatch):
    argv = pairs(tmp_path)
    fake_built_model(tmp_path, monkeypatch)
    test_src = write_lines(tmp_path / "t.src", sentences(5, EN, 2))
    test_mt = write_lines(tmp_path / "t.mt", sentences(5, ES, 3))
    extra = ["--test-src", str(test_src), "--test-mt", str(test_mt)]
    assert main(["init", *argv, *extra, "--src-lang", "en", "--tgt-lang", "ne"]) == 0
    out = capsys.readouterr().out
    assert "17 pairs" in out and "ne is not among the encoder's 16 languages" in out
    predicts = [build_parser("predict").parse_known_args(command[1:])[0] for command in commands(out)[1:]]
    assert [str(parsed.mt) for parsed in predicts] == [argv[3], str(test_mt)]


def test_the_offered_model_reads_only_the_text(tmp_path):
    record = CATALOG["mlqe-da-multilingual"]
    config = load_config(REPO / record.config)
    assert record.languages == ("mul", "mul") and record.label == "da"
    assert list(config.features.families) == ["finetuned"] and set(config.features.families) <= set(
        POOLED_FAMILIES
    )
    assert len(config.data.datasets) == 7  # the seven MLQE-PE pairs' DA labels


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        (["--post-edits", "{src}"], "--post-edits needs --labels"),
        (["--label-range", "0", "1", "--test-labels", "{src}"], "--label-range, --test-labels need --labels"),
        (["--test-src", "{src}"], "--test-src and --test-mt go together"),
    ],
)
def test_options_that_need_labels_are_refused_in_one_line(tmp_path, capsys, extra, words):
    argv = pairs(tmp_path)
    extra = [value.format(src=argv[1]) for value in extra]
    assert main(["init", *argv, *extra, "--src-lang", "en", "--tgt-lang", "de"]) == 2
    err = capsys.readouterr().err
    assert words in err and len(err.strip().splitlines()) == 1


def test_bad_pairs_are_named_by_file_and_line(tmp_path, capsys):
    src = write_lines(tmp_path / "src.txt", ["one", "two", "three"])
    mt = write_lines(tmp_path / "mt.txt", ["uno", "dos"])
    assert main(["init", "--src", str(src), "--mt", str(mt), "--src-lang", "en", "--tgt-lang", "es"]) == 2
    err = capsys.readouterr().err
    assert "mt.txt:3" in err and "parallel files must align" in err
    (tmp_path / "bad.txt").write_bytes(b"uno\n\xff\xfe\ntres\n")
    argv = ["--src", str(src), "--mt", str(tmp_path / "bad.txt")]
    assert main(["init", *argv, "--src-lang", "en", "--tgt-lang", "es"]) == 2
    assert "bad.txt:2" in capsys.readouterr().err


def test_labels_still_need_the_test_pairs(tmp_path, capsys):
    argv = pairs(tmp_path)
    labels = write_lines(tmp_path / "labels.txt", ["0.5"] * 12)
    assert main(["init", *argv, "--labels", str(labels), "--src-lang", "en", "--tgt-lang", "de"]) == 2
    assert "--test-src and --test-mt are needed with --labels" in capsys.readouterr().err
