"""``qe init``'s default: every family the pair supports here, each in or out with its reason in the written
config; a bundle config from the user's training split that ``qe run`` builds when missing; the MLQE-PE best
systems' learner, its members chosen on dev or by CV. And the wrong things a user may pass, each one line."""

from __future__ import annotations

import json
import shutil
import tomllib

import pytest

from qe.cli import main
from qe.doctor.choice import choose_families
from qe.resources.mt2 import installed_pairs
from qe.run.config import load_config
from tests.helpers import write_lines
from tests.helpers.bundles import needs_kenlm
from tests.helpers.toy import EN, ES, sentences

HAS_APERTIUM = shutil.which("apertium-wblank-mode") is not None and "eng-spa" in installed_pairs()


def user_files(folder, pairs: int = 40, dev: int = 0) -> list[str]:
    """Training (with post-edits), optional dev and test files of an English-Spanish toy set; qe init's
    arguments for them."""
    args = []
    for split, n, seed in (("train", pairs, 0), ("dev", dev, 2), ("test", 20, 1)):
        if not n:
            continue
        src, mt = sentences(n, EN, seed), sentences(n, ES, seed + 10)
        labels = [f"{(len(s) % 9) / 10 + (len(m) % 5) / 50:.3f}" for s, m in zip(src, mt, strict=True)]
        prefix = {"train": "--", "dev": "--dev-", "test": "--test-"}[split]
        for role, lines in (("src", src), ("mt", mt), ("labels", labels)):
            args += [f"{prefix}{role}", str(write_lines(folder / f"{split}.{role}", lines))]
    write_lines(folder / "train.pe", sentences(pairs, ES, 10))
    args += ["--post-edits", str(folder / "train.pe")]
    return [*args, "--src-lang", "en", "--tgt-lang", "es", "--label-range", "0", "1"]


def comment_block(text: str, heading: str) -> dict[str, str]:
    """The ``#   family  reason`` lines under ``# In`` or ``# Out`` in a written config."""
    lines = text.splitlines()
    start = lines.index(heading) + 1
    found = {}
    for line in lines[start:]:
        if not line.startswith("#   "):
            break
        family, _, reason = line[4:].partition(" ")
        found[family] = reason.strip()
    return found


@needs_kenlm
def test_the_config_says_which_families_are_in_and_out_and_why(tmp_path, capsys):
    """Every family in ``families`` is explained by a comment, every family left out too, and they are
    the ones the pair supports on this machine; the terminal says the same."""
    assert main(["init", *user_files(tmp_path), "--out", str(tmp_path / "en-es.toml")]) == 0
    out = capsys.readouterr().out
    text = (tmp_path / "en-es.toml").read_text()
    document = tomllib.loads(text)
    chosen = document["features"]["families"]
    explained_in = comment_block(text, "# In (what each reads):")
    assert list(explained_in) == chosen and all(explained_in.values())
    expected = choose_families("en", "es", post_edits=True)
    assert chosen == [c.family for c in expected if c.chosen]
    out_of = comment_block(text, "# Out (why):") if "# Out (why):" in text else {}
    assert set(out_of) == {c.family for c in expected if not c.chosen}
    for choice in expected:
        assert f"  {'+' if choice.chosen else '-'} {choice.family}: {choice.why}" in out
    assert {"surface", "baseline17", "lm", "ibm1", "edits"} <= set(chosen)  # here, always
    assert "decoder" in out_of and "nmt" in out_of  # no logs given
    if HAS_APERTIUM:
        assert "pseudoref" in chosen and document["features"]["settings"]["embeddings"]["pseudo_ref"] is True


