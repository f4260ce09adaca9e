"""Pseudo-reference features: the MT output scored against a second MT system's output.

If two independent systems agree, the translation is probably good (Albrecht & Hwa 2008;
SDLLW's LF10, in both of its winning WMT12 feature sets; literature.md §3.8). The second output
is the declared input ``pseudo_ref`` (``--pseudo-ref FILE``, or ``pseudo_ref`` in
``[data.<split>]``), one line per pair; without it, a bundle's ``mt2`` member translates the
source. Scores are sacreBLEU 2.x's (checked with 2.6.0) on the raw, untokenized strings, computed by
``qe.evaluation.textmetrics`` (the same numbers, several times faster):

- BLEU: ``sentence_bleu`` settings (``exp`` smoothing = NIST/mteval "method 3", effective order,
  ``13a`` tokenizer, case-sensitive), on sacreBLEU's 0-100 scale;
- BLEU without brevity penalty: the same smoothed geometric mean of the n-gram precisions, the
  form SDLLW used ("BLEU without BP");
- chrF2: character 6-grams, no word n-grams, beta 2, whitespace removed (sacreBLEU defaults);
- TER: sacreBLEU defaults (case-insensitive, tercom tokenization with punctuation kept), edits per
  pseudo-reference word x 100 (100 for an empty pseudo-reference against a non-empty output,
  0 when both are empty);
- length ratio: (output tokens + 1) / (pseudo-reference tokens + 1) with the BLEU tokenizer.

TER's shift search grows with the product of the two lengths (15,000 words a side took 3.6 GB and
minutes), so an output or pseudo-reference of more than 2,000 words is refused (``LIMITS``,
docs/length-limits.md).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from qe.features.base import (
    FamilyExample,
    FeatureFamily,
    FeatureSpec,
    PairInput,
    Pairs,
    TextLimits,
    flag,
    string,
)
from qe.features.registry import register_family
from qe.infra.errors import QEInputError

RESOURCE = "pseudo_ref"

SPECS = [
    FeatureSpec(
        "bleu",
        "sacreBLEU 2.x sentence BLEU of the MT against the pseudo-reference (exp smoothing, "
        "effective order, 13a, cased; 0-100)",
        RESOURCE,
    ),
    FeatureSpec(
        "bleu_nobp",
        "as bleu without the brevity penalty: exp-smoothed geometric mean of the 1..4-gram "
        "precisions (SDLLW LF10; 0-100)",
        RESOURCE,
    ),
    FeatureSpec(
        "chrf",
        "sacreBLEU chrF2 (char 6-grams, beta 2, whitespace removed) of the MT against the "
        "pseudo-reference (0-100)",
        RESOURCE,
    ),
    FeatureSpec(
        "ter",
        "sacreBLEU TER: edits (incl. shifts) / pseudo-reference words x 100, case-insensitive; "
        "100 if only the pseudo-reference is empty",
        RESOURCE,
    ),
    FeatureSpec(
        "length_ratio",
        "(MT tokens + 1) / (pseudo-reference tokens + 1), tokens of the BLEU tokenizer",
        RESOURCE,
    ),
]

BACK_SPECS = [
    FeatureSpec(
        "bt_bleu",
        "sentence BLEU (as bleu) of the back-translation of the MT against the source",
        "back_translation",
    ),
    FeatureSpec(
        "bt_chrf", "chrF2 (as chrf) of the back-translation of the MT against the source", "back_translation"
    ),
]

LIMITS = TextLimits(tokens=2_000)
"""Words (TER's tokens) of the output and of the pseudo-reference at most."""

SETTINGS = {
    "backtranslation": flag(False, "add BLEU and chrF of the MT translated back against the source"),
    "tokenize": string("13a", "sacreBLEU tokenizer for BLEU and the length ratio"),
    "lowercase": flag(False, "lower-case before BLEU and chrF"),
    "ter_case_sensitive": flag(False, "case-sensitive TER (sacreBLEU's default is not)"),
}


def bleu_without_bp(correct: list[int], total: list[int], max_order: int = 4) -> float:
    """sacreBLEU's exp-smoothed, effective-order geometric mean of n-gram precisions, without BP.

    Orders from 1 up to the first one with no hypothesis n-gram are used; an order with no match
    gets precision 1 / (2^k * total) for its k-th such order (NIST smoothing); no match at all
    gives 0. Returned on the 0-100 scale.
    """
    if not any(correct[:max_order]):
        return 0.0
    log_sum = 0.0
    order = 0
    zeros = 0
    for n in range(max_order):
        if total[n] == 0:
            break
        if correct[n] == 0:
            zeros += 1
            precision = 1.0 / (2**zeros * total[n])
        else:
            precision = correct[n] / total[n]
        log_sum += math.log(precision)
        order += 1
    return 100.0 * math.exp(log_sum / order) if order else 0.0


@register_family
class PseudoRefFamily(FeatureFamily):
    """BLEU, chrF, TER and length ratio of the MT output against a second system's output."""

    name = "pseudoref"

    setting_specs = SETTINGS
    limits = LIMITS
    example = FamilyExample(inputs=lambda src, mt: {RESOURCE: list(src)})  # any text will do: the source
    inputs = (
        PairInput(
            RESOURCE,
            "a second MT system's translation of each source sentence (pseudo-reference), one per line",
            provider="mt2",
        ),
        PairInput(
            "back_translation",
            "the MT translated back into the source language by a second MT system, one per line",
            provider="mt2",
        ),
    )

    def __init__(self, **settings: Any) -> None:
        super().__init__(**settings)
        self._tokenizer()  # refuse a bad tokenizer name now rather than mid-run

    def fresh_state(self) -> dict[str, Any]:
        """The BLEU tokenizer (rebuilt in each worker)."""
        return {"_bleu_tokenizer": None}

    def specs(self) -> list[FeatureSpec]:
        """The five pseudo-reference features, then the back-translation ones if asked for."""
        return SPECS + (BACK_SPECS if self.settings["backtranslation"] else [])

    @classmethod
    def catalogue(cls) -> list[FeatureSpec]:
        """Every feature the family can produce, back-translation included."""
        return SPECS + BACK_SPECS

    def needed_inputs(self) -> tuple[PairInput, ...]:
        """The pseudo-reference, and the back-translation when its features are on."""
        return self.inputs if self.settings["backtranslation"] else self.inputs[:1]

    def signature_details(self) -> list[str]:
        """The sacreBLEU version (its metrics define the values)."""
        import sacrebleu

        return [f"sacrebleu={sacrebleu.__version__}"]

    def _tokenizer(self) -> Callable[[str], list[str]]:
        """The BLEU tokenizer: ours for 13a, otherwise the one sacreBLEU's BLEU builds for the name."""
        if self._bleu_tokenizer is None:
            from sacrebleu.metrics import BLEU

            from qe.evaluation.textmetrics.bleu import tokenize_13a

            name = self.settings["tokenize"]
            try:
                sacre = BLEU(tokenize=name, smooth_method="exp", effective_order=True).tokenizer
            except (KeyError, ValueError, AssertionError, RuntimeError) as exc:
                raise QEInputError(f"pseudoref: unusable tokenize setting {name!r} ({exc})") from None
            self._bleu_tokenizer = tokenize_13a if name == "13a" else (lambda line: sacre(line).split())
        return self._bleu_tokenizer

    def extract(self, batch: Pairs, resources: Any = None) -> np.ndarray:
        """A ``(len(batch), len(self.specs()))`` float array."""
        # sacreBLEU's numbers, computed faster (qe.evaluation.textmetrics needs rapidfuzz: the pseudoref
        # extra)
        from qe.evaluation.textmetrics.bleu import sentence_bleu
        from qe.evaluation.textmetrics.chrf import sentence_chrf
        from qe.evaluation.textmetrics.ter import sentence_ter

        refs = self.input_lines(batch, RESOURCE, resources)
        self.check_tokens(batch, "mt", [len(line.split()) for line in batch.mt])  # TER's words
        self.check_tokens(batch, RESOURCE, [len(line.split()) for line in refs])
        tokenizer = self._tokenizer()
        lowercase = bool(self.settings["lowercase"])
        case_sensitive = bool(self.settings["ter_case_sensitive"])
        out = np.zeros((len(batch), len(SPECS)), dtype=np.float64)
        for i, (hyp, ref) in enumerate(zip(batch.mt, refs, strict=True)):
            hyp = " ".join(hyp.split())  # sacreBLEU expects single-line, trimmed text
            ref = " ".join(ref.split())
            out[i, 0], b = sentence_bleu(hyp, ref, lowercase=lowercase, tokenizer=tokenizer)
            out[i, 1] = bleu_without_bp(list(b.correct), list(b.total))
            out[i, 2] = sentence_chrf(hyp, ref, lowercase=lowercase)
            out[i, 3] = sentence_ter(hyp, ref, case_sensitive)
            out[i, 4] = (b.sys_len + 1) / (b.ref_len + 1)
        if self.settings["backtranslation"]:
            out = np.hstack([out, self._back_translation(batch, resources)])
        return out

    def _back_translation(self, batch: Pairs, resources: Any) -> np.ndarray:
        """BLEU and chrF of each back-translated MT against its source."""
        from qe.evaluation.textmetrics.bleu import sentence_bleu
        from qe.evaluation.textmetrics.chrf import sentence_chrf

        backs = self.input_lines(batch, "back_translation", resources)
        tokenizer = self._tokenizer()
        lowercase = bool(self.settings["lowercase"])
        out = np.zeros((len(batch), len(BACK_SPECS)), dtype=np.float64)
        for i, (back, src) in enumerate(zip(backs, batch.src, strict=True)):
            back, src = " ".join(back.split()), " ".join(src.split())
            out[i, 0] = sentence_bleu(back, src, lowercase=lowercase, tokenizer=tokenizer)[0]
            out[i, 1] = sentence_chrf(back, src, lowercase=lowercase)
        return out
