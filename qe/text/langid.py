"""Cheap language checks of a model's input: function words (refuse a file clearly in another known
language) and writing systems (find text in another script, or lines of emoji / symbols only, also
for languages without a function-word list)."""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Sequence

from qe.infra.errors import QEInputError

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


# The scripts each language is written in (Unicode character-name prefixes; "Han" = CJK ideographs).
_SCRIPT_TEXT = {
    "Latin": "en es fr de it pt nl ca gl eu pl cs sk sl hr ro hu fi et lv lt sv da no nb nn is ga cy mt "
    "tr az id ms tl vi sw sq af lb eo",
    "Cyrillic": "ru uk be bg mk sr kk ky mn tg",
    "Greek": "el",
    "Arabic": "ar fa ur ps ug",
    "Hebrew": "he yi",
    "Han": "zh ja ko",
    "Hiragana Katakana": "ja",
    "Hangul": "ko",
    "Devanagari": "hi mr ne sa",
    "Bengali": "bn as",
    "Tamil": "ta",
    "Telugu": "te",
    "Thai": "th",
    "Georgian": "ka",
    "Armenian": "hy",
    "Ethiopic": "am ti",
    "Khmer": "km",
    "Myanmar": "my",
    "Sinhala": "si",
}
SCRIPTS: dict[str, frozenset[str]] = {}
for _scripts, _langs in _SCRIPT_TEXT.items():
    for _lang in _langs.split():
        SCRIPTS[_lang] = SCRIPTS.get(_lang, frozenset()) | frozenset(_scripts.split())
KNOWN_SCRIPTS = frozenset(name for names in _SCRIPT_TEXT for name in names.split())
_SCRIPT_WORDS = {name.upper(): name for name in KNOWN_SCRIPTS}


def script_of(char: str) -> str | None:
    """The script of a letter (``Latin``, ``Cyrillic``, ``Han`` ...), None for other characters."""
    if not char.isalpha():
        return None
    name = unicodedata.name(char, "")
    if "IDEOGRAPH" in name:
        return "Han"
    for word in name.split()[:2]:  # "LATIN SMALL LETTER A", "FULLWIDTH LATIN CAPITAL LETTER A"
        if word in _SCRIPT_WORDS:
            return _SCRIPT_WORDS[word]
    return None


def _is_pictograph(char: str) -> bool:
    """Emoji and other pictographic symbols (Unicode category So), not digits or punctuation."""
    return unicodedata.category(char) == "So"


def script_findings(
    sentences: Sequence[str], expected: str, what: str, path: str | None = None, first_line: int = 1
) -> list[QEInputError]:
    """Problems with the writing system of ``sentences`` for a model expecting language ``expected``.

    * most letters of the text are in a script ``expected`` is not written in (e.g. Chinese or
      Arabic MT for a Spanish model), or some lines are;
    * lines without a letter that hold emoji or other pictographs.

    Languages without a known script and texts with fewer than 20 letters are not judged. The
    problems are returned (not raised): callers warn or refuse.
    """
    scripts = SCRIPTS.get(expected)
    if scripts is None:
        return []
    per_line = [Counter(s for s in map(script_of, sentence) if s is not None) for sentence in sentences]
    total: Counter[str] = Counter()
    for counts in per_line:
        total.update(counts)
    letters = sum(total.values())
    expected_share = sum(total[s] for s in scripts) / letters if letters else 1.0
    findings = []
    wanted = "/".join(sorted(scripts))
    if letters >= 20 and expected_share < 0.5:
        other = max((s for s in total if s not in scripts), key=total.get)
        findings.append(
            QEInputError(
                f"{what} is mostly in {other} script ({total[other] / letters:.0%} of its letters), "
                f"but the model expects '{expected}', written in {wanted}",
                path,
            )
        )
    else:
        foreign = [  # (line, its commonest script that ``expected`` is not written in)
            (number, max((s for s in counts if s not in scripts), key=counts.get))
            for number, counts in enumerate(per_line, start=first_line)
            if counts and sum(counts[s] for s in scripts) * 2 < sum(counts.values())
        ]
        if foreign:
            number, script = foreign[0]
            findings.append(
                QEInputError(
                    f"{len(foreign)} line(s) of {what} are mostly in another script than {wanted} "
                    f"('{expected}'), e.g. {script}",
                    path,
                    number,
                )
            )
    pictures = [
        number
        for number, (sentence, counts) in enumerate(zip(sentences, per_line, strict=True), start=first_line)
        if not counts and any(_is_pictograph(char) for char in sentence)
    ]
    if pictures:
        findings.append(
            QEInputError(
                f"{len(pictures)} line(s) of {what} hold no letter, only emoji or other symbols",
                path,
                pictures[0],
            )
        )
    return findings
