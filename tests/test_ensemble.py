"""Ensembles, aux-target stacking and the GP learner: hand-computed answers and leakage checks."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.dummy import DummyRegressor
from sklearn.linear_model import LinearRegression

from qe.config.experiment import ExperimentConfig
from qe.data import QEDataset
from qe.infra.errors import QEInputError
from qe.learners.aux import AuxTargetStack, aux_target_matrix, pair_scores, stack_targets
from qe.learners.ensemble import AveragingRegressor, StackedRegressor, accepts_aux, rank_average
from qe.learners.factory import make_learner
from qe.learners.gp import GPRegressor


def linear_data(n: int = 60, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    return X, 2.0 * X[:, 0] - X[:, 1] + 3.0


class SeenRows(RegressorMixin, BaseEstimator):
    """Predicts 1 for a row whose id (column 0) it was trained on, else 0; records what it saw."""

    def fit(self, X, y):
        self.seen_ = set(np.asarray(X)[:, 0].tolist())
        self.y_ = np.asarray(y)
        return self

    def predict(self, X):
        return np.array([1.0 if row_id in self.seen_ else 0.0 for row_id in np.asarray(X)[:, 0]])


class KeepInputs(RegressorMixin, BaseEstimator):
    """Records the matrix and target it was fitted on; predicts 0."""

    def fit(self, X, y):
        self.X_, self.y_ = np.asarray(X).copy(), np.asarray(y).copy()
        return self

    def predict(self, X):
        return np.zeros(len(X))


# --- averaging and rank averaging ------------------------------------------------------------


def test_weighted_average_of_exact_and_mean_models_by_hand():
    X, y = linear_data()
    model = AveragingRegressor([LinearRegression(), DummyRegressor()], weights=[3, 1]).fit(X, y)
    # 3/4 of the exact linear fit plus 1/4 of the training mean.
    expected = 0.75 * y + 0.25 * y.mean()
    assert np.allclose(model.predict(X), expected)


def test_rank_average_orders_by_mean_rank_and_keeps_mean_scores():
    predictions = np.array([[1.0, 3.0], [2.0, 1.0], [3.0, 2.0]])
    # Ranks: (1, 3), (2, 1), (3, 2) -> mean 2, 1.5, 2.5; mean scores 2, 1.5, 2.5 sorted 1.5, 2, 2.5.
    out = rank_average(predictions, np.array([0.5, 0.5]))
    assert out.tolist() == [2.0, 1.5, 2.5]
    # Unequal weights: the rank vote follows the heavier member, values stay the sorted blend.
    out = rank_average(predictions, np.array([0.9, 0.1]))
    blend = np.sort(predictions @ np.array([0.9, 0.1]))  # 1.2, 1.9, 2.9
    assert np.allclose(out, blend)  # member 1's order 0 < 1 < 2 wins the vote


def test_rank_average_gives_rows_with_equal_votes_one_score_whatever_their_order():
    predictions = np.array([[1.0, 2.0], [2.0, 1.0], [0.0, 5.0]])
    # Ranks (2, 2), (3, 1), (1, 3): every vote is 2, so the rows share the mean of the blend 1.5, 1.5,
    # 2.5 (before, each row drew the next sorted score by its place in the batch).
    weights = np.array([0.5, 0.5])
    assert np.allclose(rank_average(predictions, weights), 11 / 6)
    assert np.allclose(rank_average(predictions[::-1], weights), 11 / 6)


def test_averaging_refuses_bad_weights_and_combine():
    X, y = linear_data()
    with pytest.raises(ValueError):
        AveragingRegressor([LinearRegression()], weights=[1, 2]).fit(X, y)
    with pytest.raises(ValueError, match="weights must be 1 non-negative numbers"):
        AveragingRegressor([LinearRegression()], weights=[float("nan")]).fit(X, y)
    with pytest.raises(ValueError):
        AveragingRegressor([LinearRegression()], combine="median").fit(X, y)


# --- stacking ---------------------------------------------------------------------------------


def test_stacking_gives_all_weight_to_a_perfect_member():
    X, y = linear_data()
    model = StackedRegressor([LinearRegression(), DummyRegressor()], cv=5, random_state=0).fit(X, y)
    assert model.coef_ == pytest.approx([1.0, 0.0], abs=1e-9)
    assert model.intercept_ == pytest.approx(0.0, abs=1e-9)
    X_new, y_new = linear_data(seed=1)
    assert np.allclose(model.predict(X_new), y_new)


def test_stacking_of_two_perfect_models_predicts_exactly():
    X, y = linear_data()
    model = StackedRegressor([LinearRegression(), LinearRegression(fit_intercept=True)]).fit(X, y)
    assert sum(model.coef_) == pytest.approx(1.0)
    assert np.allclose(model.predict(X), y)


def test_stacking_learns_blend_on_out_of_fold_predictions():
    # A member that memorises its training rows looks perfect in-sample but predicts 0 out of
    # fold; a blend fitted on in-sample predictions would trust it, the cross-fitted blend must not.
    X, y = linear_data()
    ids = np.arange(len(y), dtype=np.float64)[:, None]
    X = np.hstack([ids, X])
    model = StackedRegressor([SeenRows(), LinearRegression()], cv=5, random_state=0).fit(X, y)
    assert model.coef_[0] == pytest.approx(0.0, abs=1e-9)
    assert model.coef_[1] == pytest.approx(1.0)


# --- aux-target stacking ----------------------------------------------------------------------


def test_cross_fitting_never_sees_the_held_out_rows():
    X, y = linear_data(50)
    X = np.hstack([np.arange(50, dtype=np.float64)[:, None], X])
    aux = np.column_stack([np.arange(50.0), -np.arange(50.0)])
    final = KeepInputs()
    model = AuxTargetStack(
        final_estimator=final, aux_estimator=SeenRows(), cv=5, scale_targets=False, random_state=3
    )
    model.fit(X, stack_targets(y, aux))
    # The final learner's aux columns are out-of-fold predictions: no row was in its aux model's
    # training fold, so SeenRows predicts 0 everywhere.
    assert model.final_.X_.shape == (50, X.shape[1] + 2)
    assert np.all(model.final_.X_[:, -2:] == 0.0)
    assert np.array_equal(model.final_.y_, y)  # the label alone reaches the final learner
    # At prediction time the aux models refitted on all rows have seen every training row.
    assert np.all(model.predict_aux(X) == 1.0)


def test_repeated_cross_fitting_averages_one_final_model_per_split():
    from sklearn.neighbors import KNeighborsRegressor

    X, _ = linear_data(40)
    aux = (X[:, 0] ** 2)[:, None]
    Y = stack_targets(aux[:, 0] + X[:, 1], aux)  # the label needs the (nonlinear) aux target

    def stack(random_state: int, n_repeats: int) -> AuxTargetStack:
        return AuxTargetStack(
            final_estimator=LinearRegression(),
            aux_estimator=KNeighborsRegressor(n_neighbors=3),
            cv=4,
            n_repeats=n_repeats,
            random_state=random_state,
        ).fit(X, Y)

    X_new, _ = linear_data(10, seed=9)
    single_5, single_6 = stack(5, 1), stack(6, 1)
    # Two repeats = the mean of the single-split systems with seeds 5 and 6.
    assert np.allclose(stack(5, 2).predict(X_new), (single_5.predict(X_new) + single_6.predict(X_new)) / 2)
    assert not np.allclose(single_5.predict(X_new), single_6.predict(X_new))  # the splits really differ
    with pytest.raises(ValueError, match="n_repeats"):
        AuxTargetStack(n_repeats=0).fit(X, Y)


def test_aux_stack_learns_label_through_predicted_aux():
    # The label is a function of an aux target that is itself linear in X: the stack recovers it.
    X, _ = linear_data(200)
    aux = X[:, 0] + X[:, 2]
    y = 2.0 * aux + 1.0
    model = AuxTargetStack(
        final_estimator=LinearRegression(), aux_estimator=LinearRegression(), passthrough=False
    ).fit(X, stack_targets(y, aux[:, None]))
    X_new, _ = linear_data(20, seed=5)
    assert np.allclose(model.predict(X_new), 2.0 * (X_new[:, 0] + X_new[:, 2]) + 1.0)


def test_aux_stack_without_aux_targets_is_the_final_learner():
    X, y = linear_data()
    model = AuxTargetStack(final_estimator=LinearRegression()).fit(X, y)
    assert np.allclose(model.predict(X), LinearRegression().fit(X, y).predict(X))


def test_accepts_aux_looks_through_pipelines():
    assert accepts_aux(make_learner("aux_stack", {"final": {"name": "svr"}}))
    assert accepts_aux(make_learner("average", {"members": [{"name": "mean"}]}))
    assert not accepts_aux(make_learner("svr"))


# --- aux targets ------------------------------------------------------------------------------


def test_pair_scores_by_hand():
    scores = pair_scores(["a b c d", "x y"], ["a b c e", "x y"])
    assert scores[0, 0] == pytest.approx(0.25)  # TER: one substitution in four reference words
    assert scores[1].tolist() == pytest.approx([0.0, 1.0, 1.0])  # identical: TER 0, BLEU 1, chrF 1


def test_aux_target_matrix_columns_and_missing_material():
    data = QEDataset(
        ids=["0", "1"],
        src=["s1", "s2"],
        mt=["a b c d", "a b"],
        labels=np.array([3.0, 4.0]),
        post_edits=["a b c e", "a b c"],
        references=None,
        annotator_scores=np.array([[3, 4, 2], [5, 4, 4]], dtype=float),
    )
    matrix = aux_target_matrix(data, ["hter", "pe_length_ratio", "annotator3"])
    # HTER 1/4 and 1/3 (one insertion in three post-edit words); token ratios 5/5 and 4/3.
    assert matrix[:, 0] == pytest.approx([0.25, 1 / 3])
    assert matrix[:, 1] == pytest.approx([1.0, 4 / 3])
    assert matrix[:, 2].tolist() == [2.0, 4.0]
    with pytest.raises(QEInputError, match="references"):
        aux_target_matrix(data, ["ref_chrf"])
    with pytest.raises(QEInputError, match="unknown aux target"):
        aux_target_matrix(data, ["bleurt"])


# --- experiment integration -------------------------------------------------------------------


def toy_split(n: int, seed: int):
    from qe.run.extraction import SplitData

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    words = [" ".join(["w"] * int(4 + 3 * abs(x))) for x in X[:, 0]]
    post_edits = [m + " extra" * int(abs(x) > 1) for m, x in zip(words, X[:, 0], strict=True)]
    data = QEDataset(
        ids=[str(i) for i in range(n)],
        src=words,
        mt=words,
        labels=np.clip(3 + X[:, 0], 1, 5),
        post_edits=post_edits,
    )
    import pandas as pd

    return SplitData(dataset=data, features=pd.DataFrame(X, columns=["f.a", "f.b"]))


def toy_config(learner: dict) -> ExperimentConfig:
    document = {
        "name": "toy",
        "seed": 1,
        "data": {"label_range": [1.0, 5.0]},
        "learner": {"scoring": "MAE", "clip": True, **learner},
        "cv": {"folds": 3, "n_jobs": 1},
    }
    return ExperimentConfig.from_document(document)


def test_fit_and_evaluate_passes_aux_targets_to_an_aux_learner():
    from qe.run.context import RunContext
    from qe.run.evaluate import fit_and_evaluate

    config = toy_config(
        {
            "name": "aux_stack",
            "params": {"final": {"name": "svr", "params": {"C": 1.0}}, "cv": 3},
            "aux_targets": ["hter"],
        }
    )
    fitted = fit_and_evaluate(RunContext(config), toy_split(60, 0), toy_split(20, 1))
    assert fitted.chosen.named_steps["model"].n_aux_ == 1  # the HTER column reached the learner
    assert fitted.test_pred.shape == (20,)
    assert fitted.metrics["cv"]["MAE"] < 0.5


def test_aux_targets_refused_for_a_plain_learner():
    from qe.run.context import RunContext
    from qe.run.evaluate import fit_and_evaluate

    config = toy_config({"name": "svr", "aux_targets": ["hter"]})
    with pytest.raises(QEInputError, match="aux-aware"):
        fit_and_evaluate(RunContext(config), toy_split(30, 0), toy_split(10, 1))


# --- Gaussian process -------------------------------------------------------------------------


def test_gp_interpolates_a_smooth_function():
    x = np.linspace(0, 6, 40)[:, None]
    y = np.sin(x[:, 0])
    model = GPRegressor(length_scale=1.0, noise=0.01).fit(x, y)
    x_new = np.array([[0.55], [2.05], [4.4]])
    assert model.predict(x_new) == pytest.approx(np.sin(x_new[:, 0]), abs=0.02)
    _, std = model.predict(x_new, return_std=True)
    assert std.shape == (3,) and np.all(std < 0.2)


def test_factory_builds_new_learners_with_the_run_seed():
    model = make_learner("extra_trees", seed=7)
    assert model.named_steps["model"].random_state == 7
    stacked = make_learner("stack", {"members": [{"name": "svr"}, {"name": "mean"}]}, seed=3)
    assert stacked.named_steps["model"].random_state == 3
    with pytest.raises(QEInputError, match="learner name"):
        make_learner("average", {"members": [{"params": {}}]})
