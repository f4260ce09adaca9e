"""A cheap language check from function words, to refuse input in a different language than a model's."""

from __future__ import annotations

import re
from collections import Counter

from qe.errors import QEInputError

# The most frequent function words of each language (short, unambiguous ones preferred).
_FUNCTION_WORD_TEXT = {
    "en": "the of and to in is that for it with was on are be this by have from not but which",
    "es": "el la de que y en los las del se por un una con para es al lo como más pero sus",
    "fr": "le la les de des et est une un du que qui dans pour pas sur au avec ce il sont",
    "de": "der die das und ist nicht ein eine zu den von mit sich des auf für im dem auch",
    "it": "il di che e la per un una non sono del della gli le nel con ma è anche come",
    "pt": "o de que e do da em um para é com não uma os no se na por mais as dos como",
    "nl": "de het een en van in is dat op te zijn niet met voor er maar ook aan om",
}
FUNCTION_WORDS: dict[str, frozenset[str]] = {
    lang: frozenset(text.split()) for lang, text in _FUNCTION_WORD_TEXT.items()
}
_WORD = re.compile(r"[^\W\d_]+")


def language_shares(sentences: list[str], max_sentences: int = 2000) -> dict[str, float]:
    """Share of word tokens that are function words of each known language."""
    counts: Counter[str] = Counter()
    total = 0
    for sentence in sentences[:max_sentences]:
        for word in _WORD.findall(sentence.lower()):
            total += 1
            for lang, words in FUNCTION_WORDS.items():
                if word in words:
                    counts[lang] += 1
    return {lang: counts[lang] / total if total else 0.0 for lang in FUNCTION_WORDS}


def check_language(sentences: list[str], expected: str, what: str, path: str | None = None) -> None:
    """Refuse sentences that are clearly in another known language than ``expected``.

    Unknown expected languages and inputs with too few words are not checked (no false alarms).
    """
    if expected not in FUNCTION_WORDS:
        return
    shares = language_shares(sentences)
    words = sum(len(_WORD.findall(s)) for s in sentences[:2000])
    best = max(shares, key=shares.get)
    if words >= 20 and best != expected and shares[best] >= 0.15 and shares[best] > 2 * shares[expected]:
        raise QEInputError(
            f"{what} looks like '{best}' ({shares[best]:.0%} '{best}' function words vs "
            f"{shares[expected]:.0%} '{expected}'), but the model expects '{expected}'",
            path,
        )
