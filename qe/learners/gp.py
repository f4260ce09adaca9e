"""Gaussian-process regression with a kernel built from a few plain settings (for TOML configs).

Kernel: ``amplitude * RBF(length_scale) + WhiteKernel(noise)``, optionally ``+ c * DotProduct``
(``linear = true``) so the GP can carry a linear trend as well as local structure. The
hyperparameters are the starting point of scikit-learn's marginal-likelihood optimisation on the
training data (``restarts`` extra random starts); with ``ard = true`` every feature gets its own
length scale (only sensible for a few, standardized features). ``normalize_y`` centres the label.
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import ClassVar

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, DotProduct, Kernel, WhiteKernel
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import check_is_fitted, validate_data


class GPRegressor(RegressorMixin, BaseEstimator):
    """A GaussianProcessRegressor whose kernel is made at fit time from the settings below.

    ``length_scale`` is relative to sqrt(number of features) (the typical distance between two
    standardized rows grows with it), so one default suits feature sets of any size.
    """

    _parameter_constraints: ClassVar[dict[str, list]] = {
        "length_scale": [Interval(Real, 0, None, closed="neither")],
        "noise": [Interval(Real, 0, None, closed="neither")],
        "linear": ["boolean"],
        "ard": ["boolean"],
        "restarts": [Interval(Integral, 0, None, closed="left")],
        "normalize_y": ["boolean"],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        length_scale: float = 3.0,
        noise: float = 0.5,
        linear: bool = False,
        ard: bool = False,
        restarts: int = 0,
        normalize_y: bool = True,
        random_state: int | None = 0,
    ) -> None:
        self.length_scale = length_scale
        self.noise = noise
        self.linear = linear
        self.ard = ard
        self.restarts = restarts
        self.normalize_y = normalize_y
        self.random_state = random_state

    def make_kernel(self, n_features: int) -> Kernel:
        """The initial kernel for ``n_features`` inputs."""
        scale = self.length_scale * np.sqrt(n_features)
        initial = np.full(n_features, scale) if self.ard else scale
        rbf = RBF(length_scale=initial, length_scale_bounds=(1e-2, 1e5))
        kernel = ConstantKernel(1.0, (1e-3, 1e3)) * rbf + WhiteKernel(self.noise, (1e-4, 10.0))
        if self.linear:
            kernel = kernel + ConstantKernel(0.01, (1e-6, 10.0)) * DotProduct(1.0, sigma_0_bounds="fixed")
        return kernel

    def fit(self, X: np.ndarray, y: np.ndarray) -> GPRegressor:
        """Optimise the kernel hyperparameters on the training rows and keep the fitted GP."""
        self._validate_params()
        X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=True)
        self.gp_ = GaussianProcessRegressor(
            kernel=self.make_kernel(X.shape[1]),
            normalize_y=self.normalize_y,
            n_restarts_optimizer=self.restarts,
            random_state=self.random_state,
        ).fit(X, np.asarray(y, dtype=np.float64))
        self.kernel_ = self.gp_.kernel_
        return self

    def predict(self, X: np.ndarray, return_std: bool = False) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
        """Posterior mean (and standard deviation with ``return_std``)."""
        check_is_fitted(self, "gp_")
        X = validate_data(self, X, dtype=np.float64, reset=False)
        return self.gp_.predict(X, return_std=return_std)
