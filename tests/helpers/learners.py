"""Every learner the factory builds, fitted small (tests/test_hostile_models.py, tests/test_plainmodel.py)."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from sklearn.model_selection import GridSearchCV

from qe import __version__
from qe.learners.factory import make_learner
from qe.model.manifest import ModelManifest

# The manifest of a model on the surface family with no resources.
MANIFEST_DOCUMENT = {
    "qe_version": __version__,
    "families": ["surface"],
    "family_settings": {},
    "feature_sets": [],
    "resources": None,
    "label_range": None,
}
MANIFEST = ModelManifest.from_document(MANIFEST_DOCUMENT)

# Every learner the factory can build, with the settings that change what its fitted tree holds.
FACTORY_SPECS: list[tuple[str, dict]] = [
    ("svr", {}),
    ("svr", {"grid": "default"}),
    ("svr", {"grid": {"C": [1.0, 3.0]}, "scoring": "DeltaAvg"}),
    ("svr", {"params": {"kernel": "poly", "degree": 2}}),
    ("svr_fast", {"params": {"n_components": 20}}),
    ("svr_fast", {"grid": "default", "params": {"n_components": 20}}),
    ("random_forest", {"params": {"n_estimators": 5}}),
    ("random_forest", {"params": {"n_estimators": 5, "oob_score": True, "max_samples": 0.5}}),
    ("m5p", {}),
    ("m5p", {"params": {"build_regression_tree": True, "unsmoothed": True}, "scale": True}),
    ("mean", {}),
    ("extra_trees", {"params": {"n_estimators": 5}}),
    ("gradient_boosting", {"params": {"max_iter": 10}}),
    ("gradient_boosting", {"params": {"max_iter": 10, "loss": "absolute_error", "early_stopping": True}}),
    ("gradient_boosting", {"params": {"max_iter": 10, "loss": "quantile", "quantile": 0.5}}),
    ("gradient_boosting", {"params": {"max_iter": 10, "loss": "poisson"}}),
    ("kernel_ridge", {}),
    ("kernel_ridge", {"params": {"kernel": "laplacian"}}),
    ("ridge", {}),
    ("ridge", {"params": {"alphas": [0.1, 1.0]}}),
    ("gp", {}),
    ("gp", {"params": {"linear": True, "ard": True, "restarts": 1}}),
    (
        "average",
        {
            "params": {
                "members": [
                    {"name": "svr", "grid": {"C": [1.0, 3.0]}, "scoring": "Spearman"},
                    {"name": "m5p"},
                    {"name": "random_forest", "params": {"n_estimators": 5}},
                ],
                "combine": "rank",
            }
        },
    ),
    (
        "stack",
        {
            "params": {
                "members": [
                    {"name": "svr", "grid": {"C": [1.0, 3.0]}},
                    {"name": "extra_trees", "params": {"n_estimators": 5}},
                    {"name": "gradient_boosting", "params": {"max_iter": 10}},
                    {"name": "aux_stack"},
                ],
                "cv": 3,
            }
        },
    ),
    ("aux_stack", {"params": {"final": {"name": "kernel_ridge"}, "aux": {"name": "gp"}, "n_repeats": 2}}),
]


def fit_factory_learner(name: str, spec: dict) -> tuple[Any, np.ndarray]:
    """A learner of FACTORY_SPECS fitted on 60 rows of 3 features (its searches' best estimator),
    and those rows."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(60, 3))
    y = np.abs(x.sum(axis=1) + rng.normal(0, 0.1, 60)) + 1
    target = np.column_stack([y, x[:, 0]]) if name in ("average", "stack", "aux_stack") else y
    params, grid, scoring = spec.get("params"), spec.get("grid"), spec.get("scoring", "MAE")
    estimator = make_learner(name, params, grid, scale=spec.get("scale"), scoring=scoring)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        estimator.fit(x, target)
    return (estimator.best_estimator_ if isinstance(estimator, GridSearchCV) else estimator), x
