"""Build learners by name: SVR with CV grid search (exact, or approximate for large data, or ``auto``
by size), random forest, M5P, a training-mean baseline, tree ensembles, Gaussian processes, kernel
ridge, averaging / stacking and aux-target stacking."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from numbers import Real
from typing import TYPE_CHECKING, Any

from qe.config.rules import register_names
from qe.evaluation.metrics import METRICS
from qe.infra.errors import QEInputError

if TYPE_CHECKING:
    from sklearn.base import BaseEstimator

# Default SVR grid: brackets QuEst's published choice (C=10, gamma=0.0034, epsilon=0.18) in WMT12's
# units; at fit time C and epsilon scale with the labels' sd, gamma with 17 / the number of features
# (qe.learners.search), so on WMT12 (sd 0.875, 17 features) these are the values searched.
DEFAULT_SVR_GRID: dict[str, list[float]] = {
    "C": [1.0, 3.0, 10.0, 30.0],
    "gamma": [0.001, 0.0034, 0.01, 0.03],
    "epsilon": [0.1, 0.2, 0.3],
}
# The fast SVR's default grid, in the same units: 6 candidates, so that a 5-fold search on 26,000
# rows takes one to two minutes on 2 cores. Larger C fits a little better in CV (26,000 MLQE-PE rows:
# C=3 won by 0.0003 MAE) but costs liblinear many more passes (measurements: docs/learners.md).
DEFAULT_FAST_GRID: dict[str, list[float]] = {
    "C": [1.0, 3.0],
    "gamma": [0.001, 0.0034, 0.01],
    "epsilon": [0.2],
}
RELATIVE_UNITS = {"C": "label_sd", "epsilon": "label_sd", "gamma": "per_feature"}
"""How the default grids' values follow the training data (see :mod:`qe.learners.search`)."""
AUTO = "auto"
FAST_ABOVE = 5000
"""``auto`` fits the exact SVR up to this many training rows and ``svr_fast`` above (docs/learners.md)."""

SCORINGS = tuple(name for name, metric in METRICS.items() if metric.scorer is not None)
"""A learner's ``scoring``: the metrics that can choose hyperparameters (``Metric.sklearn_scorer``)."""


def _m5p(**params: Any) -> BaseEstimator:
    from qe.learners.m5p import M5P

    return M5P(**params)


def _svr(**params: Any) -> BaseEstimator:
    from sklearn.svm import SVR

    return SVR(kernel=params.pop("kernel", "rbf"), **params)


def _svr_fast(**params: Any) -> BaseEstimator:
    from qe.learners.fast import NystroemSVR

    return NystroemSVR(**params)


def _random_forest(**params: Any) -> BaseEstimator:
    from sklearn.ensemble import RandomForestRegressor

    params.setdefault("n_estimators", 500)
    params.setdefault("min_samples_leaf", 5)
    params.setdefault("max_features", 0.33)
    params.setdefault("random_state", 0)
    return RandomForestRegressor(**params)


def _mean(**params: Any) -> BaseEstimator:
    if params:
        raise QEInputError(f"learner 'mean' takes no parameters (got {', '.join(params)})")
    from sklearn.dummy import DummyRegressor

    return DummyRegressor(strategy="mean")


def _extra_trees(**params: Any) -> BaseEstimator:
    from sklearn.ensemble import ExtraTreesRegressor

    params.setdefault("n_estimators", 500)
    params.setdefault("min_samples_leaf", 5)
    params.setdefault("max_features", 0.33)
    return ExtraTreesRegressor(**params)


def _gradient_boosting(**params: Any) -> BaseEstimator:
    from sklearn.ensemble import HistGradientBoostingRegressor

    params.setdefault("learning_rate", 0.03)
    params.setdefault("max_iter", 300)
    params.setdefault("max_depth", 3)
    params.setdefault("min_samples_leaf", 20)
    return HistGradientBoostingRegressor(**params)


def _kernel_ridge(**params: Any) -> BaseEstimator:
    from sklearn.kernel_ridge import KernelRidge

    params.setdefault("kernel", "rbf")
    return KernelRidge(**params)


def _ridge(**params: Any) -> BaseEstimator:
    """Linear least squares with an L2 penalty chosen by efficient leave-one-out CV on the training rows."""
    from sklearn.linear_model import RidgeCV

    params.setdefault("alphas", [1.0, 3.0, 10.0, 30.0, 100.0, 300.0, 1000.0, 3000.0, 10000.0])
    return RidgeCV(**params)


def _gp(**params: Any) -> BaseEstimator:
    from qe.learners.gp import GPRegressor

    return GPRegressor(**params)


