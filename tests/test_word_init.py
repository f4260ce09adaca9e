"""``qe init --words`` (issue 32, item 5): a word-level config written from a user's files (tags, or
post-edits to derive them from) that ``qe run`` trains a word model from, on toy files written here;
the tags derived from post-edits equal the hand-made ones; every bad file or option is refused in one
line naming it (and its line), exit 2, with nothing written."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from qe.cli import main
from qe.doctor.init_configs import WRITTEN_BY
from qe.run.words import load_splits, load_word_config
from qe.wordmodel.modelfile import load_word_model
from qe.words.files import read_word_level
from tests.helpers.words import toy_word_files

SIZES = {"train": (60, 0), "dev": (30, 1), "test": (30, 2)}
LANGUAGES = ["--src-lang", "en", "--tgt-lang", "de"]


@pytest.fixture()
def toy(tmp_path: Path) -> dict[str, dict[str, Path]]:
    """Each split's toy files (src, mt, pe, tags, source_tags, alignments) in ``tmp_path``."""
    return {split: toy_word_files(tmp_path, split, n, seed) for split, (n, seed) in SIZES.items()}


def init_args(toy: dict[str, dict[str, Path]], roles: tuple[str, ...], out: Path) -> list[str]:
    """``qe init --words`` arguments giving every split src, mt and the ``roles`` named."""
    argv = ["init", "--words", *LANGUAGES, "--out", str(out)]
    for split, files in toy.items():
        prefix = "" if split == "train" else f"{split}-"
        for role in ("src", "mt", *roles):
            flag = "post-edits" if role == "pe" else role.replace("_", "-")
            argv += [f"--{prefix}{flag}", str(files[role])]
    return argv


def run(config: Path, output: Path) -> dict:
    """``qe run`` on the config; its metrics.json."""
    assert main(["run", str(config), "--output-dir", str(output), "--quiet"]) == 0
    assert (output / "model.qwords").is_file()
    return json.loads((output / "metrics.json").read_text(encoding="utf-8"))


def test_init_from_tags_writes_a_config_that_qe_run_trains(toy, tmp_path, capsys):
    out = tmp_path / "en-de-words.toml"
    assert main(init_args(toy, ("tags", "source_tags"), out)) == 0
    said = capsys.readouterr().out
    assert f"wrote {out}: word level, 60 train, 30 dev, 30 test sentences, en-de" in said
    assert f"next: qe run {out} --output-dir runs/en-de-words" in said
    text = out.read_text(encoding="utf-8")
    assert text.startswith(WRITTEN_BY)
    config = tomllib.loads(text)
    assert config["name"] == "en-de-words"
    assert config["words"]["train"] == {  # relative to the config's folder
        "src": "train.src",
        "mt": "train.mt",
        "tags": "train.tags",
        "source_tags": "train.source_tags",
    }
    assert set(config["words"]) == {"src_lang", "tgt_lang", "threshold", "train", "dev", "test"}
    assert (config["words"]["src_lang"], config["words"]["tgt_lang"]) == ("en", "de")
    metrics = run(out, tmp_path / "run")
    assert metrics["level"] == "word" and metrics["train_sentences"] == 60
    mt_words = sum(len(line.split()) for line in toy["test"]["mt"].read_text().splitlines())
    assert metrics["test"]["target"]["tags"] == mt_words and metrics["test"]["gaps"]["tags"] == mt_words + 30
    model = load_word_model(tmp_path / "run" / "model.qwords")
    assert not model.nmt and set(model.thresholds) == {"target", "gaps", "source"}


def test_init_from_post_edits_only_runs(toy, tmp_path, capsys):
    out = tmp_path / "pe.toml"
    assert main(init_args(toy, ("pe",), out)) == 0
    said = capsys.readouterr().out
    assert "train: tags derived from the post-edits by qe run (source words: IBM1 links from train)" in said
    config = tomllib.loads(out.read_text(encoding="utf-8"))
    for split in SIZES:
        assert set(config["words"][split]) == {"src", "mt", "post_edits"}
    metrics = run(out, tmp_path / "run")
    assert set(metrics) >= {"dev", "test", "thresholds"} and metrics["train_sentences"] == 60


