"""Spell-checking with Hunspell and Debian's dictionaries: which tokens a dictionary does not know.

``checker("es").misspelled(tokens)`` gives one flag per token (each token checked as one word,
memoised per word); ``spelling_stats(src_tokens, mt_tokens)`` counts the misspelled words of a
sentence pair, skipping numbers, punctuation and words found on the other side (names).

Hunspell is reached through ``ctypes`` and Debian's ``libhunspell-1.7.so.0`` (four functions of its
stable C API), chosen by measurement on the 21,480 word types of the 2,254 WMT12 pairs (en_US +
es_ES, one core of the shared machine, same run): the compiled bindings from PyPI check 150,000
(``hunspell`` 0.5.5) and 145,000 (``hunspell-cffi`` 1.1.2) words/s, ctypes 113,000, a batch
``hunspell -l`` 39,000-110,000 and a ``hunspell -a`` pipe 106, because that protocol computes
suggestions for every unknown word and cannot be told not to. ``-l`` only lists the unknown words
of its own tokenization (1,019 English types instead of 1,091: it splits and skips inside tokens),
so it cannot give a verdict per token. With the memo the speed per word hardly matters (each type
is checked once); ctypes needs neither a compiler, nor ``libhunspell-dev``, nor a PyPI package
(``cyhunspell`` no longer builds), only the library that the ``hunspell`` package installs.
"""

from __future__ import annotations

import codecs
import ctypes
import ctypes.util
import functools
import os
import re
import threading
import weakref
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TypedDict

from qe.infra.errors import QEInputError
from qe.infra.memo import make_room

DICTIONARIES: dict[str, tuple[str, str]] = {
    "en": ("en_US", "hunspell-en-us"),
    "es": ("es_ES", "hunspell-es"),
    "de": ("de_DE", "hunspell-de-de"),
    "fr": ("fr_FR", "hunspell-fr"),
    "it": ("it_IT", "hunspell-it"),
    "pt": ("pt_PT", "hunspell-pt-pt"),
    "nl": ("nl_NL", "hunspell-nl"),
    "cs": ("cs_CZ", "hunspell-cs"),
    "ru": ("ru_RU", "hunspell-ru"),
}
"""Language code -> (Hunspell dictionary name, the Debian package installing it)."""

DEFAULT_DICT_DIRS = (Path("/usr/share/hunspell"),)
_LIBRARIES = ("libhunspell-1.7.so.0", "hunspell-1.7", "hunspell")
_MEMO_LIMIT = 1_000_000
_LETTER = re.compile(r"[^\W\d_]")
_DIGIT = re.compile(r"\d")


def dictionary_dirs() -> list[Path]:
    """Where dictionaries are looked for: ``$DICPATH`` (as for the ``hunspell`` command), then Debian's."""
    extra = [Path(p) for p in os.environ.get("DICPATH", "").split(os.pathsep) if p]
    return [*extra, *DEFAULT_DICT_DIRS]


def find_dictionary(lang: str, dirs: Iterable[str | Path] | None = None) -> tuple[Path, Path]:
    """The ``.aff`` and ``.dic`` files for a language code (``es``) or a dictionary name (``es_MX``)."""
    if not isinstance(lang, str) or not re.fullmatch(r"[A-Za-z]{2,3}([_-][A-Za-z0-9]{2,8})?", lang):
        raise QEInputError(f"not a language code: {lang!r} (expected e.g. 'es' or 'es_MX')")
    language, _, region = lang.replace("-", "_").partition("_")
    language = language.lower()
    name, package = DICTIONARIES.get(language, (language, ""))
    if region:  # a dictionary name: es_MX (es-mx, ES_mx ...)
        name, package = f"{language}_{region.upper() if len(region) == 2 else region}", ""
    searched = [Path(d) for d in (dirs if dirs is not None else dictionary_dirs())]
    candidates = [name]
    if not region:  # a bare code without a known name: any dictionary of the language (ro -> ro_RO)
        candidates += sorted(
            {p.stem for folder in searched if folder.is_dir() for p in folder.glob(f"{language}_*.aff")},
            key=lambda stem: (stem != f"{language}_{language.upper()}", stem),
        )
    for candidate in candidates:
        for folder in searched:
            aff, dic = folder / f"{candidate}.aff", folder / f"{candidate}.dic"
            if aff.is_file() and dic.is_file():
                return aff, dic
    where = ", ".join(str(d) for d in searched)
    hint = (
        f"install the Debian package {package}"
        if package
        else f"install a Debian package with its dictionary (apt-cache search hunspell-{language})"
    )
    raise QEInputError(f"no Hunspell dictionary {name} for language '{lang}' in {where}: {hint}")


