"""``PosRules`` gives the UPOS tags spaCy's own ``attribute_ruler`` gives (spaCy is the oracle), on
hand-made rules, on every rule of the installed English and Spanish pipelines, and on real sentences."""

from __future__ import annotations

from pathlib import Path

import pytest

from qe.resources import pos
from qe.resources.posrules import PosRules

spacy = pytest.importorskip("spacy")
from spacy.tokens import Doc  # noqa: E402

RULES = [
    ([[{"TAG": "NN"}]], {"POS": "NOUN"}),
    ([[{"TAG": "NN", "LOWER": {"IN": ["something", "nothing"]}}]], {"POS": "PRON", "MORPH": "PronType=Ind"}),
    ([[{"TAG": "IN", "DEP": "mark"}]], {"POS": "SCONJ"}),  # needs a parse: never here
    ([[{"TAG": {"IN": ["DT", "WDT"]}, "DEP": {"NOT_IN": ["det", ""]}}]], {"POS": "PRON"}),  # never either
    ([[{"TAG": "IN", "DEP": {"NOT_IN": ["mark"]}}]], {"POS": "ADP"}),  # empty DEP passes NOT_IN
    ([[{"DEP": "expl"}, {"LOWER": "is"}]], {"POS": "VERB"}),  # several tokens, one needs a parse
    ([[{"TAG": "VBZ"}], [{"TAG": "VBP"}]], {"POS": "VERB"}),  # two alternatives
    ([[{"TAG": "VBZ", "ORTH": "Is"}]], {"POS": "AUX"}),  # later rule wins over the one above
    ([[{"TEXT": "has", "TAG": {"NOT_IN": ["NN"]}}]], {"POS": "AUX"}),
    ([[{"POS": "PROPN", "TAG": "NNP"}]], {"POS": "PROPN", "MORPH": "x=y"}),  # keeps the given POS
    ([[{"TAG": "NNP"}]], {"TAG": "NNP"}),  # sets no POS: ignored
    ([[{"IS_SPACE": True}]], {"POS": "SPACE", "TAG": "_SP"}),
    ([[{"TAG": "_SP", "IS_SPACE": False}]], {"POS": "X"}),
]
WORDS = ["Something", "nothing", "cat", "that", "in", "Is", "is", "are", "has", "Paris", " ", "odd", "x"]
TAGS = ["NN", "NN", "NN", "WDT", "IN", "VBZ", "VBZ", "VBP", "VBZ", "NNP", "_SP", "_SP", "XX"]
PREVIOUS = ["", "", "", "", "", "", "", "", "", "PROPN", "", "", "INTJ"]  # POS set by an earlier component
EXPECTED = ["PRON", "PRON", "NOUN", "", "ADP", "AUX", "VERB", "VERB", "AUX", "PROPN", "SPACE", "X", "INTJ"]


def _ruler(rules: list) -> object:
    ruler = spacy.blank("en").add_pipe("attribute_ruler")
    for patterns, attrs in rules:
        ruler.add(patterns, attrs)
    return ruler


def _spacy_tags(ruler, doc: Doc) -> list[str]:
    return [t.pos_ for t in ruler(Doc(doc.vocab).from_bytes(doc.to_bytes()))]


def test_hand_made_rules_give_the_tags_spacy_gives() -> None:
    ruler = _ruler(RULES)
    doc = Doc(ruler.vocab, words=WORDS, tags=TAGS, pos=PREVIOUS)
    assert _spacy_tags(ruler, doc) == EXPECTED  # the rules mean what the comments say
    rules = PosRules.of(ruler)
    assert rules is not None and len(rules.rules) == 9  # the DEP-only and the TAG-only rules dropped
    assert list(rules.tags(doc)) == EXPECTED
    assert list(rules.tags(doc)) == EXPECTED  # again, from the memo
    assert rules.tags(Doc(ruler.vocab, words=[])) == ()


@pytest.mark.parametrize(
    "patterns",
    [
        [[{"TEXT": {"REGEX": "^a"}}]],  # an operator it does not know
        [[{"TAG": "DT"}, {"TAG": "NN"}]],  # two tokens that can match without a parse
        [[{"LENGTH": 3}]],  # an attribute it does not read
        [[{}]],  # matches every token
        [[{"TAG": "NN", "OP": "?"}]],
    ],
)
def test_rules_it_cannot_read_leave_the_work_to_spacy(patterns: list) -> None:
    assert PosRules.of(_ruler([([[{"TAG": "NN"}]], {"POS": "NOUN"}), (patterns, {"POS": "DET"})])) is None
    assert PosRules.of(_ruler([(patterns, {"LEMMA": "x"})])) is not None  # sets no POS: not needed


def _pipeline_or_skip(lang: str):
    if not pos.tagger_available(lang):
        pytest.skip(f"no spaCy pipeline for {lang}")
    return pos.upos_tagger(lang).nlp


@pytest.mark.parametrize("lang", ["en", "es"])
def test_every_rule_of_the_installed_pipelines(lang: str) -> None:
    """One token per (word, tag) any rule of the pipeline's ruler names, plus every tag with a plain
    word and a space token: the same POS as spaCy's ruler, whatever POS an earlier component left."""
    nlp = _pipeline_or_skip(lang)
    ruler = nlp.get_pipe("attribute_ruler")
    rules = PosRules.of(ruler)
    assert rules is not None
    labels = set()
    for name in ("tagger", "morphologizer"):
        if name in nlp.pipe_names:
            labels |= {str(label).split("__")[0] for label in nlp.get_pipe(name).labels}
    words, tags = [], []
    for entry in ruler.patterns:
        for pattern in entry["patterns"]:
            for spec in pattern:
                lowers = spec.get("LOWER", "word")
                for lower in lowers.get("IN", []) if isinstance(lowers, dict) else [lowers]:
                    tag = spec.get("TAG")
                    for t in tag.get("IN", []) if isinstance(tag, dict) else [tag or "NN"]:
                        words += [lower, lower.capitalize()]
                        tags += [t, t]
    for tag in sorted(labels):
        words.append("plain")
        tags.append(tag)
    words.append("  ")
    tags.append("_SP")
    for previous in ("", "NOUN", "PROPN"):
        doc = Doc(nlp.vocab, words=words, tags=tags, pos=[previous] * len(words))
        assert list(rules.tags(doc)) == _spacy_tags(ruler, doc)


@pytest.mark.parametrize(("lang", "side"), [("en", "src"), ("es", "mt")])
def test_real_sentences_are_tagged_as_with_spacys_ruler(lang: str, side: str, data_dir: Path) -> None:
    from qe.data import load_registered
    from qe.text.processing import TextConfig, TextProcessor

    _pipeline_or_skip(lang)
    data = load_registered("wmt12-en-es", "test", data_dir=data_dir)
    tokens = TextProcessor(TextConfig(lang=lang, case="keep")).tokenize_many(getattr(data, side)[:150])
    fast, slow = pos.UPOSTagger(lang), pos.UPOSTagger(lang)
    assert slow.nlp is not None
    slow._rules = None  # spaCy's attribute_ruler itself
    assert fast.tag(tokens) == slow.tag(tokens)