def test_tags_derived_from_post_edits_are_the_hand_made_ones(toy, tmp_path, capsys):
    # a hand-computed sentence first: t2 wrongly w2 (its word and source word BAD), `ins` inserted
    # between t3 and t4 (gap 3 BAD)
    first = {
        "src": "s1 s2 s3 s4",
        "mt": "t1 w2 t3 t4",
        "pe": "t1 t2 t3 ins t4",
        "alignments": "0-0 1-1 2-2 3-3",
        "tags": "OK OK OK BAD OK OK BAD OK OK",
        "source_tags": "OK BAD OK OK",
    }
    for role, line in first.items():
        path = toy["train"][role]
        path.write_text(f"{line}\n{path.read_text(encoding='utf-8')}", encoding="utf-8")
    derived, given = tmp_path / "derived.toml", tmp_path / "given.toml"
    assert main(init_args(toy, ("pe", "alignments"), derived)) == 0
    # alignments in every split are read as features too (the aligned family): both configs list it
    assert main(init_args(toy, ("tags", "source_tags", "alignments"), given)) == 0
    capsys.readouterr()
    for config in (derived, given):
        text = config.read_text(encoding="utf-8")
        assert "--alignments NEW.src-mt.alignments" in text
        assert load_word_config(config)["words"]["families"] == ["core", "aligned"]
    splits = load_splits(load_word_config(derived), None, progress=False)
    train = splits["train"].data
    assert (train.mt_tags[0], train.gap_tags[0], train.src_tags[0]) == (
        ("OK", "BAD", "OK", "OK"),
        ("OK", "OK", "OK", "BAD", "OK"),
        ("OK", "BAD", "OK", "OK"),
    )
    for split, files in toy.items():
        hand = read_word_level(
            files["src"], files["mt"], tags=files["tags"], source_tags=files["source_tags"]
        )
        data = splits[split].data
        assert (data.mt_tags, data.gap_tags, data.src_tags) == (hand.mt_tags, hand.gap_tags, hand.src_tags)
    # the same tags, so the same model: the same figures and thresholds from either config
    a, b = run(derived, tmp_path / "run-derived"), run(given, tmp_path / "run-given")
    for key in ("dev", "test", "thresholds", "iterations"):
        assert a[key] == b[key]


def _replace_line(path: Path, number: int, line: bytes) -> None:
    lines = path.read_bytes().split(b"\n")
    lines[number - 1] = line
    path.write_bytes(b"\n".join(lines))


def _drop_last_line(path: Path) -> None:
    path.write_bytes(b"".join(path.read_bytes().splitlines(keepends=True)[:-1]))


def _wrong_tag_count(toy: dict) -> None:
    path = toy["train"]["tags"]
    tags = path.read_text(encoding="utf-8").splitlines()[6].split()
    _replace_line(path, 7, " ".join(tags[:-1]).encode())


def _wrong_source_tag_count(toy: dict) -> None:
    path = toy["dev"]["source_tags"]
    tags = path.read_text(encoding="utf-8").splitlines()[3].split()
    _replace_line(path, 4, " ".join([*tags, "OK"]).encode())


def _unknown_tag(toy: dict) -> None:
    path = toy["test"]["tags"]
    tags = path.read_text(encoding="utf-8").splitlines()[1].split()
    _replace_line(path, 2, " ".join(["ok", *tags[1:]]).encode())


def _all_ok(toy: dict) -> None:
    path = toy["train"]["source_tags"]
    lines = path.read_text(encoding="utf-8").splitlines()
    path.write_text("".join(" ".join(["OK"] * len(line.split())) + "\n" for line in lines), encoding="utf-8")


