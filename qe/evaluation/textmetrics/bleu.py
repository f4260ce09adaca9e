"""Sentence BLEU giving exactly sacreBLEU 2.x's ``BLEU(smooth_method="exp", effective_order=True)`` numbers.

Clipped n-gram matches are counted over shared n-grams only, with C-level zip/Counter/map calls, and
the ``13a`` tokenizer applies its punctuation rule with ``str.translate``; the score is computed with
the same floating-point operations, in the same order, as ``sacrebleu.metrics.BLEU.compute_bleu``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass

from qe.evaluation.textmetrics.ngrams import clipped_matches_counter

MAX_ORDER = 4

# mteval-v13a: pad these characters with spaces ({|}~ [\]^_` space!"#$%& ()*+ :;<=>?@ /).
_PUNCT = '{|}~[\\]^_` !"#$%&()*+:;<=>?@/'
_PUNCT_TABLE = str.maketrans({c: f" {c} " for c in _PUNCT})
_PERIOD_COMMA_AFTER = re.compile(r"([^0-9])([\.,])")
_PERIOD_COMMA_BEFORE = re.compile(r"([\.,])([^0-9])")
_DASH_AFTER_DIGIT = re.compile(r"([0-9])(-)")


def tokenize_13a(line: str) -> list[str]:
    """sacreBLEU's ``13a`` tokenizer (mteval-v13a), as a token list."""
    line = line.replace("<skipped>", "").replace("-\n", "").replace("\n", " ")
    if "&" in line:
        line = line.replace("&quot;", '"').replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">")
    line = f" {line} ".translate(_PUNCT_TABLE)
    if "." in line or "," in line:
        line = _PERIOD_COMMA_AFTER.sub(lambda m: f"{m[1]} {m[2]} ", line)
        line = _PERIOD_COMMA_BEFORE.sub(lambda m: f" {m[1]} {m[2]}", line)
    if "-" in line:
        line = _DASH_AFTER_DIGIT.sub(lambda m: f"{m[1]} - ", line)
    return line.split()


@dataclass(frozen=True)
class BleuStats:
    """Sufficient statistics of one sentence pair: clipped matches and totals per order, lengths."""

    correct: tuple[int, ...]
    total: tuple[int, ...]
    sys_len: int
    ref_len: int


def bleu_stats(hyp_tokens: list[str], ref_tokens: list[str], max_order: int = MAX_ORDER) -> BleuStats:
    """Clipped n-gram matches and n-gram counts for orders 1..max_order (one reference)."""
    total = tuple(max(0, len(hyp_tokens) - n + 1) for n in range(1, max_order + 1))
    correct = tuple(clipped_matches_counter(hyp_tokens, ref_tokens, max_order))
    return BleuStats(correct, total, len(hyp_tokens), len(ref_tokens))


def bleu_score(stats: BleuStats) -> float:
    """sacreBLEU's ``compute_bleu`` with exp smoothing and effective order (0-100)."""
    sys_len, ref_len = stats.sys_len, stats.ref_len
    bp = 1.0
    if sys_len < ref_len:
        bp = math.exp(1 - ref_len / sys_len) if sys_len > 0 else 0.0
    if not any(stats.correct):
        return 0.0
    precisions = [0.0] * len(stats.correct)
    smooth = 1.0
    order = len(precisions)
    for n, (correct, total) in enumerate(zip(stats.correct, stats.total, strict=True), start=1):
        if total == 0:
            break
        order = n
        if correct == 0:
            smooth *= 2
            precisions[n - 1] = 100.0 / (smooth * total)
        else:
            precisions[n - 1] = 100.0 * correct / total
    return bp * math.exp(sum([_log(p) for p in precisions[:order]]) / order)


def _log(value: float) -> float:
    return -9999999999 if value == 0.0 else math.log(value)


def sentence_bleu(
    hypothesis: str,
    reference: str,
    *,
    lowercase: bool = False,
    tokenizer: Callable[[str], list[str]] = tokenize_13a,
) -> tuple[float, BleuStats]:
    """``BLEU(lowercase=..., smooth_method="exp", effective_order=True).sentence_score(hyp, [ref])``:
    the score and its statistics (``tokenizer`` turns one line into tokens; 13a by default)."""
    if lowercase:
        hypothesis, reference = hypothesis.lower(), reference.lower()
    stats = bleu_stats(tokenizer(hypothesis.rstrip()), tokenizer(reference.rstrip()))
    return bleu_score(stats), stats
