"""The word tagger: one scikit-learn ``HistGradientBoostingClassifier`` (seeded) per kind of tag (MT
words, gaps, source words) giving each row a probability of BAD, and a decision threshold per kind.

The number of boosting iterations is chosen on the training set alone: a model is fitted on 80% of
its sentences and the iteration with the lowest log-loss on the other 20% is kept, then the model is
refitted on all of it with that many. The split is by sentence, since rows of one sentence share its
sentence-wide features and a row split would reward memorising sentences.

The threshold defaults to 0.5; :meth:`WordTagger.choose_thresholds` sets it to the value that
maximises MCC (or, asked, F1-MULT) on a tagged set, which is a choice made on that set (dev): figures
measured on the same set afterwards are optimistic by the amount that choice fits it.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from qe.infra.errors import QEInputError
from qe.wordmodel.features import KINDS, FeatureTables

CRITERIA = ("mcc", "f1_mult")
"""What a threshold may be chosen to maximise (``qe.evaluation.wordmetrics``' definitions)."""


def best_threshold(bad: np.ndarray, probability: np.ndarray, criterion: str = "mcc") -> tuple[float, float]:
    """(threshold, criterion reached) maximising ``criterion`` (MCC or F1-MULT) when rows with
    probability >= threshold are tagged BAD; every distinct probability is tried (ties go the same
    way). No row, or one class only: (0.5, 0.0)."""
    if criterion not in CRITERIA:
        raise QEInputError(
            f"unknown threshold criterion {criterion!r} (expected one of {', '.join(CRITERIA)})"
        )
    bad = np.asarray(bad, dtype=bool)
    probability = np.asarray(probability, dtype=np.float64)
    if len(bad) != len(probability):
        raise QEInputError(f"{len(bad)} tags but {len(probability)} probabilities")
    if len(bad) == 0 or bad.all() or not bad.any():
        return 0.5, 0.0
    order = np.argsort(-probability, kind="stable")
    p, y = probability[order], bad[order]
    last_of_tie = np.r_[p[1:] != p[:-1], True]  # cut only between distinct probabilities
    tp = np.cumsum(y)[last_of_tie].astype(np.float64)
    fp = np.cumsum(~y)[last_of_tie].astype(np.float64)
    positives, negatives = float(y.sum()), float((~y).sum())
    fn, tn = positives - tp, negatives - fp
    if criterion == "mcc":
        denominator = np.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
        value = np.divide(tp * tn - fp * fn, denominator, out=np.zeros_like(tp), where=denominator > 0)
    else:
        f1_bad = 2 * tp / (2 * tp + fp + fn)  # > 0: both classes are present
        f1_ok = 2 * tn / (2 * tn + fn + fp)
        value = f1_ok * f1_bad
    best = int(np.argmax(value))
    return float(p[last_of_tie][best]), float(value[best])


class WordTagger:
    """Per kind, a gradient-boosting classifier of BAD against OK and the threshold that tags BAD."""

    def __init__(
        self,
        seed: int = 0,
        max_iter: int = 400,
        learning_rate: float = 0.05,
        max_leaf_nodes: int = 15,
        min_samples_leaf: int = 100,
        held_out: float = 0.2,
    ) -> None:
        self.seed = seed
        self.max_iter = max_iter
        self.learning_rate = learning_rate
        self.max_leaf_nodes = max_leaf_nodes
        self.min_samples_leaf = min_samples_leaf
        self.held_out = held_out

    def fit(
        self,
        tables: FeatureTables,
        bad: dict[str, np.ndarray],
        progress: Callable[[str], object] | None = None,
    ) -> WordTagger:
        """One classifier per kind on its rows; ``bad[kind]`` is True for each BAD row (``progress``
        is called with each kind before its classifier is fitted)."""
        self.models_, self.iterations_ = {}, {}
        for kind in KINDS:
            if progress is not None:
                progress(kind)
            x, y = _rows(tables, kind), np.asarray(bad[kind], dtype=bool)
            if not len(x) == len(y) == int(tables.lengths[kind].sum()):
                rows = int(tables.lengths[kind].sum())
                raise QEInputError(f"{kind}: {len(x)} feature rows but {len(y)} tags and {rows} by sentence")
            if y.all() or not y.any():
                raise QEInputError(f"{kind}: the training tags are all one class; nothing to learn")
            sentence = np.repeat(np.arange(len(tables.lengths[kind])), tables.lengths[kind])
            self.iterations_[kind] = self._iterations(x, y, sentence)
            self.models_[kind] = self._model(self.iterations_[kind]).fit(x, y)
        self.thresholds_ = dict.fromkeys(KINDS, 0.5)
        return self

    def _model(self, iterations: int):
        from sklearn.ensemble import HistGradientBoostingClassifier

        return HistGradientBoostingClassifier(
            max_iter=iterations,
            learning_rate=self.learning_rate,
            max_leaf_nodes=self.max_leaf_nodes,
            min_samples_leaf=self.min_samples_leaf,
            early_stopping=False,
            random_state=self.seed,
        )

    def _iterations(self, x: np.ndarray, y: np.ndarray, sentence: np.ndarray) -> int:
        """The iteration count with the lowest log-loss on held-out training sentences (all of
        ``max_iter`` when the held-out part lacks a class)."""
        held_sentences = np.random.default_rng(self.seed).random(int(sentence.max()) + 1) < self.held_out
        held = held_sentences[sentence]
        if len(np.unique(y[held])) < 2 or len(np.unique(y[~held])) < 2:
            return self.max_iter
        model = self._model(self.max_iter).fit(x[~held], y[~held])
        eps = 1e-12
        losses = [
            -np.mean(np.where(y[held], np.log(p[:, 1] + eps), np.log(p[:, 0] + eps)))
            for p in model.staged_predict_proba(x[held])
        ]
        return int(np.argmin(losses)) + 1

    def bad_probability(self, tables: FeatureTables) -> dict[str, np.ndarray]:
        """Per kind, each row's probability of BAD."""
        if not hasattr(self, "models_"):
            raise QEInputError("the word tagger is not fitted")
        out = {}
        for kind in KINDS:
            x = _rows(tables, kind)
            out[kind] = self.models_[kind].predict_proba(x)[:, 1] if len(x) else np.zeros(0)
        return out

    def choose_thresholds(
        self, tables: FeatureTables, bad: dict[str, np.ndarray], criterion: str = "mcc"
    ) -> dict[str, float]:
        """Set each kind's threshold to the one maximising ``criterion`` (MCC or F1-MULT) on this
        tagged set (a dev choice) and return the value reached per kind."""
        reached = {}
        for kind, probability in self.bad_probability(tables).items():
            self.thresholds_[kind], reached[kind] = best_threshold(bad[kind], probability, criterion)
        return reached

    def predict(self, tables: FeatureTables) -> dict[str, np.ndarray]:
        """Per kind, True (BAD) for each row whose probability reaches the kind's threshold."""
        return {
            kind: probability >= self.thresholds_[kind]
            for kind, probability in self.bad_probability(tables).items()
        }


def _rows(tables: FeatureTables, kind: str) -> np.ndarray:
    """The kind's feature matrix as float64 (NaN stays missing)."""
    x = np.asarray(tables.tables[kind], dtype=np.float64)
    if x.ndim != 2:
        raise QEInputError(f"{kind}: the feature table must be a matrix")
    return x
