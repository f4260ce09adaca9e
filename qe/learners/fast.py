"""An RBF SVR for large training sets: a Nyström kernel map followed by a linear epsilon-insensitive SVR.

Exact SVR (libsvm) fits in time that grows faster than the rows (about a minute for one fit on
26,000 MLQE-PE rows here, so a 48-candidate CV grid takes over an hour). ``NystroemSVR`` maps the rows
onto ``n_components`` landmark rows through the same RBF kernel (``sklearn.kernel_approximation.
Nystroem``) and fits liblinear's ``LinearSVR`` (same C / epsilon loss, dual coordinate descent) in
that space: time linear in the rows, the same parameters C, gamma and epsilon as ``SVR``.
"""

from __future__ import annotations

import warnings
from numbers import Integral, Real
from typing import Any, ClassVar

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.kernel_approximation import Nystroem
from sklearn.svm import LinearSVR
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data


class NystroemSVR(RegressorMixin, BaseEstimator):
    """SVR with an approximate RBF kernel: ``exp(-gamma |x - x'|^2)`` through ``n_components`` landmarks.

    ``gamma="scale"`` is SVR's default, ``1 / (n_features * X.var())``. The labels are centred on
    their mean before the linear fit (liblinear penalises the intercept like a weight), and
    liblinear's "did not converge" warnings are kept quiet: ``n_iter_`` records the iterations
    used (``max_iter`` means the limit was hit; raise it for a closer fit).
    """

    _parameter_constraints: ClassVar[dict[str, list]] = {
        "C": [Interval(Real, 0, None, closed="neither")],
        "gamma": [Interval(Real, 0, None, closed="neither"), StrOptions({"scale"})],
        "epsilon": [Interval(Real, 0, None, closed="left")],
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="neither")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        C: float = 1.0,
        gamma: float | str = "scale",
        epsilon: float = 0.1,
        n_components: int = 150,
        tol: float = 1e-4,
        max_iter: int = 1000,
        random_state: int | None = None,
    ) -> None:
        self.C = C
        self.gamma = gamma
        self.epsilon = epsilon
        self.n_components = n_components
        self.tol = tol
        self.max_iter = max_iter
        self.random_state = random_state

    def fit(self, X: Any, y: Any) -> NystroemSVR:
        """Choose the landmarks, map the rows, fit the linear SVR on the centred labels."""
        self._validate_params()
        X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=True)
        gamma = self.gamma
        if gamma == "scale":
            variance = float(X.var())
            gamma = 1.0 / (X.shape[1] * variance) if variance > 0 else 1.0
        self.gamma_ = float(gamma)
        self.offset_ = float(np.mean(y))
        self.map_ = Nystroem(
            kernel="rbf",
            gamma=self.gamma_,
            n_components=min(self.n_components, X.shape[0]),
            random_state=self.random_state,
        ).fit(X)
        self.svr_ = LinearSVR(
            C=self.C,
            epsilon=self.epsilon,
            loss="epsilon_insensitive",
            dual=True,
            tol=self.tol,
            max_iter=self.max_iter,
            random_state=self.random_state,
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            self.svr_.fit(self.map_.transform(X), y - self.offset_)
        self.n_iter_ = int(self.svr_.n_iter_)
        return self

    def predict(self, X: Any) -> np.ndarray:
        """Predicted labels for new rows."""
        check_is_fitted(self, "svr_")
        X = validate_data(self, X, dtype=np.float64, reset=False)
        return self.svr_.predict(self.map_.transform(X)) + self.offset_