@functools.cache
def _library() -> ctypes.CDLL:
    for name in _LIBRARIES:
        path = name if name.endswith(".0") else ctypes.util.find_library(name)
        if not path:
            continue
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        lib.Hunspell_create.restype = ctypes.c_void_p
        lib.Hunspell_create.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
        lib.Hunspell_destroy.restype = None
        lib.Hunspell_destroy.argtypes = [ctypes.c_void_p]
        lib.Hunspell_spell.restype = ctypes.c_int
        lib.Hunspell_spell.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
        lib.Hunspell_get_dic_encoding.restype = ctypes.c_char_p
        lib.Hunspell_get_dic_encoding.argtypes = [ctypes.c_void_p]
        word_list = ctypes.POINTER(ctypes.POINTER(ctypes.c_char_p))
        lib.Hunspell_analyze.restype = ctypes.c_int
        lib.Hunspell_analyze.argtypes = [ctypes.c_void_p, word_list, ctypes.c_char_p]
        lib.Hunspell_free_list.restype = None
        lib.Hunspell_free_list.argtypes = [ctypes.c_void_p, word_list, ctypes.c_int]
        return lib
    raise QEInputError("the Hunspell library is not installed: install the Debian package hunspell")


class SpellChecker:
    """One Hunspell dictionary; ``misspelled(tokens)`` flags the tokens it does not know (memoised)."""

    def __init__(self, lang: str, dirs: Iterable[str | Path] | None = None):
        self.lang = lang
        self.aff, self.dic = find_dictionary(lang, dirs)
        self._handle: int | None = None  # a forked worker keeps using its copy of the dictionary
        self._encoding = "utf-8"
        self._memo: dict[str, bool] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"SpellChecker({self.lang!r}, {self.dic.stem})"

    def __getstate__(self) -> dict:  # for worker processes: the dictionary is loaded again there
        return {"lang": self.lang, "aff": self.aff, "dic": self.dic}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._handle, self._encoding, self._memo = None, "utf-8", {}
        self._lock = threading.Lock()

    def _open(self) -> int:
        lib = _library()
        handle = lib.Hunspell_create(os.fsencode(self.aff), os.fsencode(self.dic))
        if not handle:
            raise QEInputError("Hunspell could not load this dictionary", self.dic)
        encoding = (lib.Hunspell_get_dic_encoding(handle) or b"UTF-8").decode("ascii", "replace")
        encoding = encoding.lower().removeprefix("microsoft-")  # e.g. microsoft-cp1251
        try:
            self._encoding = codecs.lookup(encoding).name
        except LookupError:
            self._encoding = "utf-8"
        self._handle = handle
        weakref.finalize(self, lib.Hunspell_destroy, handle)  # frees the dictionary with the checker
        return handle

    def is_correct(self, word: str) -> bool:
        """Whether the dictionary knows ``word`` (checked as one word, as given, case included)."""
        known = self._memo.get(word)
        if known is None:
            known = self._check(word)
            make_room(self._memo, _MEMO_LIMIT)
            self._memo[word] = known
        return known

    def _check(self, word: str) -> bool:
        if not isinstance(word, str):
            raise QEInputError(f"a token must be text, got {type(word).__name__}")
        if not word.strip():
            return True  # an empty token is no misspelling
        if "\x00" in word:
            return False  # C strings end at NUL: no word holds one
        try:
            encoded = word.encode(self._encoding)
        except UnicodeEncodeError:
            return False  # a character the dictionary's encoding lacks: no word of it has it
        with self._lock:
            handle = self._handle or self._open()
            return bool(_library().Hunspell_spell(handle, encoded))

    def analyses(self, word: str) -> list[list[str]]:
        """Hunspell's morphological analyses of ``word``, each as its fields (``st:stem``, ``fl:flags``,
        ...); none for a word the dictionary's encoding cannot hold or that holds a NUL."""
        if "\x00" in word:
            return []
        with self._lock:
            handle = self._handle or self._open()
            try:
                encoded = word.encode(self._encoding)
            except UnicodeEncodeError:
                return []
            lib = _library()
            result = ctypes.POINTER(ctypes.c_char_p)()
            n = lib.Hunspell_analyze(handle, ctypes.byref(result), encoded)
            try:
                return [result[k].decode(self._encoding, "replace").split() for k in range(n)]
            finally:
                if n > 0:
                    lib.Hunspell_free_list(handle, ctypes.byref(result), n)

    def misspelled(self, tokens: Iterable[str]) -> list[bool]:
        """One flag per token: True where the dictionary does not know it."""
        if isinstance(tokens, str | bytes) or not isinstance(tokens, Iterable):
            raise QEInputError(f"expected a list of tokens, got {type(tokens).__name__}")
        return [not self.is_correct(token) for token in tokens]


