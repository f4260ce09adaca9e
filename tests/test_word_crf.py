"""The word tagger's linear-chain CRF (qe.wordmodel.crf) against known answers: log-partition and marginals
equal brute-force enumeration of every label sequence, the gradient equals finite differences, without
transitions it is scikit-learn's logistic regression, on BAD runs it beats per-position logistic
regression, and the same data gives the same weights to the last bit; then the tagger with
``learner="crf"`` and ``"auto"``, saved and loaded."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from qe.evaluation.wordmetrics import best_threshold
from qe.infra.errors import QEInputError
from qe.wordmodel.crf import (
    Chains,
    ChainWeights,
    LinearChainCRF,
    Problem,
    Standardiser,
    chain_arrays,
    fit_chain,
    forward_backward,
    objective,
)
from qe.wordmodel.features import KINDS, WordFeaturizer, tag_labels
from qe.wordmodel.modelfile import load_word_model, save_word_model
from qe.wordmodel.tagger import WordTagger
from tests.helpers.words import toy


def random_weights(rng: np.random.Generator, d: int) -> ChainWeights:
    return ChainWeights(
        rng.normal(size=d),
        float(rng.normal()),
        rng.normal(size=(2, 2)),
        rng.normal(size=2),
        rng.normal(size=2),
    )


def brute_force(weights: ChainWeights, X: np.ndarray) -> tuple[float, np.ndarray]:
    """log Z and each position's BAD marginal of one sentence, summing over all 2^L label sequences."""
    bad_score = X @ weights.emission + weights.bias
    sequences = list(itertools.product((0, 1), repeat=len(X)))
    scores = np.array(
        [
            weights.start[y[0]]
            + weights.end[y[-1]]
            + sum(bad_score[t] for t in range(len(y)) if y[t])
            + sum(weights.transition[y[t - 1], y[t]] for t in range(1, len(y)))
            for y in sequences
        ]
    )
    log_z = float(np.logaddexp.reduce(scores))
    p = np.exp(scores - log_z)
    marginal = np.array([sum(p[k] for k, y in enumerate(sequences) if y[t]) for t in range(len(X))])
    return log_z, marginal


@pytest.mark.parametrize("length", [1, 2, 3, 4, 5, 6])
def test_marginals_and_log_partition_equal_brute_force(length):
    rng = np.random.default_rng(length)
    for _ in range(5):
        weights, X = random_weights(rng, 3), rng.normal(size=(length, 3)) * 2
        marginal, log_z = forward_backward(weights, X, Chains.of(np.array([length])))
        expected_z, expected_marginal = brute_force(weights, X)
        assert log_z[0] == pytest.approx(expected_z, abs=1e-12)
        assert np.abs(marginal - expected_marginal).max() < 1e-12


def test_sentences_of_every_length_in_one_call_equal_brute_force_each():
    """Sentences padded together in buckets (and one of no row) give each sentence's own answer."""
    rng = np.random.default_rng(7)
    lengths = np.array([3, 0, 6, 1, 4, 2, 5, 6, 1])
    weights, X = random_weights(rng, 2), rng.normal(size=(int(lengths.sum()), 2))
    chains = Chains.of(lengths)
    assert len(chains.buckets) > 1
    marginal, log_z = forward_backward(weights, X, chains)
    starts = np.concatenate([[0], np.cumsum(lengths)])
    order = sorted((n, k) for k, n in enumerate(lengths) if n)  # buckets hold sentences by length
    expected_z = []
    for _, k in order:
        rows = slice(starts[k], starts[k + 1])
        z, m = brute_force(weights, X[rows])
        expected_z.append(z)
        assert np.abs(marginal[rows] - m).max() < 1e-12
    assert np.allclose(sorted(log_z), sorted(expected_z), rtol=0, atol=1e-12)


