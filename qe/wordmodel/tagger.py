"""The word tagger: per kind of tag (MT words, gaps, source words) one learner giving each row a
probability of BAD, and a decision threshold per kind. The learner (``learner=``) is a seeded
scikit-learn ``HistGradientBoostingClassifier`` (``"hgb"``, the default), a linear-chain CRF over the
kind's sentences (``"crf"``, ``qe.wordmodel.crf``), or both (``"auto"``), one of which is then chosen
per kind on dev by :meth:`WordTagger.choose_thresholds`: the one reaching the higher criterion (MCC by
default) at its own dev-chosen threshold, gradient boosting on a tie.

The number of boosting iterations is chosen on the training set alone: a model is fitted on 80% of
its sentences and the iteration with the lowest log-loss on the other 20% is kept, then the model is
refitted on all of it with that many. The split is by sentence, since rows of one sentence share its
sentence-wide features and a row split would reward memorising sentences. The CRF chooses its L2
strength on the same held-out sentences.

The threshold defaults to 0.5; :meth:`WordTagger.choose_thresholds` sets it to the value that
maximises MCC (or, asked, F1-MULT) on a tagged set, which is a choice made on that set (dev): figures
measured on the same set afterwards are optimistic by the amount that choice fits it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from qe.evaluation.wordmetrics import best_threshold
from qe.infra.errors import QEInputError
from qe.wordmodel.crf import LinearChainCRF
from qe.wordmodel.features import KINDS, FeatureTables

LEARNERS = ("hgb", "crf")
"""The learners a kind may use, in the order a tie on dev is broken."""
LEARNER_CHOICES = (*LEARNERS, "auto")
"""What ``WordTagger(learner=...)`` takes: one learner for every kind, or both and a choice on dev."""


class WordTagger:
    """Per kind, a classifier of BAD against OK (gradient boosting, a CRF, or both until dev chooses)
    and the threshold that tags BAD."""

    def __init__(
        self,
        seed: int = 0,
        max_iter: int = 400,
        learning_rate: float = 0.05,
        max_leaf_nodes: int = 15,
        min_samples_leaf: int = 100,
        held_out: float = 0.2,
        learner: str = "hgb",
    ) -> None:
        if learner not in LEARNER_CHOICES:
            raise QEInputError(
                f"unknown word learner {learner!r} (expected one of {', '.join(LEARNER_CHOICES)})"
            )
        self.seed = seed
        self.max_iter = max_iter
        self.learning_rate = learning_rate
        self.max_leaf_nodes = max_leaf_nodes
        self.min_samples_leaf = min_samples_leaf
        self.held_out = held_out
        self.learner = learner

    def fit(
        self,
        tables: FeatureTables,
        bad: dict[str, np.ndarray],
        progress: Callable[[str], object] | None = None,
    ) -> WordTagger:
        """Each learner asked for on each kind's rows; ``bad[kind]`` is True for each BAD row
        (``progress`` is called with each kind before its learners are fitted)."""
        self.fitted_: dict[str, dict[str, Any]] = {}
        self.iterations_: dict[str, int] = {}
        self.l2_: dict[str, float] = {}
        self.fit_seconds_: dict[str, dict[str, float]] = {}
        learners = LEARNERS if self.learner == "auto" else (self.learner,)
        for kind in KINDS:
            if progress is not None:
                progress(kind)
            x, y = _rows(tables, kind), np.asarray(bad[kind], dtype=bool)
            if not len(x) == len(y) == int(tables.lengths[kind].sum()):
                rows = int(tables.lengths[kind].sum())
                raise QEInputError(f"{kind}: {len(x)} feature rows but {len(y)} tags and {rows} by sentence")
            if y.all() or not y.any():
                raise QEInputError(f"{kind}: the training tags are all one class; nothing to learn")
            self.fitted_[kind], self.fit_seconds_[kind] = {}, {}
            for learner in learners:
                started = time.perf_counter()
                self.fitted_[kind][learner] = self._fit_one(kind, learner, x, y, tables)
                self.fit_seconds_[kind][learner] = time.perf_counter() - started
        self.learners_: dict[str, str | None] = dict.fromkeys(
            KINDS, None if self.learner == "auto" else self.learner
        )
        self.candidates_: dict[str, dict[str, dict[str, float]]] = {kind: {} for kind in KINDS}
        self.thresholds_ = dict.fromkeys(KINDS, 0.5)
        return self

    def _fit_one(self, kind: str, learner: str, x: np.ndarray, y: np.ndarray, tables: FeatureTables) -> Any:
        """One kind's model of one learner (its iteration count or L2 strength recorded)."""
        lengths = np.asarray(tables.lengths[kind])
        if learner == "crf":
            crf = LinearChainCRF(seed=self.seed, held_out=self.held_out).fit(x, y, lengths)
            self.l2_[kind] = crf.l2_
            return crf
        sentence = np.repeat(np.arange(len(lengths)), lengths)
        self.iterations_[kind] = self._iterations(x, y, sentence)
        return self._model(self.iterations_[kind]).fit(x, y)

    @property
    def models_(self) -> dict[str, Any]:
        """Per kind, the model of its learner (once chosen)."""
        return {kind: self.fitted_[kind][self._learner(kind)] for kind in KINDS}

    def _learner(self, kind: str) -> str:
        if not hasattr(self, "fitted_"):
            raise QEInputError("the word tagger is not fitted")
        learner = self.learners_[kind]
        if learner is None:
            raise QEInputError(f'{kind}: learner = "auto" chooses on dev; choose_thresholds first')
        return learner

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

    def learner_probability(self, kind: str, learner: str, tables: FeatureTables) -> np.ndarray:
        """One kind's BAD probabilities by one of its fitted learners (with ``"auto"``, either)."""
        x, model = _rows(tables, kind), self.fitted_[kind][learner]
        if not len(x):
            return np.zeros(0)
        if learner == "crf":
            return model.bad_probability(x, tables.lengths[kind])
        return model.predict_proba(x)[:, 1]

    def bad_probability(self, tables: FeatureTables) -> dict[str, np.ndarray]:
        """Per kind, each row's probability of BAD (by the kind's learner)."""
        return {kind: self.learner_probability(kind, self._learner(kind), tables) for kind in KINDS}

    def choose_thresholds(
        self, tables: FeatureTables, bad: dict[str, np.ndarray], criterion: str = "mcc"
    ) -> dict[str, float]:
        """Set each kind's threshold to the one maximising ``criterion`` (MCC or F1-MULT) on this
        tagged set (a dev choice) and return the value reached per kind. With ``learner="auto"`` each
        fitted learner's threshold is chosen so, and the kind takes the learner reaching more
        (``candidates_`` keeps every learner's threshold and value)."""
        if not hasattr(self, "fitted_"):
            raise QEInputError("the word tagger is not fitted")
        reached = {}
        for kind in KINDS:
            candidates = {}
            for learner in self.fitted_[kind]:
                probability = self.learner_probability(kind, learner, tables)
                threshold, value = best_threshold(bad[kind], probability, criterion)
                candidates[learner] = {"threshold": threshold, criterion: value}
            chosen = max(
                candidates, key=lambda learner: (candidates[learner][criterion], -LEARNERS.index(learner))
            )
            self.candidates_[kind] = candidates
            self.learners_[kind] = chosen
            self.thresholds_[kind] = candidates[chosen]["threshold"]
            reached[kind] = candidates[chosen][criterion]
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