def build_members(
    members: list[dict[str, Any]], seed: int = 42, where: str = "members"
) -> list[BaseEstimator]:
    """Estimators from learner specs (see :func:`build_member`), named ``where[i]`` in errors."""
    if not members:
        raise QEInputError(f"{where}: an ensemble needs at least one member")
    return [build_member(spec, seed, f"{where}[{index}]") for index, spec in enumerate(members)]


def build_member(spec: Any, seed: int = 42, where: str = "member") -> BaseEstimator:
    """An estimator from a learner spec (``name`` required; ``params``, ``grid``, ``scale``, ``scoring``);
    errors name it ``where`` (e.g. ``learner.params.members[1]`` -> ``...members[1].params.C``)."""
    if not isinstance(spec, dict) or "name" not in spec:
        raise QEInputError(f"{where}: each ensemble member must be a table with a learner name")
    if spec["name"] == "auto":
        raise QEInputError(
            f"{where}: learner 'auto' chooses by the training size of a whole run; "
            "name 'svr' or 'svr_fast' for an ensemble member"
        )
    unknown = set(spec) - {"name", "params", "grid", "scale", "scoring"}
    if unknown:
        raise QEInputError(f"{where}: unknown key(s) in ensemble member: {', '.join(sorted(unknown))}")
    return make_learner(
        spec["name"],
        spec.get("params"),
        spec.get("grid"),
        scale=spec.get("scale"),
        seed=seed,
        scoring=spec.get("scoring", "MAE"),
        n_jobs=1,
        where=where,
    )


def _average(
    members: list[dict[str, Any]] | None = None, random_state: int = 42, where: str = "", **params: Any
) -> BaseEstimator:
    from qe.learners.ensemble import AveragingRegressor

    return AveragingRegressor(
        build_members(members or [], seed=random_state, where=f"{where}.members"), **params
    )


def _stack(
    members: list[dict[str, Any]] | None = None, random_state: int = 42, where: str = "", **params: Any
) -> BaseEstimator:
    from qe.learners.ensemble import StackedRegressor

    return StackedRegressor(
        build_members(members or [], seed=random_state, where=f"{where}.members"),
        random_state=random_state,
        **params,
    )


def _aux_stack(
    final: dict[str, Any] | None = None,
    aux: dict[str, Any] | None = None,
    random_state: int = 42,
    where: str = "",
    **params: Any,
) -> BaseEstimator:
    from qe.learners.aux import AuxTargetStack

    final_estimator = build_member(final, random_state, f"{where}.final") if final else None
    aux_estimator = build_member(aux, random_state, f"{where}.aux") if aux else None
    return AuxTargetStack(final_estimator, aux_estimator, random_state=random_state, **params)


_TREE = "sklearn.tree._tree.Tree"
_GP = (
    "qe.learners.gp.GPRegressor",
    "sklearn.gaussian_process._gpr.GaussianProcessRegressor",
    "sklearn.gaussian_process.kernels.ConstantKernel",
    "sklearn.gaussian_process.kernels.DotProduct",
    "sklearn.gaussian_process.kernels.Product",
    "sklearn.gaussian_process.kernels.RBF",
    "sklearn.gaussian_process.kernels.Sum",
    "sklearn.gaussian_process.kernels.WhiteKernel",
)
_BOOSTING = (
    "sklearn.ensemble._hist_gradient_boosting.gradient_boosting.HistGradientBoostingRegressor",
    "sklearn.ensemble._hist_gradient_boosting.binning._BinMapper",
    "sklearn.ensemble._hist_gradient_boosting.predictor.TreePredictor",
    # the losses of its ``loss`` choices and their links
    "sklearn._loss.link.IdentityLink",
    "sklearn._loss.link.LogLink",
    "sklearn._loss.link.Interval",
    "sklearn._loss.loss.HalfSquaredError",
    "sklearn._loss.loss.AbsoluteError",
    "sklearn._loss.loss.PinballLoss",
    "sklearn._loss.loss.HalfPoissonLoss",
    "sklearn._loss._loss.CyHalfSquaredError",
    "sklearn._loss._loss.CyAbsoluteError",
    "sklearn._loss._loss.CyPinballLoss",
    "sklearn._loss._loss.CyHalfPoissonLoss",
)


@dataclass(frozen=True)
class LearnerRecord:
    """One learner a config can name: how it is built and what qe knows of it.

    ``build(**params)`` makes the estimator (a ``nested`` learner, made of other learners, also takes
    ``where``, the config key its errors name); ``scaled``: features are standardized first unless the
    config's ``scale`` says otherwise; ``seeded``: it has randomness or inner CV folds, so its
    ``random_state`` defaults to the run's seed; ``grid``: what ``grid = "default"`` searches (in the
    units of :data:`RELATIVE_UNITS`); ``saves``: the classes (module.class, as skops records them) its
    fitted model holds besides its members' and every model's, which :mod:`qe.model.allowlist` allows.
    """

    name: str
    build: Callable[..., BaseEstimator]
    scaled: bool = False
    seeded: bool = False
    nested: bool = False
    grid: Mapping[str, list[float]] | None = None
    saves: tuple[str, ...] = ()