@pytest.mark.parametrize("chain", [True, False])
def test_the_gradient_equals_finite_differences(chain):
    rng = np.random.default_rng(3)
    lengths = np.array([3, 1, 5, 2, 0, 4, 6])
    X = rng.normal(size=(int(lengths.sum()), 4))
    problem = Problem.of(X, rng.random(len(X)) < 0.4, lengths)
    theta = rng.normal(size=4 + 9)
    _, gradient = objective(theta, problem, 0.05, chain)
    step = 1e-6
    numeric = np.array(
        [
            (objective(theta + e, problem, 0.05, chain)[0] - objective(theta - e, problem, 0.05, chain)[0])
            / (2 * step)
            for e in np.eye(len(theta)) * step
        ]
    )
    assert np.abs(numeric - gradient).max() < 1e-7
    if not chain:
        assert not gradient[5:].any()  # transitions, start and end held at 0


def test_without_transitions_the_nll_is_logistic_regressions_and_so_are_the_weights():
    rng = np.random.default_rng(11)
    lengths = rng.integers(1, 9, size=80)
    n, d = int(lengths.sum()), 4
    X = rng.normal(size=(n, d))
    bad = rng.random(n) < 1 / (1 + np.exp(-(X @ np.array([1.0, -2.0, 0.5, 0.0]) - 0.7)))
    problem = Problem.of(X, bad, lengths)
    theta = np.concatenate([rng.normal(size=d + 1), np.zeros(8)])
    p = 1 / (1 + np.exp(-(X @ theta[:d] + theta[d])))
    log_loss = -np.mean(np.where(bad, np.log(p), np.log(1 - p)))
    assert objective(theta, problem, 0.0, chain=False)[0] == pytest.approx(log_loss, abs=1e-12)
    l2 = 0.01
    weights = fit_chain(X, bad, lengths, l2, chain=False, tol=1e-11, max_iter=5000)
    # scikit-learn minimises ||w||^2 / 2 + C * sum(loss); ours sum(loss) / n + l2 * ||w||^2 / 2
    sklearn = LogisticRegression(C=1 / (l2 * n), tol=1e-12, max_iter=10_000).fit(X, bad)
    assert np.abs(weights.emission - sklearn.coef_[0]).max() < 1e-4
    assert weights.bias == pytest.approx(sklearn.intercept_[0], abs=1e-4)
    assert not weights.transition.any() and not weights.start.any() and not weights.end.any()


