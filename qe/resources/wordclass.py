"""Tagger-free word classes from a Hunspell dictionary, for languages spaCy cannot tag offline.

A Hunspell dictionary lists each stem with the affix classes (flags) it takes, and ``Hunspell_analyze``
names the stem and the affix flags of an inflected form. In German's igerman98 dictionary (Debian's
``hunspell-de-de``) the flags are paradigms: verbs take ``B D I O W X Y`` (``Z``: past forms),
adjectives ``A C L``, and nouns are the capitalized stems. ``HunspellTagger`` turns them into UPOS
names, so the POS LMs and the coarse POS agreement of ``ibm1`` can use them where a spaCy pipeline is
missing:

- no letter: ``NUM`` with a digit, else ``PUNCT``; a letter and a digit: ``NUM``;
- a word the dictionary does not know: ``PROPN`` if capitalized, else ``X``;
- a capitalized stem, or a capitalized word after the first (compounds too): ``NOUN``;
- else a stem with a verb flag: ``VERB``; with an adjective flag: ``ADJ`` (verbs first);
- a known word without such flags (articles, pronouns, prepositions, conjunctions ...): ``FUNC``.

Only languages whose dictionary's flags are described in ``CLASSES`` are tagged (``available``).
"""

from __future__ import annotations

import functools
import hashlib
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from qe.infra.errors import QEInputError
from qe.infra.memo import make_room
from qe.resources.spelling import SpellChecker, find_dictionary
from qe.text.nlp import language_of


@dataclass(frozen=True)
class FlagClasses:
    """Which affix flags of one Hunspell dictionary mark verbs and adjectives."""

    dictionary: str
    package: str
    verb: frozenset[str]
    adjective: frozenset[str]


CLASSES: dict[str, FlagClasses] = {
    "de": FlagClasses("de_DE", "hunspell-de-de", frozenset("BDIOWXYZ"), frozenset("ACL")),
}
"""Language -> the dictionary read and what its flags mean (igerman98 for German)."""

_MEMO_LIMIT = 1_000_000
_LETTER = re.compile(r"[^\W\d_]")
_DIGIT = re.compile(r"\d")


def available(lang: str) -> bool:
    """Whether ``lang`` has word classes here: its flags are described and its dictionary installed."""
    return missing(lang) is None


def missing(lang: str) -> str | None:
    """None when ``lang`` can be tagged with word classes, else what is missing (one clause)."""
    classes = CLASSES.get(language_of(lang))
    if classes is None:
        return f"no Hunspell word classes for {lang!r} (known for: {', '.join(sorted(CLASSES))})"
    try:
        find_dictionary(classes.dictionary)
    except QEInputError:
        return f"the Hunspell dictionary {classes.dictionary}: apt-get install {classes.package}"
    return None


@functools.cache
def _digest(aff: Path, dic: Path) -> str:
    digest = hashlib.sha256()
    for path in (aff, dic):
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def read_stem_flags(dic: Path) -> dict[str, str]:
    """Stem -> its flags (all entries of the stem joined) from a ``.dic`` file (single-letter flags)."""
    flags: dict[str, str] = {}
    with dic.open(encoding="utf-8", errors="replace") as handle:
        next(handle, None)  # the entry count
        for line in handle:
            entry = line.split("\t", 1)[0].strip()
            if not entry or entry.startswith("#"):
                continue
            stem, _, flag = entry.partition("/")
            flags[stem] = flags.get(stem, "") + flag
    return flags


class HunspellTagger:
    """UPOS-like word classes of pre-tokenized sentences from a Hunspell dictionary (module docstring)."""

    def __init__(self, lang: str) -> None:
        problem = missing(lang)
        if problem is not None:
            raise QEInputError(f"cannot tag {lang!r} with Hunspell word classes: {problem}")
        self.lang = lang
        self.classes = CLASSES[language_of(lang)]
        self._checker = None
        self._stems: dict[str, str] | None = None
        self._memo: dict[tuple[str, bool], str] = {}
        self._lock = threading.Lock()

    def __getstate__(self) -> dict:
        return {"lang": self.lang}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["lang"])  # type: ignore[misc]

    def _open(self) -> None:
        self._checker = SpellChecker(self.classes.dictionary)
        self._stems = read_stem_flags(self._checker.dic)

    def describe(self) -> str:
        """``hunspell:<dictionary>@<sha256 prefix of .aff + .dic>`` (for signatures and manifests)."""
        return f"hunspell:{self.classes.dictionary}@{_digest(*find_dictionary(self.classes.dictionary))}"

    def _analyses(self, word: str) -> list[tuple[str, str]]:
        """(stem, applied flags) of each Hunspell analysis of ``word``."""
        return [
            (
                next((f[3:] for f in fields if f.startswith("st:")), ""),
                "".join(f[3:] for f in fields if f.startswith("fl:")),
            )
            for fields in self._checker.analyses(word)
        ]

    def word_class(self, word: str, first: bool = False) -> str:
        """The class of one token (``first``: the sentence's first token, capitalized by position)."""
        key = (word, first)
        found = self._memo.get(key)
        if found is None:
            found = self._classify(word, first)
            make_room(self._memo, _MEMO_LIMIT)
            self._memo[key] = found
        return found

    def _classify(self, word: str, first: bool) -> str:
        if _LETTER.search(word) is None:
            return "NUM" if _DIGIT.search(word) else "PUNCT"
        if _DIGIT.search(word):
            return "NUM"
        if self._checker is None:
            self._open()
        if "\x00" in word or not self._checker.is_correct(word):
            return "PROPN" if word[:1].isupper() else "X"
        capital = word[:1].isupper()
        verb = adjective = noun = False
        for stem, applied in self._analyses(word):
            flags = set(applied) | set(self._stems.get(stem, ""))
            verb |= bool(flags & self.classes.verb)
            adjective |= bool(flags & self.classes.adjective)
            noun |= stem[:1].isupper()
        if noun or (capital and not first):
            return "NOUN"
        if verb:
            return "VERB"
        if adjective:
            return "ADJ"
        return "FUNC"

    def tag(self, sentences: Sequence[Sequence[str]]) -> list[list[str]]:
        """One class per token of each sentence (an empty sentence gives ``[]``)."""
        with self._lock:
            return [[self.word_class(w, i == 0) for i, w in enumerate(words)] for words in sentences]


@functools.cache
def word_tagger(lang: str) -> HunspellTagger:
    """The process-wide ``HunspellTagger`` of a language (the dictionary loads once)."""
    return HunspellTagger(lang)
