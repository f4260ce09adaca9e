"""Text input: a UTF-8 BOM never sticks to the first word, a directory is named as one, and the language
check covers the MT side's writing system (warn by default, refuse with --strict)."""

from __future__ import annotations

import json

import pytest

from qe.cli import main
from qe.data import load_parallel, load_table
from qe.infra.errors import QEInputError
from qe.infra.io import read_lines, read_text_lines
from qe.stream.chunks import iter_chunks
from qe.stream.inputs import read_input
from qe.text.langid import script_findings, script_of
from tests.helpers import write_lines
from tests.helpers.bundles import build, small_config
from tests.helpers.toy import ES, sentences, toy_config

BOM = b"\xef\xbb\xbf"


# ---------------------------------------------------------------------- byte-order marks


def test_bom_is_dropped_by_every_text_reader(tmp_path, small_data):
    text = tmp_path / "bom.txt"
    text.write_bytes(BOM + b"The cat sat on the mat .\nA dog .\n")
    assert read_lines(text)[0] == "The cat sat on the mat ."
    assert read_text_lines(text)[0] == "The cat sat on the mat ."
    assert next(iter_chunks({"src": text}, 10)).lines["src"][0] == "The cat sat on the mat ."
    # labels: a BOM before the first number is not "not a number"
    labels = write_lines(tmp_path / "labels", BOM + b"3.5\n2\n")
    assert list(load_parallel(text, text, labels).labels) == [3.5, 2.0]
    # a TSV table: the BOM does not rename the first column ("\ufeffid" would lose the ids)
    table = write_lines(tmp_path / "table.tsv", BOM + b"id\tsrc\tmt\tscore\na7\tx\ty\t3\nb9\tz\tw\t4\n")
    assert load_table(table).ids == ["a7", "b9"]
    # a bundle corpus: the first line still matches the evaluation sentence it copies
    write_lines(small_data / "corpus" / "toy.en", BOM + b"A small cat .\nThe house is big .\nx y z\nw v\n")
    write_lines(small_data / "eval.en", ["a small cat ."])
    with pytest.raises(QEInputError, match=r"shares 1 sentence") as info:
        build(tmp_path, small_data, small_config())
    assert info.value.line == 1


def test_bom_does_not_change_features_or_scores(tmp_path, capsys):
    """`qe features` streams its input: 'The cat sat on the mat .' is 7 tokens, BOM or not."""
    mt = write_lines(tmp_path / "mt.txt", ["El gato se sentó ."])
    outputs = []
    for name, prefix in (("plain", b""), ("bom", BOM)):
        src = write_lines(tmp_path / f"{name}.txt", prefix + b"The cat sat on the mat .\n")
        out = tmp_path / f"{name}.tsv"
        args = ["features", "--src", str(src), "--mt", str(mt), "--families", "surface", "--quiet"]
        assert main([*args, "--out", str(out)]) == 0
        header, row = out.read_text().splitlines()
        outputs.append(dict(zip(header.split("\t"), row.split("\t"), strict=True)))
    assert outputs[0]["surface.src_tokens"] == outputs[1]["surface.src_tokens"] == "7"
    assert outputs[0] == outputs[1]


