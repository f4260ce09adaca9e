"""Metrics against the official scorer's examples, hand computations and scipy."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from sklearn.linear_model import Ridge
from sklearn.model_selection import GridSearchCV

from qe.evaluation.metrics import (
    METRICS,
    delta_avg,
    evaluate,
    mae,
    paired_bootstrap,
    pearson,
    ranks_from_scores,
    rmse,
    spearman,
    spearman_official,
)


def test_delta_avg_official_toy_case():
    # README of the WMT12 task: 500 x 4.0 and 500 x 2.0, perfectly ranked -> 0.77.
    gold = np.array([4.0] * 500 + [2.0] * 500)
    assert delta_avg(gold, gold) == pytest.approx(0.7709, abs=5e-5)


def test_delta_avg_small_case_by_hand():
    # N = 4: only n = 2, q = 2; head = the two best by prediction.
    gold = np.array([1.0, 2.0, 3.0, 4.0])
    pred = np.array([0.1, 0.9, 0.2, 0.8])  # best first: items 1, 3 (gold 2, 4)
    assert delta_avg(gold, pred) == pytest.approx((2 + 4) / 2 - 2.5)
    # N = 6: n = 2 (q = 3: head 3) and n = 3 (q = 2: heads 2 and 4).
    gold6 = np.array([6.0, 5, 4, 3, 2, 1])
    mean = 3.5
    expected = np.mean([(6 + 5 + 4) / 3 - mean, np.mean([(6 + 5) / 2 - mean, (6 + 5 + 4 + 3) / 4 - mean])])
    assert delta_avg(gold6, gold6) == pytest.approx(expected)


def test_delta_avg_random_ranking_is_near_zero_and_ties_follow_input_order():
    gold = np.array([4.0] * 500 + [2.0] * 500)
    assert delta_avg(gold, np.zeros(1000)) == pytest.approx(0.7709, abs=5e-5)  # file order is perfect here
    assert delta_avg(gold[::-1], np.zeros(1000)) == pytest.approx(-0.7709, abs=5e-5)


def test_wmt12_oracle_and_constant_predictor(data_dir):
    test = np.loadtxt(data_dir / "wmt12-qe/test_set_annotations/target_system.effort")
    train = np.loadtxt(data_dir / "wmt12-qe/training_set_annotations/target_system.effort")
    assert delta_avg(test, test) == pytest.approx(0.953, abs=5e-4)
    assert delta_avg(test, np.full_like(test, train.mean())) == pytest.approx(0.087, abs=5e-4)
    assert mae(test, np.full_like(test, train.mean())) == pytest.approx(0.828, abs=5e-4)


def test_mae_rmse_by_hand_and_official_rounding():
    gold = [1.0, 2.0, 3.0]
    pred = [1.5, 2.0, 1.0]
    assert mae(gold, pred) == pytest.approx(2.5 / 3)
    assert rmse(gold, pred) == pytest.approx(np.sqrt((0.25 + 0 + 4) / 3))
    # each error formatted with %.2f before summing: 0.333 -> 0.33, 0.126 -> 0.13
    assert mae([0, 0], [1 / 3, 0.126], round_errors=True) == pytest.approx((0.33 + 0.13) / 2)


def test_correlations_agree_with_scipy():
    rng = np.random.default_rng(0)
    gold = np.round(rng.uniform(1, 5, 200) * 3) / 3  # many ties, like averaged judgements
    pred = gold + rng.normal(0, 1, 200)
    assert spearman(gold, pred) == pytest.approx(stats.spearmanr(gold, pred).statistic, abs=1e-12)
    assert pearson(gold, pred) == pytest.approx(stats.pearsonr(gold, pred).statistic, abs=1e-12)


def test_official_spearman_formula_by_hand():
    gold = np.array([3.0, 1.0, 2.0, 2.0])  # reference ranks (best = 1, ties averaged): 1, 4, 2.5, 2.5
    pred = np.array([0.9, 0.1, 0.5, 0.7])  # submitted ranks: 1, 4, 3, 2
    d2 = 0 + 0 + 0.25 + 0.25
    assert spearman_official(gold, pred) == pytest.approx(1 - 6 * d2 / (4 * 15))
    assert list(ranks_from_scores([0.5, 0.5, 0.9])) == [2, 3, 1]


def test_evaluate_reports_every_official_quantity():
    gold = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    pred = np.array([1.05, 3.0, 3.0, 4.0, 4.5])
    result = evaluate(gold, pred)
    assert result["share_errors_ge_1"] == pytest.approx(1 / 5)
    assert result["share_errors_le_0.1"] == pytest.approx(3 / 5)
    assert (result["prediction_min"], result["prediction_max"]) == (1.05, 4.5)
    assert result["n"] == 5


def test_paired_bootstrap_prefers_the_better_system():
    rng = np.random.default_rng(1)
    gold = rng.uniform(1, 5, 300)
    good = gold + rng.normal(0, 0.2, 300)
    bad = gold + rng.normal(0, 1.0, 300)
    result = paired_bootstrap(gold, good, bad, "MAE", n_samples=200)
    assert result.a_wins == 1.0 and result.p_value == 0.0
    assert paired_bootstrap(gold, bad, good, "DeltaAvg", n_samples=200).a_wins < 0.05


def test_delta_avg_scorer_in_grid_search():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(120, 3))
    y = x @ np.array([1.0, 0.5, 0.0]) + rng.normal(0, 0.1, 120)
    search = GridSearchCV(
        Ridge(), {"alpha": [0.01, 1e6]}, scoring=METRICS["DeltaAvg"].sklearn_scorer(), cv=3
    ).fit(x, y)
    assert search.best_params_["alpha"] == 0.01