def _register(*records: LearnerRecord) -> dict[str, LearnerRecord]:
    names = [record.name for record in records]
    if len(set(names)) != len(names) or AUTO in names:
        raise ValueError(f"learner names must be distinct and not {AUTO!r}: {names}")
    return {record.name: record for record in records}


LEARNERS: dict[str, LearnerRecord] = _register(
    LearnerRecord("svr", _svr, scaled=True, grid=DEFAULT_SVR_GRID, saves=("sklearn.svm._classes.SVR",)),
    LearnerRecord(
        "svr_fast",
        _svr_fast,
        scaled=True,
        seeded=True,
        grid=DEFAULT_FAST_GRID,
        saves=(
            "qe.learners.fast.NystroemSVR",
            "sklearn.kernel_approximation.Nystroem",
            "sklearn.svm._classes.LinearSVR",
        ),
    ),
    LearnerRecord(
        "random_forest",
        _random_forest,
        seeded=True,
        saves=(
            "sklearn.ensemble._forest.RandomForestRegressor",
            "sklearn.tree._classes.DecisionTreeRegressor",
            _TREE,
        ),
    ),
    LearnerRecord("m5p", _m5p, saves=("qe.learners.m5p.M5P",)),
    LearnerRecord("mean", _mean, saves=("sklearn.dummy.DummyRegressor",)),
    LearnerRecord(
        "extra_trees",
        _extra_trees,
        seeded=True,
        saves=(
            "sklearn.ensemble._forest.ExtraTreesRegressor",
            "sklearn.tree._classes.ExtraTreeRegressor",
            _TREE,
        ),
    ),
    LearnerRecord("gradient_boosting", _gradient_boosting, seeded=True, saves=_BOOSTING),
    LearnerRecord("kernel_ridge", _kernel_ridge, scaled=True, saves=("sklearn.kernel_ridge.KernelRidge",)),
    LearnerRecord("ridge", _ridge, scaled=True, saves=("sklearn.linear_model._ridge.RidgeCV",)),
    LearnerRecord("gp", _gp, scaled=True, seeded=True, saves=_GP),
    # members scale themselves
    LearnerRecord(
        "average", _average, seeded=True, nested=True, saves=("qe.learners.ensemble.AveragingRegressor",)
    ),
    LearnerRecord(
        "stack", _stack, seeded=True, nested=True, saves=("qe.learners.ensemble.StackedRegressor",)
    ),
    LearnerRecord(
        "aux_stack",
        _aux_stack,
        seeded=True,
        nested=True,
        saves=("qe.learners.aux.AuxTargetStack", "sklearn.svm._classes.SVR"),  # SVR: its default members
    ),
)
"""Every learner a config can name (besides ``auto``), by name."""
register_names("learner", lambda: [*LEARNERS, AUTO])
register_names("scoring", SCORINGS)


def check_params(estimator: BaseEstimator, params: dict[str, Any], where: str) -> None:
    """Refuse parameter values outside the estimator's scikit-learn parameter constraints (its class's
    ``_parameter_constraints``) before anything is fitted, naming ``where.NAME`` and what is allowed.
    Booleans never stand in for numbers: ``n_estimators = true`` is refused, not a forest of one tree."""
    from sklearn.utils._param_validation import InvalidParameterError, validate_parameter_constraints

    from qe.config.rules import _show as show  # as the config spells it: true, not True

    constraints = getattr(type(estimator), "_parameter_constraints", {})
    for name, value in params.items():
        if name not in constraints:
            continue
        rules = constraints[name]
        takes_booleans = any(rule in ("boolean", "verbose", "no_validation", bool) for rule in rules)
        probe = _NOT_A_VALUE if isinstance(value, bool) and not takes_booleans else value
        try:
            validate_parameter_constraints({name: rules}, {name: probe}, type(estimator).__name__)
        except InvalidParameterError as exc:
            found = re.search(r"must be (.*)\. Got .* instead\.$", str(exc), re.DOTALL)
            allowed = found.group(1) if found else str(exc)
            raise QEInputError(f"{where}.{name} = {show(value)}: expected {allowed}") from None


_NOT_A_VALUE = object()
"""What a boolean is checked as where the constraints take no booleans: nothing satisfies it."""


def auto_choice(n_rows: int | None, fast_above: int | None = None) -> str:
    """The learner ``auto`` stands for: ``svr`` up to ``fast_above`` training rows (default
    :data:`FAST_ABOVE`), ``svr_fast`` above; ``svr`` when the size is not known yet."""
    limit = FAST_ABOVE if fast_above is None else fast_above
    return "svr_fast" if n_rows is not None and n_rows > limit else "svr"


