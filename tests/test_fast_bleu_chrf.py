"""qe.evaluation.textmetrics BLEU, chrF and 13a tokens against sacreBLEU 2.x: hand-worked, adversarial, all
WMT12."""

from __future__ import annotations

import functools
import math

import pytest

from qe.data import load_registered
from qe.evaluation.textmetrics.bleu import sentence_bleu, tokenize_13a
from qe.evaluation.textmetrics.chrf import chrf_stats, sentence_chrf
from qe.evaluation.textmetrics.ngrams import char_ngram_matches, clipped_matches_counter

sacrebleu_metrics = pytest.importorskip("sacrebleu.metrics")
from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a  # noqa: E402


@functools.cache
def _sacre_metrics(lowercase: bool) -> tuple:
    bleu = sacrebleu_metrics.BLEU(
        lowercase=lowercase, tokenize="13a", smooth_method="exp", effective_order=True
    )
    return bleu, sacrebleu_metrics.CHRF(lowercase=lowercase)


def _assert_same(hyp: str, ref: str, lowercase: bool) -> None:
    bleu, chrf = _sacre_metrics(lowercase)
    score, stats = sentence_bleu(hyp, ref, lowercase=lowercase)
    theirs = bleu.sentence_score(hyp, [ref])
    assert (score, list(stats.correct), list(stats.total), stats.sys_len, stats.ref_len) == (
        theirs.score,
        theirs.counts,
        theirs.totals,
        theirs.sys_len,
        theirs.ref_len,
    )
    assert sentence_chrf(hyp, ref, lowercase=lowercase) == chrf.sentence_score(hyp, [ref]).score


def test_hand_worked_bleu_and_chrf():
    # precisions 7/8, 3/7, 2/6, 1/5 and equal lengths (Koehn's lecture example)
    score, stats = sentence_bleu(
        "in absolutely no way , mr chairman .", "mr speaker , in absolutely no way ."
    )
    assert stats.correct == (7, 3, 2, 1) and stats.total == (8, 7, 6, 5)
    assert score == pytest.approx(100 * (7 / 8 * 3 / 7 * 2 / 6 * 1 / 5) ** (1 / 4))
    # 2 tokens against 4: precisions 2/2, 1/1 (effective order 2), brevity penalty exp(1 - 4/2)
    assert sentence_bleu("the cat", "the cat sat down")[0] == pytest.approx(100 * math.exp(-1))
    # "ab" vs "abc": 1-grams P 2/2 R 2/3, 2-grams P 1/1 R 1/2 -> P = 1, R = 7/12, F2 = 7/11
    assert sentence_chrf("ab", "abc") == pytest.approx(100 * 7 / 11)
    assert chrf_stats("a b", "ab")[:6] == [2, 2, 2, 1, 1, 1]  # whitespace removed first


def test_clipped_matches_count_each_ngram_at_most_as_often_as_the_reference():
    # "aaa" vs "aa": 1-grams min(3, 2) = 2, 2-grams min(2, 1) = 1, 3-grams none in the reference
    assert char_ngram_matches("aaa", "aa", 3) == [2, 1, 0]
    assert clipped_matches_counter(list("aaa"), list("aa"), 3) == [2, 1, 0]
    # more distinct characters than the int64 keys can hold: the Counter fallback, same counts
    many = "".join(chr(0x4E00 + i) for i in range(3000))
    assert char_ngram_matches(many, many[::-1] + many[:10], 6) == [3000, 9, 8, 7, 6, 5]


ADVERSARIAL = [
    ("", ""),
    ("", "a reference ."),
    ("a hypothesis .", ""),
    ("1.5 , 2,5 and 3-4 items.", "1.5, 2,5 and 3 - 4 items ."),
    ("&quot;quoted&quot; &amp; &lt;tagged&gt; <skipped> text", '"quoted" & <tagged> text'),
    ("hyphen-\nated line\nbreak", "hyphenated line break"),
    ("..,,.,-,.-", ".,.,"),
    (
        "{a}[b](c)<d>|e|~f~^g^_h_`i`@j#k$l%m&n*o+p=q:r;s?t!u/v\\w",
        "a b c d e f g h i j k l m n o p q r s t u v w",
    ),
    ("Straße İSTANBUL ΣΊΣΥΦΟΣ ﬁne", "strasse istanbul σίσυφος fine"),
    ("日本語の文です。", "日本語の文。"),
    ("lone \ud800 surrogate", "lone surrogate"),
    ("word " * 200, "word " * 150),
]


@pytest.mark.parametrize("lowercase", [False, True])
@pytest.mark.parametrize(("hyp", "ref"), ADVERSARIAL)
def test_adversarial_pairs_match_sacrebleu(hyp, ref, lowercase):
    _assert_same(hyp, ref, lowercase)
    assert tokenize_13a(hyp) == Tokenizer13a()(hyp).split()


@pytest.mark.parametrize("step", [pytest.param(1, marks=pytest.mark.slow), 29])
def test_all_wmt12_pairs_and_sentences_match_sacrebleu(data_dir, step):
    """Every WMT12 sentence and pair (the slow tier), or every 29th of them (the fast tier)."""
    sentences = []
    pairs = []
    for split in ("train", "test"):
        data = load_registered("wmt12-en-es", split, data_dir)
        sentences += data.src + data.mt + data.post_edits + data.references
        pairs += [
            (" ".join(h.split()), " ".join(r.split())) for h, r in zip(data.mt, data.references, strict=True)
        ]
    assert len(pairs) == 2254
    sentences, pairs = sentences[::step], pairs[::step]
    tokenizer = Tokenizer13a()
    assert [tokenize_13a(s) for s in sentences] == [tokenizer(s).split() for s in sentences]
    for lowercase in (False, True):
        for hyp, ref in pairs:
            _assert_same(hyp, ref, lowercase)