@pytest.mark.slow
@needs_kenlm
def test_the_config_runs_and_builds_its_bundle_from_the_training_split(tmp_path, capsys, monkeypatch):
    """``qe run`` builds the bundle the config names (from the training split and post-edits) when it is
    missing, then fits the average whose members are chosen on the dev split."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("QE_CACHE_DIR", str(tmp_path / "cache"))
    argv = ["init", *user_files(tmp_path, pairs=40, dev=20), "--out", "en-es.toml"]
    assert main(argv) == 0
    config = load_config(tmp_path / "en-es.toml")
    assert config.learner.name == "average" and config.data.fit_on == "train+dev"
    assert config.features.resources_config == str(tmp_path / "en-es-resources.toml")
    resources = tomllib.loads((tmp_path / "en-es-resources.toml").read_text())
    assert resources["corpora"]["qe"]["cross_fit"] == 5 and "edits" in resources
    assert str(tmp_path / "test.src") in resources["leakage"]["eval_files"]
    if HAS_APERTIUM:
        assert resources["mt2"] == {"engine": "apertium", "pair": "eng-spa"}
    document = tomllib.loads((tmp_path / "en-es.toml").read_text())
    given = document["features"]["families"]
    families = [f for f in given if f in ("surface", "baseline17", "lm", "ibm1", "edits")]
    text = (tmp_path / "en-es.toml").read_text()
    text = text.replace(f"families = {json.dumps(given)}", f"families = {json.dumps(families)}")
    (tmp_path / "en-es.toml").write_text(text)  # the families that read the bundle: the run stays short
    assert not (tmp_path / "models" / "resources" / "en-es").exists()
    assert main(["run", "en-es.toml", "--output-dir", "run", "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "models/resources/en-es is not built yet: building it from" in err
    assert (tmp_path / "models" / "resources" / "en-es" / "manifest.json").is_file()
    metrics = (tmp_path / "run" / "metrics.json").read_text()
    assert '"grid_chosen_on": "dev"' in metrics


def test_choices_follow_what_this_machine_has():
    """Each family in or out by what exists offline: the encoder's languages, dictionaries, Apertium."""
    by_name = {c.family: c for c in choose_families("et", "en", post_edits=False, inputs={"nmt_logprobs"})}
    assert by_name["embeddings"].chosen and by_name["embeddings"].settings["sides"] == "mt"  # et unknown
    assert not by_name["edits"].chosen and "--post-edits" in by_name["edits"].why
    assert by_name["nmt"].chosen and by_name["nmt"].settings == {"model_score": False}  # no nmt_score
    assert not by_name["pseudoref"].chosen and "et-en" in by_name["pseudoref"].why
    assert not by_name["linguistic"].chosen
    nowhere = {c.family: c for c in choose_families("xx", "yy")}
    assert not nowhere["embeddings"].chosen and "'yy'" in nowhere["embeddings"].why


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--dev-src", "train.src"], "--dev-src, --dev-mt and --dev-labels go together"),
        (["--train-input", "nmt_logprobs"], "expected NAME=FILE"),
        (["--train-input", "colour=train.src"], "colour: not an input a family reads"),
        (["--train-input", "nmt_logprobs=nowhere.txt"], "nmt_logprobs: file not found"),
        (
            ["--train-input", "nmt_logprobs=train.src"],
            "--train-input names nmt_logprobs, --test-input does not",
        ),
        (["--dev-input", "nmt_logprobs=train.src"], "--dev-input needs a dev split"),
        (["--corpus", "train.src", "test.mt"], "--corpus: 40 source lines but 20 target lines"),
        (["--corpus", "train.src", "nowhere.es"], "nowhere.es"),
        (["--light", "--corpus", "train.src", "train.mt"], "--light writes the quick surface config"),
    ],
)
def test_wrong_options_are_one_line(tmp_path, capsys, monkeypatch, extra, message):
    monkeypatch.chdir(tmp_path)
    argv = ["init", *user_files(tmp_path), *extra, "--out", "c.toml"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1, err
    assert not (tmp_path / "c.toml").exists() and not (tmp_path / "c-resources.toml").exists()


def test_an_input_of_another_length_names_its_file(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_lines(tmp_path / "train.lp", ["-0.5 -0.1"] * 39)
    write_lines(tmp_path / "test.lp", ["-0.5 -0.1"] * 20)
    extra = ["--train-input", "nmt_logprobs=train.lp", "--test-input", "nmt_logprobs=test.lp"]
    assert main(["init", *user_files(tmp_path), *extra, "--out", "c.toml"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith("train.lp: has 39 lines but the train split has 40 pairs"), err


def test_a_bundle_config_qe_init_did_not_write_is_never_replaced(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "c-resources.toml").write_text("# mine\n")
    assert main(["init", *user_files(tmp_path), "--out", "c.toml", "--force"]) == 2
    assert "was not written by qe init" in capsys.readouterr().err
    assert (tmp_path / "c-resources.toml").read_text() == "# mine\n" and not (tmp_path / "c.toml").exists()
