"""``qe run`` with a ``[words]`` config and ``qe predict --words``, end to end on small slices of en-de
in a temporary folder: the run directory's files, the JSONL tags equal to the saved model's
probabilities and thresholds, training from a user's own files with post-edits only, and bad input
refused in one line naming the file and line (exit 2)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from qe.cli import main
from qe.wordmodel.modelfile import load_word_model
from qe.words.files import read_word_level
from tests.helpers import write_lines
from tests.helpers.words import predict_words_args

SMALL = """
name = "words-small"
seed = 1

[words]
dataset = "mlqe-pe/en-de"
max_train_sentences = 300
max_iter = 40
"""


def mlqe(data_dir: Path, split: str, suffix: str) -> Path:
    return data_dir / "mlqe-pe" / "post-editing" / f"en-de-{split}" / f"{split}.{suffix}"


@pytest.fixture(scope="module")
def run_dir(data_dir, tmp_path_factory):
    folder = tmp_path_factory.mktemp("words")
    config = write_lines(folder / "small.toml", SMALL.splitlines())
    assert main(["run", str(config), "--output-dir", str(folder / "run"), "--quiet", "--json"]) == 0
    return folder / "run"


@pytest.mark.data
def test_a_word_run_writes_its_directory(run_dir, data_dir):
    names = {p.name for p in run_dir.iterdir()}
    run_files = {"config.toml", "signature.txt", "metrics.json", "model.qwords", ".qe-output"}
    assert names == run_files | {"word_predictions.dev.jsonl", "word_predictions.test.jsonl"}
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["level"] == "word" and metrics["train_sentences"] == 300
    for kind in ("target", "gaps", "source"):
        for split in ("dev", "test"):  # a dataset run scores MLQE-PE's test20 as its test
            assert set(metrics[split][kind]) == {"mcc", "f1_ok", "f1_bad", "f1_mult", "tags"}
        assert 0 <= metrics["thresholds"][kind] <= 1
    tokens = sum(len(line.split()) for line in mlqe(data_dir, "test20", "mt").open())
    assert metrics["test"]["target"]["tags"] == tokens and metrics["test"]["gaps"]["tags"] == tokens + 1000
    assert metrics["dev"]["target"]["mcc"] > 0.1
    assert (run_dir / "signature.txt").read_text().startswith("words|data:mlqe-pe/en-de@")
    assert "|tagger:hgb|" in metrics["signature"] and not metrics["crf_l2"]  # the default learner
    assert metrics["learners"] == dict.fromkeys(("target", "gaps", "source"), "hgb")
    assert not load_word_model(run_dir / "model.qwords").nmt


@pytest.mark.data
def test_predict_words_writes_the_models_tags(run_dir, data_dir, tmp_path):
    src = write_lines(tmp_path / "s.txt", mlqe(data_dir, "dev", "src").read_text().splitlines()[:50])
    mt = write_lines(tmp_path / "m.txt", mlqe(data_dir, "dev", "mt").read_text().splitlines()[:50])
    out = tmp_path / "tags.jsonl"
    model_path = run_dir / "model.qwords"
    assert main(predict_words_args(model_path, src, mt, out)) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    data = read_word_level(src, mt)
    model = load_word_model(model_path)
    tables, probability = model.tag(data)
    assert [row["id"] for row in rows] == list(range(50))
    for kind, field in (("target", "mt"), ("gaps", "gap"), ("source", "src")):
        for row, expected in zip(rows, tables.sentences(kind, probability[kind]), strict=True):
            assert row[f"{field}_bad_probability"] == expected.tolist()
            assert all(np.isfinite(row[f"{field}_bad_probability"]))
            tags = ["BAD" if p >= model.thresholds[kind] else "OK" for p in expected]
            assert row[f"{field}_tags"] == tags
    for row, src_tokens, mt_tokens in zip(rows, data.src, data.mt, strict=True):
        assert len(row["mt_tags"]) == len(mt_tokens) and len(row["gap_tags"]) == len(mt_tokens) + 1
        assert len(row["src_tags"]) == len(src_tokens)
        assert (row["src_tokens"], row["mt_tokens"]) == (list(src_tokens), list(mt_tokens))


@pytest.mark.data
def test_training_from_own_files_with_post_edits_only(data_dir, tmp_path):
    for split, n in (("train", 300), ("dev", 100)):
        for suffix in ("src", "mt", "pe"):
            lines = mlqe(data_dir, split, suffix).read_text(encoding="utf-8").splitlines()[:n]
            write_lines(tmp_path / f"{split}.{suffix}", lines)
    config = tmp_path / "own.toml"
    config.write_text(
        "[words]\nmax_iter = 30\n"
        + "".join(
            f'[words.{split}]\nsrc = "{split}.src"\nmt = "{split}.mt"\npost_edits = "{split}.pe"\n'
            for split in ("train", "dev")
        )
    )
    assert main(["run", str(config), "--output-dir", str(tmp_path / "run"), "--quiet"]) == 0
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert metrics["dev"]["target"]["tags"] == sum(len(line.split()) for line in (tmp_path / "dev.mt").open())


@pytest.mark.data
@pytest.mark.parametrize(
    ("mt_text", "where", "message"),
    [
        (b"Ein Satz .\n\nnoch einer .\n", "m.txt:2", "blank line"),
        (b"Ein Satz .\n  \t \nnoch einer .\n", "m.txt:2", "blank line"),
        (b"Ein Satz .\nzwei\xff .\nnoch einer .\n", "m.txt:2", "invalid UTF-8"),
        (b"Ein Satz .\nzwei .\n", "m.txt:3", "has 2 lines but"),
        (b"Ein Satz .\nzwei .\n" + b"x " * 2001 + b"\n", "m.txt:3", "2,001 tokens"),
    ],
)
def test_predict_words_refuses_bad_input_in_one_line(run_dir, tmp_path, capsys, mt_text, where, message):
    src = write_lines(tmp_path / "s.txt", ["A sentence .", "two .", "one more ."])
    mt = write_lines(tmp_path / "m.txt", mt_text)
    out = tmp_path / "tags.jsonl"
    model = run_dir / "model.qwords"
    code = main(predict_words_args(model, src, mt, out))
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1
    assert where in err and message in err and "Traceback" not in err
    assert not out.exists()


@pytest.mark.data
def test_predict_words_refuses_nmt_inputs_the_model_does_not_read(run_dir, tmp_path, capsys):
    src = write_lines(tmp_path / "s.txt", ["A sentence ."])
    mt = write_lines(tmp_path / "m.txt", ["Ein Satz ."])
    pieces = write_lines(tmp_path / "p.txt", ["Ein Satz ."])
    logprobs = write_lines(tmp_path / "l.txt", ["-0.1 -0.2 -0.3 -0.4"])
    args = predict_words_args(run_dir / "model.qwords", src, mt)
    assert main([*args, "--nmt-tokens", str(pieces), "--nmt-logprobs", str(logprobs)]) == 2
    assert "without NMT log-probabilities" in capsys.readouterr().err
    assert main([*args, "--format", "wmt12"]) == 2
    assert "--words writes JSONL" in capsys.readouterr().err


AUTO = SMALL.replace('name = "words-small"', 'name = "words-auto"') + 'learner = "auto"\n'


@pytest.mark.slow
@pytest.mark.data
def test_a_run_with_learner_auto_chooses_each_kind_on_dev_and_records_it(data_dir, tmp_path):
    config = write_lines(tmp_path / "auto.toml", AUTO.splitlines())
    run = tmp_path / "run"
    assert main(["run", str(config), "--output-dir", str(run), "--quiet"]) == 0
    metrics = json.loads((run / "metrics.json").read_text())
    model = load_word_model(run / "model.qwords")
    assert metrics["learner"] == "auto" and model.manifest["tagger"]["learner"] == "auto"
    assert metrics["learners"] == model.learners
    assert set(metrics["iterations"]) == set(metrics["crf_l2"]) == {"target", "gaps", "source"}
    for kind, learner in metrics["learners"].items():
        candidates = metrics["learner_dev"][kind]
        assert set(candidates) == {"hgb", "crf"}
        best = max(candidates, key=lambda name: (candidates[name]["mcc"], name == "hgb"))
        assert learner == best and metrics["thresholds"][kind] == candidates[learner]["threshold"]
        assert metrics["dev"][kind]["mcc"] == pytest.approx(candidates[learner]["mcc"], abs=1e-5)
        assert model.manifest["kinds"][kind]["learner"] == learner
        assert set(model.manifest["kinds"][kind]["candidates"]) == {"hgb", "crf"}
    used = ",".join(f"{kind}={learner}" for kind, learner in metrics["learners"].items())
    assert f"|tagger:auto:{used}|" in metrics["signature"]
    assert (run / "signature.txt").read_text().strip() == metrics["signature"]
    assert main(["report", str(run)]) == 0
    assert "learners (hgb: gradient boosting, crf: linear-chain CRF)" in (run / "report.md").read_text()
