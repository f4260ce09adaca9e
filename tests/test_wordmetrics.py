"""Word-level metrics: a toy set worked by hand, scikit-learn's ``matthews_corrcoef`` / ``f1_score`` on
random tag lines as an independent implementation, the degenerate cases, the bootstrap, hostile input."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.metrics import f1_score, matthews_corrcoef

from qe.evaluation.wordmetrics import bootstrap_intervals, scores_from_counts, sentence_counts, word_scores
from qe.infra.errors import QEInputError

B, G = "BAD", "OK"


def test_toy_example_by_hand():
    # flattened: gold B B G G G G, pred B G B G G G -> tp 1, fn 1, fp 1, tn 3
    gold = [[B, B, G], [G, G, G]]
    pred = [[B, G, B], [G, G, G]]
    assert sentence_counts(gold, pred).tolist() == [[1, 1, 1, 0], [0, 0, 0, 3]]
    s = word_scores(gold, pred)
    # F1-BAD = 2/(2+1+1) = 0.5; F1-OK = 6/(6+1+1) = 0.75; MCC = (1*3 - 1*1)/sqrt(2*2*4*4) = 2/8
    assert s.f1_bad == pytest.approx(0.5)
    assert s.f1_ok == pytest.approx(0.75)
    assert s.f1_mult == pytest.approx(0.375)
    assert s.mcc == pytest.approx(0.25)
    assert s.tags == 6


@pytest.mark.parametrize("seed", range(5))
def test_agrees_with_scikit_learn_on_random_tags(seed):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, 30, size=40)
    gold = [list(rng.choice([G, B], size=n, p=[0.8, 0.2])) for n in lengths]
    pred = [list(rng.choice([G, B], size=n, p=[0.7, 0.3])) for n in lengths]
    flat_gold = [t for line in gold for t in line]
    flat_pred = [t for line in pred for t in line]
    s = word_scores(gold, pred)
    f1_ok, f1_bad = f1_score(flat_gold, flat_pred, average=None, labels=[G, B])
    assert s.mcc == pytest.approx(matthews_corrcoef(flat_gold, flat_pred), abs=1e-12)
    assert s.f1_ok == pytest.approx(f1_ok, abs=1e-12)
    assert s.f1_bad == pytest.approx(f1_bad, abs=1e-12)
    assert s.f1_mult == pytest.approx(f1_ok * f1_bad, abs=1e-12)


def test_all_ok_is_defined_and_matches_scikit_learn():
    gold = [[G, G], [G]]
    s = word_scores(gold, gold)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f1_ok, f1_bad = f1_score([G] * 3, [G] * 3, average=None, labels=[G, B])
        mcc = matthews_corrcoef([G] * 3, [G] * 3)
    assert (s.mcc, s.f1_ok, s.f1_bad, s.f1_mult) == (mcc, f1_ok, f1_bad, 0.0) == (0.0, 1.0, 0.0, 0.0)


def test_empty_sets_score_zero():
    for gold in ([], [[], []]):
        s = word_scores(gold, gold)
        assert (s.mcc, s.f1_ok, s.f1_bad, s.f1_mult, s.tags) == (0.0, 0.0, 0.0, 0.0, 0)
    assert bootstrap_intervals([], []) == dict.fromkeys(("mcc", "f1_ok", "f1_bad", "f1_mult"), (0.0, 0.0))


def test_scores_from_counts_perfect():
    s = scores_from_counts(3, 0, 0, 5)
    assert (s.mcc, s.f1_ok, s.f1_bad, s.f1_mult) == (1.0, 1.0, 1.0, 1.0)


def test_bootstrap_is_seeded_and_brackets_the_figure():
    rng = np.random.default_rng(7)
    gold = [list(rng.choice([G, B], size=12, p=[0.8, 0.2])) for _ in range(200)]
    pred = [[t if rng.random() < 0.8 else (B if t == G else G) for t in line] for line in gold]
    first = bootstrap_intervals(gold, pred, samples=300, seed=3)
    assert first == bootstrap_intervals(gold, pred, samples=300, seed=3)
    assert first != bootstrap_intervals(gold, pred, samples=300, seed=4)
    point = word_scores(gold, pred).as_dict()
    for name, (low, high) in first.items():
        assert low < point[name] < high
        assert high - low < 0.2


def test_bootstrap_of_one_sentence_is_a_point():
    # resampling one sentence always gives that sentence: the interval is the figure itself
    gold, pred = [[B, G, G, B]], [[B, G, B, G]]
    point = word_scores(gold, pred)
    assert bootstrap_intervals(gold, pred, samples=20)["mcc"] == (point.mcc, point.mcc)


@pytest.mark.parametrize(
    ("gold", "pred", "message"),
    [
        ([[G]], [[G], [G]], "gold has 1 sentences but the predictions have 2"),
        ([[G, B]], [[G]], "sentence 1: 2 gold tags but 1 predicted"),
        ([[G], [G, "bad"]], [[G], [G, B]], "sentence 2: unknown gold tag 'bad'"),
        ([[G]], [["X"]], "sentence 1: unknown predicted tag 'X'"),
    ],
)
def test_hostile_inputs_are_one_clear_line(gold, pred, message):
    with pytest.raises(QEInputError, match=message) as info:
        word_scores(gold, pred)
    assert "\n" not in str(info.value)


def test_bootstrap_refuses_bad_settings():
    with pytest.raises(QEInputError, match="samples >= 1"):
        bootstrap_intervals([[G]], [[G]], samples=0)
