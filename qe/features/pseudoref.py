"""Pseudo-reference features: the MT output scored against a second MT system's output.

If two independent systems agree, the translation is probably good (Albrecht & Hwa 2008;
SDLLW's LF10, in both of its winning WMT12 feature sets; literature.md §3.8). The second output
arrives as ``batch.extra["pseudo_ref"]`` (the CLI reads ``--pseudo-ref FILE``), one string per
pair. Scores come from sacreBLEU 2.x (checked with 2.6.0) on the raw, untokenized strings:

- BLEU: ``sentence_bleu`` settings (``exp`` smoothing = NIST/mteval "method 3", effective order,
  ``13a`` tokenizer, case-sensitive), on sacreBLEU's 0-100 scale;
- BLEU without brevity penalty: the same smoothed geometric mean of the n-gram precisions, the
  form SDLLW used ("BLEU without BP");
- chrF2: character 6-grams, no word n-grams, beta 2, whitespace removed (sacreBLEU defaults);
- TER: sacreBLEU defaults (case-insensitive, tercom tokenization with punctuation kept), edits per
  pseudo-reference word x 100 (100 for an empty pseudo-reference against a non-empty output,
  0 when both are empty);
- length ratio: (output tokens + 1) / (pseudo-reference tokens + 1) with the BLEU tokenizer.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from qe.errors import QEInputError
from qe.features.base import FeatureFamily, FeatureSpec, PairBatch, register_family

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

DEFAULTS: dict[str, Any] = {
    "key": RESOURCE,  # the name of the list in batch.extra
    "tokenize": "13a",  # sacreBLEU tokenizer for BLEU and the length ratio
    "lowercase": False,  # lower-case before BLEU and chrF
    "ter_case_sensitive": False,  # sacreBLEU's TER default
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

    def __init__(self, **settings: Any) -> None:
        unknown = sorted(set(settings) - set(DEFAULTS))
        if unknown:
            raise QEInputError(
                f"pseudoref: unknown setting(s) {', '.join(unknown)} (known: {', '.join(sorted(DEFAULTS))})"
            )
        super().__init__(**{**DEFAULTS, **settings})
        self._metrics: tuple | None = None
        self._scorers()  # refuse a bad tokenizer name now rather than mid-run

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_metrics"] = None
        return state

    def specs(self) -> list[FeatureSpec]:
        """The five pseudo-reference features, in column order."""
        return list(SPECS)

    def signature(self) -> str:
        """Settings that change values, for run signatures."""
        import sacrebleu

        s = self.settings
        return (
            f"pseudoref(sacrebleu={sacrebleu.__version__},tok={s['tokenize']},"
            f"lc={int(bool(s['lowercase']))},ter_cs={int(bool(s['ter_case_sensitive']))})"
        )

    def _scorers(self) -> tuple:
        """sacreBLEU metric objects, built once (building one per sentence is slow)."""
        if self._metrics is None:
            from sacrebleu.metrics import BLEU, CHRF, TER

            s = self.settings
            try:
                bleu = BLEU(
                    lowercase=bool(s["lowercase"]),
                    tokenize=s["tokenize"],
                    smooth_method="exp",
                    effective_order=True,
                )
            except (KeyError, ValueError, AssertionError, RuntimeError) as exc:
                raise QEInputError(
                    f"pseudoref: unusable tokenize setting {s['tokenize']!r} ({exc})"
                ) from None
            chrf = CHRF(lowercase=bool(s["lowercase"]))
            ter = TER(case_sensitive=bool(s["ter_case_sensitive"]))
            self._metrics = (bleu, chrf, ter)
        return self._metrics

    def pseudo_refs(self, batch: PairBatch) -> list[str]:
        """The batch's pseudo-references, checked: present, one per pair, all strings."""
        key = self.settings["key"]
        if key not in batch.extra:
            raise QEInputError(
                f"pseudoref: no pseudo-reference given (batch has no {key!r}; pass --pseudo-ref FILE "
                "with a second MT output, one line per source sentence)"
            )
        refs = list(batch.extra[key])
        if len(refs) != len(batch):
            raise QEInputError(
                f"pseudoref: {len(refs)} pseudo-reference lines for {len(batch)} translations "
                "(the files must have the same number of lines)"
            )
        for i, ref in enumerate(refs):
            if not isinstance(ref, str):
                raise QEInputError(
                    f"pseudoref: pseudo-reference for sentence {batch.ids[i]!r} is not text "
                    f"({type(ref).__name__})"
                )
        return refs

    def extract(self, batch: PairBatch, resources: Any = None) -> np.ndarray:
        """A ``(len(batch), 5)`` float array."""
        refs = self.pseudo_refs(batch)
        bleu, chrf, ter = self._scorers()
        out = np.zeros((len(batch), len(SPECS)), dtype=np.float64)
        for i, (hyp, ref) in enumerate(zip(batch.mt, refs, strict=True)):
            hyp = " ".join(hyp.split())  # sacreBLEU expects single-line, trimmed text
            ref = " ".join(ref.split())
            b = bleu.sentence_score(hyp, [ref])
            out[i, 0] = b.score
            out[i, 1] = bleu_without_bp(b.counts, b.totals)
            out[i, 2] = chrf.sentence_score(hyp, [ref]).score
            out[i, 3] = ter.sentence_score(hyp, [ref]).score
            out[i, 4] = (b.sys_len + 1) / (b.ref_len + 1)
        return out