def test_bom_in_predictions_and_configs(tmp_path, capsys):
    gold = write_lines(tmp_path / "gold", ["5", "1", "3", "2"])
    pred = write_lines(tmp_path / "pred.tsv", BOM + b"id\tscore\n0\t5\n1\t1\n2\t3\n3\t2\n")
    assert main(["evaluate", "--gold", str(gold), "--pred", str(pred), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["MAE"] == 0.0

    config = toy_config(tmp_path)
    config.write_bytes(BOM + config.read_bytes())
    from qe.run.config import load_config

    assert load_config(config).name == "toy"


# ---------------------------------------------------------------------- directories


def test_a_directory_given_as_a_file_is_named_as_one(tmp_path, capsys):
    folder = tmp_path / "folder"
    folder.mkdir()
    for read in (read_lines, read_text_lines, read_input):
        with pytest.raises(QEInputError) as info:
            read(folder)
        assert "is a directory" in info.value.message and info.value.path == str(folder)
    gold = write_lines(tmp_path / "gold", ["5", "1", "3", "2"])
    assert main(["evaluate", "--gold", str(folder), "--pred", str(gold)]) == 2
    assert capsys.readouterr().err.strip() == f"qe: error: {folder}: is a directory, not a file"
    assert main(["run", str(folder), "--output-dir", str(tmp_path / "o")]) == 2
    assert capsys.readouterr().err.strip() == f"qe: error: {folder}: is a directory, not a config file"
    mt = write_lines(tmp_path / "mt.txt", ["El gato ."])
    args = ["features", "--src", str(folder), "--mt", str(mt), "--families", "surface"]
    assert main([*args, "--out", str(tmp_path / "f.tsv"), "--quiet"]) == 2
    assert capsys.readouterr().err.strip() == f"qe: error: {folder}: is a directory, not a file"
    missing = tmp_path / "missing.txt"
    assert main(["evaluate", "--gold", str(missing), "--pred", str(gold)]) == 2
    assert capsys.readouterr().err.strip() == f"qe: error: {missing}: file not found"


# ---------------------------------------------------------------------- writing systems


def test_script_of_letters():
    assert [script_of(c) for c in "aÉ中カかЖع한ΩאกＡ"] == [
        "Latin",
        "Latin",
        "Han",
        "Katakana",
        "Hiragana",
        "Cyrillic",
        "Arabic",
        "Hangul",
        "Greek",
        "Hebrew",
        "Thai",
        "Latin",
    ]
    assert [script_of(c) for c in "1 .😀"] == [None, None, None, None]


SPANISH = ["El gato se sentó en la alfombra.", "La casa es pequeña y muy bonita.", "Los niños juegan."] * 4


@pytest.mark.parametrize(
    ("mt", "expected"),
    [
        (
            ["这是一个测试句子，用来检查语言。", "今天天气很好，我们去公园散步吧。"] * 3,
            "mostly in Han script (100% of",
        ),
        (["هذه جملة اختبار للتحقق من اللغة.", "الطقس جميل اليوم."] * 3, "mostly in Arabic script"),
        (["Это тестовое предложение для проверки.", "Сегодня хорошая погода."] * 3, "mostly in Cyrillic"),
    ],
)
def test_mt_in_another_script_is_found(mt, expected):
    findings = script_findings(mt, "es", "the MT file", "mt.txt")
    assert len(findings) == 1 and expected in findings[0].message
    assert "but the model expects 'es', written in Latin" in findings[0].message
    assert script_findings(SPANISH, "es", "the MT file") == []
    assert script_findings(mt, "xx", "the MT file") == []  # a language of unknown script: not judged


def test_single_lines_in_another_script_or_emoji_only_are_named():
    lines = [*SPANISH[:5], "这是中文。", *SPANISH[5:], "😀😀 👍", "2012 - 13"]
    findings = script_findings(lines, "es", "the MT file", "mt.txt", first_line=101)
    assert [(f.line, f.message) for f in findings] == [
        (106, "1 line(s) of the MT file are mostly in another script than Latin ('es'), e.g. Han"),
        (114, "1 line(s) of the MT file hold no letter, only emoji or other symbols"),
    ]


def test_predict_warns_about_mt_in_another_script_and_strict_refuses(tmp_path, surface_model, pairs, capsys):
    chinese = write_lines(tmp_path / "mt.zh", ["这是一个测试句子，用来检查语言。"] * 600)
    out = tmp_path / "scores.tsv"
    args = ["predict", "--model", str(surface_model), "--src", str(pairs[0]), "--mt", str(chinese), "--quiet"]
    assert main([*args, "--out", str(out)]) == 0
    err = capsys.readouterr().err.strip()
    assert err == (
        f"qe: warning: {chinese}: the MT file is mostly in Han script (100% of its letters), "
        "but the model expects 'es', written in Latin"
    )
    assert len(out.read_text().splitlines()) == 601
    assert main([*args, "--out", str(tmp_path / "strict.tsv"), "--strict"]) == 2
    assert capsys.readouterr().err.strip() == err.replace("qe: warning:", "qe: error:")
    assert not (tmp_path / "strict.tsv").exists()
    assert main([*args, "--out", str(tmp_path / "skip.tsv"), "--strict", "--no-language-check"]) == 0
    # emoji-only lines among Spanish ones: a warning naming the first such line
    mixed = write_lines(tmp_path / "mt.mixed", [*sentences(299, ES, 6), "🙂🙂🙂", *sentences(300, ES, 7)])
    args[args.index(str(chinese))] = str(mixed)
    assert main([*args, "--out", str(tmp_path / "mixed.tsv")]) == 0
    assert capsys.readouterr().err.strip() == (
        f"qe: warning: {mixed}:300: 1 line(s) of the MT file hold no letter, only emoji or other symbols"
    )


@pytest.mark.parametrize("line", ["\x00", "\u200b\u200b", "\x01\x02\x7f", "\ufeff\u200d", "\u2028"])
def test_a_line_with_nothing_visible_is_blank(tmp_path, line):
    """NUL, zero-width spaces or control characters alone were scored as a sentence."""
    from qe.infra.io import read_lines
    from qe.stream.inputs import read_input

    path = tmp_path / "mt.txt"
    path.write_text(f"una casa\n{line}\nel gato\n", encoding="utf-8")
    for read in (read_lines, read_input):
        with pytest.raises(QEInputError, match="blank line") as info:
            read(path)
        assert info.value.line == 2
