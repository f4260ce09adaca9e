"""Per-token coarse POS and named-entity flags of pre-tokenized sentences, for word families.

spaCy (``qe.text.nlp``) tags the tokens as given (a ``Doc`` of the sentence's own tokens, so one
value per token, never re-tokenized), with its tagger, attribute ruler and NER (no parser, no
lemmatizer); results are memoised per process by (language, sentence), so the ``mismatch`` and
``lmclass`` families tag each sentence once. A language without an installed pipeline has none:
:func:`ner_language` says so and the families fall back to what they can do without.
"""

from __future__ import annotations

from qe.infra.errors import QEInputError
from qe.text.nlp import load_pipeline, missing_pipeline, parsing, pipeline_for

_MEMO: dict[tuple[str, tuple[str, ...]], tuple[tuple[str, ...], tuple[bool, ...]]] = {}
_MEMO_LIMIT = 200_000


def ner_language(lang: str | None) -> bool:
    """Whether ``lang`` has an installed spaCy pipeline (POS and named entities)."""
    return lang is not None and pipeline_for(lang) is not None


def why_not(lang: str | None, role: str) -> str:
    """One clause: why ``lang`` has no POS / entity tagger here."""
    if lang is None:
        return f"no {role} language given"
    return missing_pipeline(lang, role) or ""


def analyse(lang: str, sentences: list[list[str]]) -> list[tuple[tuple[str, ...], tuple[bool, ...]]]:
    """Per sentence, each token's coarse POS (UPOS) and whether it lies in a named entity."""
    from spacy.tokens import Doc

    todo = [words for words in dict.fromkeys(tuple(s) for s in sentences) if (lang, words) not in _MEMO]
    if todo:
        name = pipeline_for(lang)  # an installed package by its known name, never a path
        if name is None:
            raise QEInputError(f"no spaCy pipeline to tag {lang!r}: {why_not(lang, 'the language')}")
        nlp = load_pipeline(name, exclude=("parser", "lemmatizer"))
        if len(_MEMO) + len(todo) > _MEMO_LIMIT:
            _MEMO.clear()
        with parsing(nlp):
            docs = [Doc(nlp.vocab, words=list(words)) for words in todo if words]
            for doc in nlp.pipe(docs, batch_size=256):
                words = tuple(token.text for token in doc)
                _MEMO[(lang, words)] = (
                    tuple(token.pos_ or "X" for token in doc),
                    tuple(token.ent_iob_ in ("B", "I") for token in doc),
                )
        _MEMO.setdefault((lang, ()), ((), ()))
    return [_MEMO[(lang, tuple(s))] for s in sentences]