@functools.cache
def checker(lang: str) -> SpellChecker:
    """The process's ``SpellChecker`` for a language (dictionaries load once)."""
    return SpellChecker(lang)


def is_word(token: str) -> bool:
    """Whether a token is counted: it has a letter and no digit (numbers, punctuation, symbols are not)."""
    return _LETTER.search(token) is not None and _DIGIT.search(token) is None


class SpellingStats(TypedDict):
    """Counted words (``*_words``), misspelled ones and their share per side (0.0 without words)."""

    src_words: int
    src_misspelled: int
    src_misspelled_share: float
    mt_words: int
    mt_misspelled: int
    mt_misspelled_share: float


def spelling_stats(
    src_tokens: Sequence[str],
    mt_tokens: Sequence[str],
    src_lang: str | SpellChecker = "en",
    mt_lang: str | SpellChecker = "es",
    *,
    skip_shared: bool = True,
) -> SpellingStats:
    """Misspelled words of a sentence pair, counted per side.

    Counted are the tokens that ``is_word`` (a letter, no digit); with ``skip_shared`` a token also
    found (case-folded) among the other side's tokens is not counted either: a word copied across
    is mostly a name, which the dictionary need not know (but it may also be a source word the MT
    left untranslated: ``skip_shared=False`` counts those). Pass cased tokens: Hunspell accepts
    ``Paris`` but not ``paris``.
    """
    src_check = checker(src_lang) if isinstance(src_lang, str) else src_lang
    mt_check = checker(mt_lang) if isinstance(mt_lang, str) else mt_lang
    for name, tokens in (("source", src_tokens), ("MT", mt_tokens)):
        if isinstance(tokens, str | bytes) or not isinstance(tokens, Sequence):
            raise QEInputError(f"expected a list of {name} tokens, got {type(tokens).__name__}")
        for token in tokens:
            if not isinstance(token, str):
                raise QEInputError(f"a {name} token must be text, got {type(token).__name__}")
    src_folded = {t.casefold() for t in src_tokens} if skip_shared else set()
    mt_folded = {t.casefold() for t in mt_tokens} if skip_shared else set()

    def side(tokens: Sequence[str], spell: SpellChecker, other: set[str]) -> tuple[int, int, float]:
        words = [t for t in tokens if is_word(t) and t.casefold() not in other]
        bad = sum(not spell.is_correct(t) for t in words)
        return len(words), bad, (bad / len(words) if words else 0.0)

    src_n, src_bad, src_share = side(src_tokens, src_check, mt_folded)
    mt_n, mt_bad, mt_share = side(mt_tokens, mt_check, src_folded)
    return SpellingStats(
        src_words=src_n,
        src_misspelled=src_bad,
        src_misspelled_share=src_share,
        mt_words=mt_n,
        mt_misspelled=mt_bad,
        mt_misspelled_share=mt_share,
    )