def runs(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sentences whose BAD tags come in runs (BAD follows BAD 85% of the time, OK 10%), each row one
    noisy feature of its own tag: the neighbours' tags tell what one row cannot."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(4, 16, size=n)
    tags = []
    for length in lengths:
        y = [rng.random() < 0.3]
        for _ in range(length - 1):
            y.append(rng.random() < (0.85 if y[-1] else 0.1))
        tags += y
    bad = np.array(tags)
    X = (bad + rng.normal(scale=1.2, size=len(bad)))[:, None]
    return X, bad, lengths


def test_on_bad_runs_the_crf_beats_per_position_logistic_regression():
    X, bad, lengths = runs(400, 0)
    X_dev, bad_dev, lengths_dev = runs(400, 1)
    crf = LinearChainCRF(seed=0).fit(X, bad, lengths)
    p_crf = crf.bad_probability(X_dev, lengths_dev)
    p_lr = LogisticRegression().fit(X, bad).predict_proba(X_dev)[:, 1]

    def loss(p: np.ndarray) -> float:
        return float(-np.mean(np.where(bad_dev, np.log(p), np.log(1 - p))))

    assert loss(p_crf) < loss(p_lr) - 0.05
    crf_mcc, lr_mcc = best_threshold(bad_dev, p_crf)[1], best_threshold(bad_dev, p_lr)[1]
    assert crf_mcc > lr_mcc + 0.1, (crf_mcc, lr_mcc)
    transition = crf.model_.weights.transition
    assert transition[1, 1] - transition[1, 0] > transition[0, 1] - transition[0, 0]  # BAD stays BAD


def test_the_same_data_gives_the_same_weights_to_the_last_bit():
    X, bad, lengths = runs(150, 2)
    X = np.hstack([X, np.where(np.arange(len(X))[:, None] % 7 == 0, np.nan, X * 0.3)])
    first = chain_arrays(LinearChainCRF(seed=4).fit(X, bad, lengths).model_)
    again = chain_arrays(LinearChainCRF(seed=4).fit(X, bad, lengths).model_)
    assert first.keys() == again.keys()
    for name in first:
        assert first[name].tobytes() == again[name].tobytes(), name


def test_the_standardiser_zeroes_missing_values_and_marks_them():
    X = np.array([[1.0, np.nan, 5.0], [3.0, 2.0, 5.0], [np.inf, 4.0, 5.0]])
    s = Standardiser.fit(X)
    assert s.mean.tolist() == [2.0, 3.0, 5.0] and s.scale.tolist() == [1.0, 1.0, 1.0]  # col 3 constant
    assert s.missing.tolist() == [0, 1]
    design = s.design(np.array([[2.0, np.nan, 7.0], [np.nan, 5.0, 5.0]]))
    assert design.tolist() == [[0.0, 0.0, 2.0, 0.0, 1.0], [0.0, 2.0, 0.0, 1.0, 0.0]]
    with pytest.raises(QEInputError, match="rows of 3 features"):
        s.design(np.zeros((2, 2)))


def test_rows_that_do_not_fit_the_sentences_are_refused():
    with pytest.raises(QEInputError, match="3 rows, 3 tags and 4 by sentence"):
        Problem.of(np.zeros((3, 1)), np.zeros(3, bool), np.array([2, 2]))
    model = LinearChainCRF().fit(*runs(30, 0)).model_
    with pytest.raises(QEInputError, match="5 rows for 4 by sentence"):
        model.probability(np.zeros((5, 1)), np.array([4]))


# --- the tagger with a CRF ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def toy_sets():
    train, dev = toy(200, 0), toy(60, 1)
    featurizer = WordFeaturizer()
    return featurizer, featurizer.fit_transform(train), tag_labels(train), featurizer.transform(dev), dev


def test_a_crf_tagger_saved_and_loaded_tags_with_the_same_probabilities(toy_sets, tmp_path):
    featurizer, tables, bad, dev_tables, dev = toy_sets
    tagger = WordTagger(learner="crf").fit(tables, bad)
    tagger.choose_thresholds(dev_tables, tag_labels(dev))
    assert set(tagger.l2_) == set(KINDS) and not tagger.iterations_
    path = tmp_path / "crf.qwords"
    save_word_model(path, featurizer, tagger, {})
    model = load_word_model(path)
    assert model.learners == dict.fromkeys(KINDS, "crf")
    _, probability = model.tag(dev)
    expected = tagger.bad_probability(dev_tables)
    for kind in KINDS:
        assert probability[kind].tobytes() == expected[kind].tobytes()
        assert model.thresholds[kind] == tagger.thresholds_[kind]
        assert model.manifest["kinds"][kind]["learner"] == "crf"
        assert set(model.manifest["kinds"][kind]["candidates"]) == {"crf"}
    again = tmp_path / "again.qwords"
    save_word_model(again, featurizer, tagger, {})
    assert again.read_bytes() == path.read_bytes()


def test_auto_fits_both_and_chooses_each_kind_on_dev(toy_sets, tmp_path):
    featurizer, tables, bad, dev_tables, dev = toy_sets
    tagger = WordTagger(learner="auto", max_iter=20, min_samples_leaf=5).fit(tables, bad)
    with pytest.raises(QEInputError, match="chooses on dev"):
        tagger.bad_probability(dev_tables)
    reached = tagger.choose_thresholds(dev_tables, tag_labels(dev))
    for kind in KINDS:
        candidates = tagger.candidates_[kind]
        assert set(candidates) == {"hgb", "crf"}
        best = max(candidates, key=lambda learner: (candidates[learner]["mcc"], learner == "hgb"))
        assert tagger.learners_[kind] == best and reached[kind] == candidates[best]["mcc"]
        assert tagger.thresholds_[kind] == candidates[best]["threshold"]
    path = tmp_path / "auto.qwords"
    save_word_model(path, featurizer, tagger, {})
    model = load_word_model(path)
    assert model.learners == tagger.learners_
    for kind in KINDS:
        assert model.manifest["kinds"][kind]["candidates"] == tagger.candidates_[kind]


def test_an_unknown_learner_is_refused():
    with pytest.raises(QEInputError, match="unknown word learner 'svm'"):
        WordTagger(learner="svm")
