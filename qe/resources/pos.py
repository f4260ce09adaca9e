"""Part-of-speech resources: UPOS tagging of tokenized sentences with spaCy, and POS n-gram LMs.

A language spaCy has no installed pipeline for is tagged with Hunspell word classes where they
exist (``qe.resources.wordclass``: German), which use the same tag names (``tagger_for``).

Tags are spaCy's Universal POS tags (``token.pos_``), assigned to the tokens of the resource
bundle's tokenizer, not spaCy's own: each sentence is tokenized with the bundle's text settings
with case kept (``cased_config``; the token boundaries are those of the lower-cased tokens the
LMs and IBM1 tables use) and handed to the pipeline as a pre-tokenized ``Doc``. So a POS LM built
by ``build_pos_lm`` and the POS features of ``qe.features.lm`` / ``qe.features.ibm1`` see the same
kind of tag sequence, one tag per bundle token.

``COARSE`` maps UPOS to the coarse tag set shared by both languages that SDLLW used for their
POS-agreement features (noun, verb, adjective, adverb, preposition, determiner, number,
punctuation); every other tag is ``other``, which never counts as agreement.
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from qe.infra.errors import QEInputError
from qe.infra.memo import make_room
from qe.text.nlp import PIPELINES as DEFAULT_PIPELINES
from qe.text.nlp import language_of, parsing
from qe.text.processing import TextConfig, TextProcessor

SIDE_NAMES = {"src": "the source language", "tgt": "the target language"}

UPOS_COMPONENTS = ("tok2vec", "tagger", "morphologizer", "attribute_ruler")
"""The pipeline components that assign ``pos_``; the rest (parser, NER, lemmatizer) are skipped."""

COARSE: dict[str, str] = {
    "NOUN": "noun",
    "PROPN": "noun",
    "VERB": "verb",
    "AUX": "verb",
    "ADJ": "adj",
    "ADV": "adv",
    "ADP": "prep",
    "DET": "det",
    "NUM": "num",
    "PUNCT": "punct",
}
"""UPOS -> SDLLW's coarse shared tag set; tags not listed map to ``OTHER``."""

OTHER = "other"
EMPTY_TAG = "X"  # spaCy leaves pos_ empty when a pipeline has no POS component for a token


def coarse_tag(upos: str) -> str:
    """The coarse shared tag of a UPOS tag (``other`` for pronouns, particles, symbols, ...)."""
    return COARSE.get(upos, OTHER)


def cased_config(config: TextConfig) -> TextConfig:
    """The same tokenization with case kept: same token boundaries, original casing (for tagging)."""
    return dataclasses.replace(config, case="keep", truecase_model=None)


# --------------------------------------------------------------------------------------------------
# Pipelines


def pipeline_name(lang: str) -> str:
    """The spaCy pipeline used for ``lang`` (``qe.text.nlp.PIPELINES``; QEInputError for a language
    spaCy has no pipeline for)."""
    if language_of(lang) not in DEFAULT_PIPELINES:
        known = ", ".join(sorted(DEFAULT_PIPELINES))
        raise QEInputError(f"no spaCy pipeline for language {lang!r} (spaCy has them for: {known})")
    return DEFAULT_PIPELINES[language_of(lang)]


def pipeline_package(lang: str) -> str | None:
    """The installed spaCy pipeline package for ``lang``, found without loading it (None if none)."""
    from qe.text import nlp

    return nlp.pipeline_for(lang)


def tagger_available(lang: str) -> bool:
    """Whether spaCy and a pipeline for ``lang`` are installed (checked without loading anything)."""
    return pipeline_package(lang) is not None


def _load_pipeline(lang: str) -> Any:
    """The pipeline for ``lang`` without the components that do not assign ``pos_``."""
    from qe.text import nlp

    return nlp.load_pipeline(pipeline_name(lang), exclude=("parser", "ner", "lemmatizer", "senter"))


