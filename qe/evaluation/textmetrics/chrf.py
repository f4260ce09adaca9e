"""Sentence chrF giving exactly sacreBLEU 2.x's ``CHRF()`` numbers (char 6-grams, beta 2, no word n-grams).

Clipped character n-gram matches of all orders come from ``qe.evaluation.textmetrics.ngrams`` (a few numpy
calls instead of sacreBLEU's twelve Counters of substrings); the F-score is
computed with the same floating-point operations, in the same order, as sacreBLEU's
``CHRF._compute_f_score`` (without eps smoothing, its default).
"""

from __future__ import annotations

from qe.evaluation.textmetrics.ngrams import char_ngram_matches

CHAR_ORDER = 6
BETA = 2


def chrf_stats(hypothesis: str, reference: str, char_order: int = CHAR_ORDER) -> list[int]:
    """[hyp n-grams, ref n-grams, matches] for each order 1..char_order, whitespace removed.

    As in sacreBLEU, an order with no reference n-gram counts no hypothesis n-grams either.
    """
    hyp = "".join(hypothesis.split())
    ref = "".join(reference.split())
    matches = char_ngram_matches(hyp, ref, char_order)
    stats = []
    for n in range(1, char_order + 1):
        n_ref = max(0, len(ref) - n + 1)
        stats.extend((max(0, len(hyp) - n + 1) if n_ref else 0, n_ref, matches[n - 1]))
    return stats


def chrf_score(stats: list[int], beta: float = BETA) -> float:
    """sacreBLEU's ``CHRF._compute_f_score`` (no eps smoothing), 0-100."""
    factor = beta**2
    avg_prec, avg_rec = 0.0, 0.0
    effective_order = 0
    for i in range(0, len(stats), 3):
        n_hyp, n_ref, n_match = stats[i : i + 3]
        if n_hyp > 0 and n_ref > 0:
            avg_prec += n_match / n_hyp
            avg_rec += n_match / n_ref
            effective_order += 1
    if effective_order == 0:
        avg_prec = avg_rec = 0.0
    else:
        avg_prec /= effective_order
        avg_rec /= effective_order
    if avg_prec + avg_rec:
        score = (1 + factor) * avg_prec * avg_rec
        score /= (factor * avg_prec) + avg_rec
        return 100 * score
    return 0.0


def sentence_chrf(hypothesis: str, reference: str, *, lowercase: bool = False) -> float:
    """``sacrebleu.metrics.CHRF(lowercase=...).sentence_score(hypothesis, [reference]).score``."""
    if lowercase:
        hypothesis, reference = hypothesis.lower(), reference.lower()
    return chrf_score(chrf_stats(hypothesis, reference))
