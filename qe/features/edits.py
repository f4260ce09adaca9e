"""Post-editing statistics family: how often the MT's words were edited in the training post-edits.

Needs the ``edits`` member of a resource bundle (``[edits]`` in the bundle config, built from the
training split's post-edits and labels; see ``qe.resources.edits``). Training pairs are scored
with statistics that exclude their own fold (cross-fitting), every other pair with statistics of
all training pairs, so the features never see the label of the pair they describe. Word rates
are smoothed towards the overall rate with 2 pseudo-counts; tokens come from the bundle's
tokenizer (lower-cased).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from qe.features.base import FamilyExample, FeatureFamily, FeatureSpec, Pairs
from qe.features.registry import register_family
from qe.resources.edits import N_FEATURES

SPECS = [
    FeatureSpec("mt_word_edit_prob_mean", "mean over MT tokens of the word's smoothed edit rate", "edits"),
    FeatureSpec("mt_word_edit_prob_max", "highest smoothed edit rate of an MT token", "edits"),
    FeatureSpec("mt_word_edit_prob_gt_half", "share of MT tokens whose edit rate exceeds 0.5", "edits"),
    FeatureSpec(
        "mt_bigram_edit_prob_mean",
        "mean over MT tokens of the edit rate given the previous token (smoothed to the word rate)",
        "edits",
    ),
    FeatureSpec("mt_bigram_edit_prob_max", "highest bigram-context edit rate of an MT token", "edits"),
    FeatureSpec(
        "mt_bigram_edit_prob_gt_half", "share of MT tokens whose bigram edit rate exceeds 0.5", "edits"
    ),
    FeatureSpec("mt_unseen_share", "share of MT tokens never seen in the training MT", "edits"),
    FeatureSpec(
        "src_word_label_mean",
        "mean over source tokens of the mean label of pairs containing the word",
        "edits",
    ),
    FeatureSpec("src_word_label_min", "lowest such source-word label mean", "edits"),
    FeatureSpec(
        "mt_word_label_mean", "mean over MT tokens of the mean label of pairs containing the word", "edits"
    ),
    FeatureSpec("mt_word_label_min", "lowest such MT-word label mean", "edits"),
]
assert len(SPECS) == N_FEATURES


@register_family
class EditFeatures(FeatureFamily):
    """Cross-fitted word-level edit rates and label associations learned from training post-edits."""

    name = "edits"

    needs_bundle = True
    example = FamilyExample(bundle=True)

    def required_members(self) -> list[str]:
        """The bundle's post-editing statistics."""
        return ["edits"]

    def specs(self) -> list[FeatureSpec]:
        """All edit features, in column order."""
        return list(SPECS)

    def extract(self, batch: Pairs, resources: Any = None) -> np.ndarray:
        """A ``(len(batch), 11)`` float array."""
        model = self.bundle_member(resources, "edits")
        src_tok = resources.text_processor("src").tokenize_many(batch.src)
        mt_tok = resources.text_processor("tgt").tokenize_many(batch.mt)
        out = np.zeros((len(batch), N_FEATURES), dtype=np.float64)
        for i, (src, mt) in enumerate(zip(batch.src, batch.mt, strict=True)):
            out[i] = model.stats_for(src, mt).features(src_tok[i], mt_tok[i])
        return out