class UPOSTagger:
    """Tags pre-tokenized sentences with spaCy UPOS tags; one instance per language.

    The pipeline is loaded on first use and not pickled (a joblib worker loads its own); results
    are memoised per sentence. The attribute ruler's UPOS rules are applied by
    ``qe.resources.posrules.PosRules`` (the same tags, faster) when it understands them all.
    """

    _MEMO_LIMIT = 200_000

    def __init__(self, lang: str, batch_size: int = 256) -> None:
        self.lang = lang
        self.batch_size = batch_size
        self._nlp: Any = None
        self._rules: Any = None
        self._memo: dict[tuple[str, ...], tuple[str, ...]] = {}

    def __getstate__(self) -> dict:
        return {"lang": self.lang, "batch_size": self.batch_size, "_nlp": None, "_rules": None, "_memo": {}}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)

    @property
    def nlp(self) -> Any:
        """The spaCy pipeline (loaded on first use)."""
        if self._nlp is None:
            from qe.resources.posrules import PosRules

            nlp = _load_pipeline(self.lang)
            ruler = nlp.get_pipe("attribute_ruler") if "attribute_ruler" in nlp.pipe_names else None
            self._rules = PosRules([]) if ruler is None else PosRules.of(ruler)
            self._nlp = nlp
        return self._nlp

    def describe(self) -> str:
        """``package==version`` of the pipeline (without loading it), for signatures and manifests."""
        package = pipeline_package(self.lang)
        if package is None:
            return "none"
        try:
            version = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            version = "?"
        return f"{package}=={version}"

    def tag(self, sentences: Sequence[Sequence[str]]) -> list[list[str]]:
        """One UPOS tag per token of each sentence (an empty sentence gives ``[]``)."""
        keys = [tuple(tokens) for tokens in sentences]
        todo = [k for k in dict.fromkeys(keys) if k and k not in self._memo]
        if todo:
            make_room(self._memo, self._MEMO_LIMIT, adding=len(todo))
            self._memo.update(zip(todo, self._run(todo), strict=True))
        return [list(self._memo[k]) if k else [] for k in keys]

    def _run(self, sentences: list[tuple[str, ...]]) -> list[tuple[str, ...]]:
        from spacy.tokens import Doc

        nlp = self.nlp
        rules = self._rules
        enable = [
            n for n in nlp.pipe_names if n in UPOS_COMPONENTS and (rules is None or n != "attribute_ruler")
        ]
        docs = (Doc(nlp.vocab, words=list(words)) for words in sentences)
        with parsing(nlp), nlp.select_pipes(enable=enable):
            tagged = nlp.pipe(docs, batch_size=self.batch_size)
            if rules is None:
                return [tuple(t.pos_ or EMPTY_TAG for t in doc) for doc in tagged]
            return [tuple(tag or EMPTY_TAG for tag in rules.tags(doc)) for doc in tagged]


_TAGGERS: dict[str, UPOSTagger] = {}


def clear_tag_memos() -> None:
    """Empty this process's taggers' per-sentence memos (a streamed run after each chunk, a service
    after each request: memory then does not grow with the distinct sentences seen)."""
    for tagger in _TAGGERS.values():
        tagger._memo.clear()


_TAGGED: Counter[str] = Counter()  # sentences handed to tag_sentences in this process, by language


def tagged_sentences() -> int:
    """How many sentences ``tag_sentences`` was asked to tag in this process, both sides and all
    taggers together, each time it was asked (whether or not a tagger's memo knew the sentence)."""
    return sum(_TAGGED.values())


def upos_tagger(lang: str) -> UPOSTagger:
    """The process-wide UPOS tagger for a language."""
    if lang not in _TAGGERS:
        _TAGGERS[lang] = UPOSTagger(lang)
    return _TAGGERS[lang]


def tag_sentences(
    sentences: Sequence[str], tokens: Sequence[Sequence[str]], config: TextConfig, tagger: Any
) -> list[list[str]]:
    """UPOS tags aligned with ``tokens`` (the bundle's tokens of ``sentences``).

    The raw sentences are re-tokenized with case kept, which gives the same boundaries; should a
    sentence ever tokenize differently, its lower-cased tokens are tagged instead.
    """
    _TAGGED[config.lang] += len(sentences)
    cased = TextProcessor(cased_config(config)).tokenize_many(sentences)
    words = [c if len(c) == len(t) else list(t) for c, t in zip(cased, tokens, strict=True)]
    return tagger.tag(words)


# --------------------------------------------------------------------------------------------------
# POS language models


