"""The small base every qe selector shares: input checks, feature labels, the selection path and
the empty-selection rule. Selectors raise ``ValueError`` like any scikit-learn estimator; the config
boundary (:func:`qe.selection.make_selector`, :func:`qe.run.selection.select_features`) turns that
into one line."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.feature_selection import SelectorMixin
from sklearn.utils.validation import check_is_fitted, validate_data

MIN_ROWS = 3
"""Fewer rows give no correlation or cross-validation worth selecting by."""


class PathSelector(SelectorMixin, BaseEstimator):
    """Base of the qe selectors: a boolean ``support_`` mask plus the selection ``path_``.

    ``path_`` is a list of ``{"step", "feature", "score"}`` dicts in the order the search took
    its steps; ``feature`` is the column name when fitted on a DataFrame, else the column index.
    """

    allow_empty: bool
    _parameter_constraints: ClassVar[dict[str, list]] = {"allow_empty": ["boolean"]}

    def check_params(self) -> None:
        """Refuse parameters outside the class's constraints (scikit-learn's ``InvalidParameterError``,
        a ``ValueError``); called by :func:`qe.selection.make_selector` before any work, and at ``fit``."""
        self._validate_params()

    def _check_input(self, X: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
        X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=True, ensure_min_samples=MIN_ROWS)
        return X, np.asarray(y, dtype=np.float64)

    def _label(self, index: int) -> str | int:
        """How a column is named in ``path_``: its DataFrame name, else its index."""
        names = getattr(self, "feature_names_in_", None)
        return str(names[index]) if names is not None else int(index)

    def _set_support(self, selected: list[int] | np.ndarray, what: str) -> None:
        """Store the selected columns; refuse an empty selection unless ``allow_empty``."""
        mask = np.zeros(self.n_features_in_, dtype=bool)
        mask[np.asarray(list(selected), dtype=np.int64)] = True
        if not mask.any() and not self.allow_empty:
            raise ValueError(
                f"selection would select nothing: {what} (set allow_empty=True to accept an empty selection)"
            )
        self.support_ = mask

    def _get_support_mask(self) -> np.ndarray:
        check_is_fitted(self, "support_")
        return self.support_

    def selected_features(self) -> list[str | int]:
        """The selected columns in path order (names when fitted on a DataFrame)."""
        check_is_fitted(self, "support_")
        chosen = [self._label(i) for i in np.flatnonzero(self.support_)]
        seen = [step["feature"] for step in self.path_ if step["feature"] in chosen]
        ordered = list(dict.fromkeys(seen))
        return ordered + [f for f in chosen if f not in ordered]