def make_learner(
    name: str,
    params: dict[str, Any] | None = None,
    grid: dict[str, list[Any]] | str | None = None,
    *,
    scale: bool | None = None,
    cv_folds: int = 5,
    seed: int = 42,
    scoring: str = "MAE",
    n_jobs: int | None = None,
    where: str = "learner",
    cv: Any = None,
    n_rows: int | None = None,
    fast_above: int | None = None,
) -> BaseEstimator:
    """A scikit-learn estimator: optional standardization (fitted on training data only) + learner.

    With a ``grid`` the pipeline is wrapped in a grid search over ``cv_folds`` shuffled folds,
    so hyperparameters are chosen on training data only (``cv``: another splitter, e.g. a
    ``PredefinedSplit`` that scores on a dev split); ``grid = "default"`` uses the learner's default
    grid (``svr`` and ``svr_fast``; other learners: none), whose C, epsilon and gamma follow the
    training labels' spread and the number of features (:class:`ScaledGridSearchCV`). ``auto`` is
    ``svr`` or ``svr_fast`` by ``n_rows`` (:func:`auto_choice`; without ``n_rows`` the parameters
    are checked for both and ``svr`` is built). Parameter and grid values are checked against the
    learner's constraints (:func:`check_params`); errors name the key under ``where``.
    """
    if fast_above is not None and name != AUTO:
        raise QEInputError(f"{where}.fast_above only applies to learner {AUTO!r}, not {name!r}")
    if name == AUTO:
        options = dict(scale=scale, cv_folds=cv_folds, seed=seed, scoring=scoring, n_jobs=n_jobs, where=where)
        if n_rows is None:
            make_learner("svr_fast", params, grid, **options)
        return make_learner(auto_choice(n_rows, fast_above), params, grid, cv=cv, **options)
    if name not in LEARNERS:
        allowed = ", ".join([*LEARNERS, AUTO])
        raise QEInputError(f"{where}.name: unknown learner {name!r} (allowed: {allowed})")
    if scoring not in SCORINGS:
        raise QEInputError(f"{where}.scoring: unknown scoring {scoring!r} (allowed: {', '.join(SCORINGS)})")
    from sklearn.model_selection import KFold
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import StandardScaler

    from qe.learners.search import ScaledGridSearchCV

    record = LEARNERS[name]
    params = dict(params or {})
    if record.seeded:
        params.setdefault("random_state", seed)
    nested = {"where": f"{where}.params"} if record.nested else {}
    try:
        estimator = record.build(**params, **nested)
    except TypeError as exc:
        raise QEInputError(f"{where}.params: bad parameter for learner {name!r}: {exc}") from None
    check_params(estimator, params, f"{where}.params")
    steps = []
    if record.scaled if scale is None else scale:
        steps.append(("scale", StandardScaler()))
    steps.append(("model", estimator))
    pipeline = Pipeline(steps)
    units = {}
    if grid == "default":
        grid = record.grid
        units = {f"model__{key}": unit for key, unit in RELATIVE_UNITS.items() if key in (grid or {})}
    if not grid:
        return pipeline
    unknown = [key for key in grid if key not in estimator.get_params()]
    if unknown:
        raise QEInputError(f"{where}.grid names unknown parameter(s) of {name!r}: {', '.join(unknown)}")
    for key, values in grid.items():
        for value in values:
            check_params(estimator, {key: value}, f"{where}.grid")
    return ScaledGridSearchCV(
        pipeline,
        {f"model__{key}": list(values) for key, values in grid.items()},
        units=units or None,
        scoring=METRICS[scoring].sklearn_scorer(),
        cv=cv if cv is not None else KFold(cv_folds, shuffle=True, random_state=seed),
        n_jobs=n_jobs,
        refit=True,
    )


def _short(value: Any) -> str:
    """A grid value as the signature shows it: numbers with ``:g``, anything else as text."""
    numeric = isinstance(value, Real) and not isinstance(value, bool)
    return f"{value:g}" if numeric else str(value)


def describe(estimator: BaseEstimator) -> str:
    """A compact description of a fitted estimator for signatures: learner name and chosen parameters."""
    from sklearn.model_selection import GridSearchCV
    from sklearn.pipeline import Pipeline

    chosen = ""
    if isinstance(estimator, GridSearchCV):
        chosen = ",".join(
            f"{k.removeprefix('model__')}={_short(v)}" for k, v in sorted(estimator.best_params_.items())
        )
        estimator = estimator.best_estimator_
    model = estimator.steps[-1][1] if isinstance(estimator, Pipeline) else estimator
    scaled = isinstance(estimator, Pipeline) and "scale" in estimator.named_steps
    return f"{type(model).__name__}({chosen}{';' if chosen else ''}scaled={scaled})"