def build_pos_lm(
    corpus_lines: Iterable[str],
    lang: str,
    out_path: Path | str,
    order: int = 5,
    *,
    text: TextConfig | None = None,
    tagger: Any = None,
    binary: bool = True,
    memory: str = "20%",
    n_jobs: int = 1,
    progress: bool = False,
    label: str | None = None,
) -> dict[str, Any]:
    """Tag raw corpus lines with UPOS and train an ``order``-gram KenLM on the tag sequences.

    ``text`` is the bundle side's text settings (default: ``TextConfig(lang)``), so the tags are
    those of the tokens the features will see; ``tagger`` defaults to ``upos_tagger(lang)``;
    ``label`` names the model in messages (``poslm.src``).
    Blank lines are skipped. Returns a summary for the bundle manifest: sentences, tokens,
    order, the tagger's ``package==version`` and the tag counts.
    """
    if not 3 <= int(order) <= 6:
        raise QEInputError(f"POS language model order must be from 3 to 6, got {order!r}")
    from qe.resources.lm import train_lm

    config = cased_config(text if text is not None else TextConfig(lang=lang))
    tagger = tagger if tagger is not None else tagger_for(lang)
    lines = [line for line in corpus_lines if line.strip()]
    tokens = [t for t in TextProcessor(config).tokenize_many(lines, n_jobs=n_jobs, progress=progress) if t]
    if not tokens:
        raise QEInputError(f"POS LM ({lang}): the corpus holds no non-empty sentence", out_path)
    tags = tagger.tag(tokens)
    counts = Counter(tag for sentence in tags for tag in sentence)
    sequences = (" ".join(sentence) for sentence in tags)
    train_lm(sequences, out_path, order=int(order), binary=binary, memory=memory, label=label)
    return {
        "sentences": len(tags),
        "tokens": sum(counts.values()),
        "order": int(order),
        "tagger": tagger.describe() if hasattr(tagger, "describe") else type(tagger).__name__,
        "tag_counts": dict(sorted(counts.items())),
    }


# --------------------------------------------------------------------------------------------------
# Taggers of a resource bundle


def tagger_for(lang: str) -> Any:
    """The tagger of a language: spaCy's when its pipeline is installed, else Hunspell word classes
    (``qe.resources.wordclass``) where they exist, else spaCy's (which names what to install)."""
    from qe.resources import wordclass

    if not tagger_available(lang) and wordclass.available(lang):
        return wordclass.word_tagger(language_of(lang))
    return upos_tagger(lang)


def missing_language_tagger(lang: str, role: str) -> str | None:
    """What keeps ``tagger_for(lang)`` from tagging (one clause naming the pipeline and how to
    install it), or None."""
    from qe.resources import wordclass
    from qe.text import nlp

    problem = nlp.missing_pipeline(lang, role)
    return None if problem is None or wordclass.available(lang) else problem


def bundle_tagger(resources: Any, side: str) -> Any:
    """The UPOS tagger of one bundle side: a member ``tagger.<side>`` if the bundle has one (any
    object with ``tag(list of token lists) -> list of tag lists``), else ``tagger_for`` its language."""
    if f"tagger.{side}" in resources:
        return resources.get(f"tagger.{side}")
    return tagger_for(resources.text_config(side).lang)


def missing_tagger(resources: Any, side: str) -> str | None:
    """What keeps ``bundle_tagger`` from tagging this side (one clause naming the pipeline and how
    to install it), or None."""
    if f"tagger.{side}" in resources:
        return None
    return missing_language_tagger(resources.text_config(side).lang, SIDE_NAMES[side])


def pos_pieces(resources: Any, members: Sequence[str] = ()) -> list[str]:
    """Every piece POS features lack in this bundle: taggers of both sides, then the
    named bundle members (POS LMs)."""
    if resources is None:
        return ["a resource bundle"]
    missing = [m for side in ("src", "tgt") if (m := missing_tagger(resources, side))]
    return missing + [f"the bundle member {name}" for name in members if name not in resources]


def pos_switch(family: str, setting: Any, resources: Any, members: Sequence[str] = ()) -> bool:
    """Resolve a family's ``pos`` setting: True needs every piece (else one error naming each
    missing one); "auto" is True when nothing is missing, else False, silently: what a config loses
    is said once, before extraction, by ``qe.doctor.tagless``."""
    if setting is False:
        return False
    missing = pos_pieces(resources, members)
    if setting is True and missing:
        raise QEInputError(f"{family}: pos = true but missing: {'; '.join(missing)} (or set pos = false)")
    return not missing


def describe_tagger(tagger: Any) -> str:
    """A tagger's identity for signatures: ``package==version`` for spaCy, else its class name."""
    return tagger.describe() if hasattr(tagger, "describe") else type(tagger).__name__