@pytest.mark.parametrize(
    ("spoil", "roles", "where", "words"),
    [
        (_wrong_tag_count, ("tags", "source_tags"), "train.tags:7", "tags where 2N+1 ="),
        (_wrong_source_tag_count, ("tags", "source_tags"), "dev.source_tags:4", "tags where N ="),
        (_unknown_tag, ("tags", "source_tags"), "test.tags:2", "unknown tag 'ok' (expected OK or BAD)"),
        (lambda toy: _drop_last_line(toy["dev"]["mt"]), ("pe",), "dev.mt:30", "has 29 lines but"),
        (lambda toy: _drop_last_line(toy["train"]["pe"]), ("pe",), "train.pe:60", "has 59 lines but"),
        (lambda toy: _replace_line(toy["dev"]["pe"], 5, b"  "), ("pe",), "dev.pe:5", "blank line"),
        (lambda toy: _replace_line(toy["train"]["src"], 3, b"s1 \xff"), ("pe",), "train.src:3", "UTF-8"),
        (
            lambda toy: _replace_line(toy["test"]["alignments"], 2, b"0-0 9-0"),
            ("pe", "alignments"),
            "test.alignments:2",
            "alignment 9-0 out of range",
        ),
        (_all_ok, ("tags", "source_tags"), "train.source_tags", "every source word is tagged OK"),
    ],
)
def test_bad_files_are_refused_in_one_line_and_nothing_is_written(
    toy, tmp_path, capsys, spoil, roles, where, words
):
    spoil(toy)
    before = sorted(tmp_path.iterdir())
    assert main(init_args(toy, roles, tmp_path / "words.toml")) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert f"{tmp_path / where}" in err and words in err, err
    assert sorted(tmp_path.iterdir()) == before  # no config, no draft


def _without(argv: list[str], *flags: str) -> list[str]:
    out = list(argv)
    for flag in flags:
        at = out.index(flag)
        del out[at : at + 2]
    return out


@pytest.mark.parametrize(
    ("edit", "words"),
    [
        (
            lambda a: _without(a, "--dev-src", "--dev-mt", "--dev-tags", "--dev-source-tags"),
            "--words needs a dev split: --dev-src, --dev-mt and --dev-tags with --dev-source-tags, or "
            "--dev-post-edits (each kind's BAD threshold is chosen on dev)",
        ),
        (lambda a: _without(a, "--dev-source-tags"), "--dev-tags and --dev-source-tags go together"),
        (
            lambda a: _without(a, "--tags", "--source-tags"),
            "the train split needs --tags and --source-tags, or",
        ),
        (
            lambda a: _without(a, "--test-src", "--test-mt"),
            "--test-tags, --test-source-tags need --test-src and",
        ),
        (lambda a: _without(a, "--dev-mt"), "--dev-src and --dev-mt go together"),
        (
            lambda a: [*a, "--post-edits", a[a.index("--mt") + 1]],
            "or --post-edits to derive them from, not both",
        ),
        (
            lambda a: [*a, "--alignments", a[a.index("--mt") + 1]],
            "--alignments are read to derive the source tags from --post-edits, or as features when every",
        ),
        (lambda a: [*a, "--labels", a[a.index("--mt") + 1]], "--labels is for a sentence-level config"),
        (lambda a: [*a, "--light"], "--light is for a sentence-level config"),
        (lambda a: [x for x in a if x != "--words"], "are read for a word-level config: add --words"),
    ],
)
def test_options_a_word_level_run_cannot_use_are_refused_in_one_line(toy, tmp_path, capsys, edit, words):
    out = tmp_path / "words.toml"
    assert main(edit(init_args(toy, ("tags", "source_tags"), out))) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and words in err, err
    assert not out.exists()


def test_out_is_never_an_input_and_force_replaces_only_out(toy, tmp_path, capsys):
    src = toy["train"]["src"]
    named = src.rename(tmp_path / "train.src.toml")  # an input that --out could name
    toy["train"]["src"] = named
    kept = named.read_bytes()
    for extra in ([], ["--force"]):
        assert main([*init_args(toy, ("tags", "source_tags"), named), *extra]) == 2
        err = capsys.readouterr().err
        assert str(named) in err and len(err.strip().splitlines()) == 1
        assert "an input of this command" in err
        assert named.read_bytes() == kept
    out = tmp_path / "words.toml"
    assert main(init_args(toy, ("tags", "source_tags"), out)) == 0
    assert main(init_args(toy, ("pe",), out)) == 2
    assert "already exists (pass --force to replace it)" in capsys.readouterr().err
    assert "post_edits" not in out.read_text(encoding="utf-8")
    assert main([*init_args(toy, ("pe",), out), "--force"]) == 0
    assert "post_edits" in out.read_text(encoding="utf-8")
