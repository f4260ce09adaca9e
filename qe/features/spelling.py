"""Spelling features: words of the source and of the MT that a Hunspell dictionary does not know.

Tokens come from a case-preserving Moses tokenizer (Hunspell accepts ``Paris`` but not ``paris``);
numbers, punctuation and symbols are never counted (``qe.resources.spelling.is_word``). Dictionaries
are chosen by language code (``qe.resources.spelling.DICTIONARIES``: en -> en_US, es -> es_ES, ...),
from the settings ``src_lang`` / ``tgt_lang`` or the resource bundle's languages; a missing
dictionary is refused when the family is bound, naming the Debian package to install.

A word found (case-folded) on the other side is left out of the misspelled counts: copied words are
mostly names. Copied words the target dictionary does not know are counted apart
(``mt_unknown_copied``): they are mostly source words the MT left untranslated.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from qe.features.base import FamilyExample, FeatureFamily, FeatureSpec, Pairs, language
from qe.features.registry import register_family
from qe.infra.errors import QEInputError, refusal
from qe.text.processing import TextConfig, TextProcessor

RESOURCE = "hunspell"
SPECS = [
    FeatureSpec(
        "src_misspelled", "source words the source dictionary does not know (not in the MT)", RESOURCE
    ),
    FeatureSpec("src_misspelled_share", "src_misspelled / source words (0 without words)", RESOURCE),
    FeatureSpec(
        "mt_misspelled", "MT words the target dictionary does not know (not in the source)", RESOURCE
    ),
    FeatureSpec("mt_misspelled_share", "mt_misspelled / MT words (0 without words)", RESOURCE),
    FeatureSpec(
        "mt_unknown_copied", "MT words also in the source that the target dictionary does not know", RESOURCE
    ),
    FeatureSpec("mt_unknown_copied_share", "mt_unknown_copied / MT words (0 without words)", RESOURCE),
]
SETTINGS = {
    "src_lang": language("source language code (unset: the bundle's)"),
    "tgt_lang": language("MT language code (unset: the bundle's)"),
}
SIDES = ("src", "tgt")


@register_family
class SpellingFamily(FeatureFamily):
    """Counts and shares of words unknown to Hunspell on each side, and of untranslated-looking words."""

    name = "spelling"
    setting_specs = SETTINGS
    example = FamilyExample({"src_lang": "en", "tgt_lang": "es"})

    def __init__(self, **settings: Any) -> None:
        super().__init__(**settings)
        self._languages: dict[str, str] = {}  # set by bind

    def fresh_state(self) -> dict[str, Any]:
        """Dictionaries and tokenizers (loaded again in each worker)."""
        return {"_tools": None}

    def missing_pieces(self, pair: Mapping[str, str], resources: Any = None) -> list[str]:
        """The Hunspell dictionary of each side's language."""
        from qe.resources.spelling import find_dictionary

        return super().missing_pieces(pair, resources) + [
            f"spelling: {problem}"
            for lang in self.pair_languages(pair).values()
            if lang and (problem := refusal(lambda x=lang: find_dictionary(x)))
        ]

    def bind(self, resources: Any) -> SpellingFamily:
        """Resolve the two languages and check their dictionaries are installed."""
        super().bind(resources)
        self._languages = {side: self._language(side, resources) for side in SIDES}
        from qe.resources.spelling import find_dictionary

        missing = []
        for lang in dict.fromkeys(self._languages.values()):
            try:
                find_dictionary(lang)
            except QEInputError as exc:
                missing.append(exc.message)
        if missing:  # one line naming every missing dictionary and its Debian package
            raise QEInputError("spelling: " + "; ".join(missing))
        self._tools = None
        return self

    def _language(self, side: str, resources: Any) -> str:
        lang = self.settings[f"{side}_lang"]
        if lang is None and resources is not None:
            lang = (getattr(resources, "manifest", {}).get("languages") or {}).get(side)
        if not lang:
            raise QEInputError(
                f"spelling: no {'source' if side == 'src' else 'MT'} language: set "
                f"features.settings.spelling.{side}_lang or use a resource bundle with [languages]"
            )
        return str(lang)

    def signature_details(self) -> list[str]:
        """The languages in use (after ``bind``) and the dictionary files."""
        languages = self._languages
        if not languages:
            return []
        from qe.resources.spelling import find_dictionary

        return [f"dict.{side}={find_dictionary(lang)[1].name}" for side, lang in sorted(languages.items())]

    def specs(self) -> list[FeatureSpec]:
        """All spelling features, in column order."""
        return list(SPECS)

    def _prepared(self, resources: Any) -> tuple[Any, Any, TextProcessor, TextProcessor]:
        if self._tools is None:
            from qe.resources.spelling import checker

            if not self._languages:
                self.bind(resources)
            src, tgt = self._languages["src"], self._languages["tgt"]
            self._tools = (
                checker(src),
                checker(tgt),
                TextProcessor(TextConfig(lang=src, style="moses", case="keep")),
                TextProcessor(TextConfig(lang=tgt, style="moses", case="keep")),
            )
        return self._tools

    def extract(self, batch: Pairs, resources: Any = None) -> np.ndarray:
        """A ``(len(batch), 6)`` float array."""
        from qe.resources.spelling import is_word, spelling_stats

        src_check, mt_check, src_proc, mt_proc = self._prepared(resources)
        src_tokens = src_proc.tokenize_many(batch.src)
        mt_tokens = mt_proc.tokenize_many(batch.mt)
        out = np.zeros((len(batch), len(SPECS)), dtype=np.float64)
        for i, (st, mt) in enumerate(zip(src_tokens, mt_tokens, strict=True)):
            stats = spelling_stats(st, mt, src_check, mt_check)
            src_folded = {t.casefold() for t in st}
            mt_words = [t for t in mt if is_word(t)]
            copied = sum(1 for t in mt_words if t.casefold() in src_folded and not mt_check.is_correct(t))
            out[i] = (
                stats["src_misspelled"],
                stats["src_misspelled_share"],
                stats["mt_misspelled"],
                stats["mt_misspelled_share"],
                copied,
                copied / len(mt_words) if mt_words else 0.0,
            )
        return out
