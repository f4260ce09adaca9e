"""Every estimator qe defines passes scikit-learn's own estimator checks (``check_estimator``).

One instance per class, set up as qe uses it (a grid search over a scaled SVR with a grid relative
to the data, ensembles of qe learners) but small enough for the checks' toy data. One check is
expected to fail, for one setting (:func:`expected_failed_checks` says why); scikit-learn's own
GridSearchCV expects two to fail.
"""

from __future__ import annotations

import pytest
from sklearn.base import BaseEstimator
from sklearn.linear_model import Ridge
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVR
from sklearn.utils.estimator_checks import parametrize_with_checks

from qe.learners.aux import AuxTargetStack
from qe.learners.ensemble import AveragingRegressor, StackedRegressor
from qe.learners.fast import NystroemSVR
from qe.learners.gp import GPRegressor
from qe.learners.m5p import M5P
from qe.learners.search import ScaledGridSearchCV
from qe.selection.cfs import CFSSelector
from qe.selection.correlation import CorrelationSelector
from qe.selection.sequential import SequentialSelector


def _scaled_svr() -> Pipeline:
    return Pipeline([("scale", StandardScaler()), ("model", SVR())])


ESTIMATORS = [
    M5P(),
    NystroemSVR(random_state=0),
    GPRegressor(),
    AveragingRegressor([M5P(), _scaled_svr()]),
    AveragingRegressor([M5P(), _scaled_svr()], combine="rank"),
    StackedRegressor([M5P(), Ridge()], cv=3),
    AuxTargetStack(cv=3),
    ScaledGridSearchCV(
        _scaled_svr(),
        {"model__C": [1.0, 3.0], "model__gamma": [0.01, 0.1]},
        units={"model__C": "label_sd", "model__gamma": "per_feature"},
        cv=3,
    ),
    CorrelationSelector(),
    CFSSelector(),
    # The checks fit on random labels, where no feature beats the training mean: an empty selection
    # (refused by default, as a config that selects nothing is a mistake) has to be allowed here.
    SequentialSelector(Ridge(), cv=3, allow_empty=True),
]


def expected_failed_checks(estimator: BaseEstimator) -> dict[str, str]:
    """The checks an estimator fails by design, with the reason (scikit-learn's mechanism)."""
    if isinstance(estimator, AveragingRegressor) and estimator.combine == "rank":
        return {
            "check_methods_subset_invariance": "combine='rank' orders the rows of one batch by the "
            "members' rank vote, so a row's score depends on the rows scored with it"
        }
    return {}


def test_every_qe_estimator_is_checked() -> None:
    """A new estimator class in qe.learners or qe.selection has to join the list above."""
    import qe.learners.aux
    import qe.learners.ensemble
    import qe.learners.fast
    import qe.learners.gp
    import qe.learners.m5p
    import qe.learners.search
    import qe.selection.cfs
    import qe.selection.correlation
    import qe.selection.sequential

    modules = [
        qe.learners.aux,
        qe.learners.ensemble,
        qe.learners.fast,
        qe.learners.gp,
        qe.learners.m5p,
        qe.learners.search,
        qe.selection.cfs,
        qe.selection.correlation,
        qe.selection.sequential,
    ]
    defined = {
        value
        for module in modules
        for value in vars(module).values()
        if isinstance(value, type)
        and issubclass(value, BaseEstimator)
        and value.__module__ == module.__name__
    }
    assert defined == {type(estimator) for estimator in ESTIMATORS}


@parametrize_with_checks(ESTIMATORS, expected_failed_checks=expected_failed_checks)
def test_scikit_learn_estimator_checks(estimator: BaseEstimator, check) -> None:
    check(estimator)


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda estimator: type(estimator).__name__)
def test_constraints_are_declared_on_the_class(estimator: BaseEstimator) -> None:
    """Every constructor parameter has a scikit-learn constraint on the class (none kept elsewhere)."""
    constraints = type(estimator)._parameter_constraints
    assert set(estimator.get_params(deep=False)) <= set(constraints)
