"""Annotations of a batch that several families read: tokens and UPOS tags, computed once per batch.

Every ``Pairs`` carries an ``Annotations``. The first family that asks for the tokens of a side
under some tokenizer settings, or for the UPOS tags of a side's resource-bundle tokens, computes
them; the families after it get the same lists, which they must not change. So ``lm`` and
``ibm1`` extracted together tag each sentence once. A family declares the kinds it reads
(``FeatureFamily.annotations`` / ``needed_annotations``); the family contract test checks that it
reads exactly those.

Kinds (``KINDS``):

- ``tokens``: a side tokenized by a ``qe.text.processing.TextProcessor`` (keyed by its settings);
- ``upos``: spaCy UPOS tags of a side's bundle tokens, one per token, as
  ``qe.resources.pos.tag_sentences`` assigns them with the bundle's tagger.

The ``linguistic`` family's spaCy parses are not an annotation here: they run the full pipelines
on the raw sentence with spaCy's own tokens and spacing, while the tags above come from the bundle's
tokens handed over pre-tokenized (the English pipeline reads the spacing after each token, and its
attribute rules read dependency labels), so a parse would give other tags; and no other family
reads a parse.
"""

from __future__ import annotations

from typing import Any

from qe.text.processing import TextProcessor

KINDS = ("tokens", "upos")


class Annotations:
    """Lazily computed, memoised annotations of one batch's sentences (see the module docstring).

    ``requested`` records the kinds families asked for (the contract test compares it with their
    declarations).
    """

    def __init__(self, src: list[str], mt: list[str]) -> None:
        self._texts = {"src": src, "tgt": mt}
        self._values: dict[tuple, list[list[str]]] = {}
        self.requested: set[str] = set()

    def _side(self, side: str) -> list[str]:
        if side not in self._texts:
            raise ValueError(f"unknown side {side!r} (known: src, tgt)")
        return self._texts[side]

    def _tokens(self, side: str, processor: TextProcessor) -> list[list[str]]:
        key = ("tokens", side, processor.config.cache_key())
        if key not in self._values:
            self._values[key] = processor.tokenize_many(self._side(side))
        return self._values[key]

    def tokens(self, side: str, processor: TextProcessor) -> list[list[str]]:
        """The tokens of every sentence of ``side`` ("src" or "tgt") by ``processor`` (read-only)."""
        self.requested.add("tokens")
        return self._tokens(side, processor)

    def upos(self, side: str, resources: Any) -> list[list[str]]:
        """One UPOS tag per bundle token of every sentence of ``side``, from the bundle's tagger for
        that side (``qe.resources.pos.bundle_tagger``; read-only)."""
        from qe.resources import pos

        self.requested.add("upos")
        tagger = pos.bundle_tagger(resources, side)
        config = resources.text_config(side)
        key = ("upos", side, config.cache_key(), id(tagger))
        if key not in self._values:
            tokens = self._tokens(side, resources.text_processor(side))
            self._values[key] = pos.tag_sentences(self._side(side), tokens, config, tagger)
        return self._values[key]
