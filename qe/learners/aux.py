"""Auxiliary supervision from training-only material (post-edits, references, per-judge scores).

The WMT12 training set comes with post-edits, independent references and the three judges'
scores; the test set (and any real input) has none of them. They can still help as *auxiliary
targets*: :class:`AuxTargetStack` learns to predict them from the features by cross-fitting and
feeds the predicted values to the final learner as extra features, so nothing but the features is
needed at prediction time.

Aux targets (:data:`AUX_TARGETS`), from sacreBLEU 2.x on the raw strings (whitespace collapsed):

- ``hter`` / ``hbleu`` / ``hchrf``: TER (edits per post-edit word, sacreBLEU defaults,
  case-insensitive), sentence BLEU (exp smoothing, effective order, 13a) and chrF2 of the MT
  output against its post-edit, TER as a fraction, BLEU and chrF on a 0-1 scale;
- ``ref_ter`` / ``ref_bleu`` / ``ref_chrf``: the same against the independent reference;
- ``pe_length_ratio``: (post-edit tokens + 1) / (MT tokens + 1), 13a tokens;
- ``annotator1`` .. ``annotator3``: the judges' individual 1-5 scores.

Transport through scikit-learn: ``fit(X, Y)`` takes a 2-D ``Y`` whose first column is the label
and whose other columns are the aux targets (:func:`stack_targets`), so that KFold, Pipeline and
``cross_val_predict`` split the aux targets together with the rows they belong to.
"""

from __future__ import annotations

from collections.abc import Callable
from numbers import Integral
from typing import Any, ClassVar

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin, clone
from sklearn.model_selection import KFold
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVR
from sklearn.utils._param_validation import HasMethods, Interval
from sklearn.utils.validation import check_is_fitted

from qe.config.rules import register_names
from qe.data import QEDataset
from qe.infra.errors import QEInputError
from qe.learners import progress
from qe.learners.ensemble import MembersMixin, allows_nan, check_fit_input, check_predict_input


def _metrics() -> tuple[Any, Any, Any]:
    from sacrebleu.metrics import BLEU, CHRF, TER

    return BLEU(smooth_method="exp", effective_order=True), CHRF(), TER()


def _clean(text: str) -> str:
    return " ".join(text.split())


def pair_scores(hyps: list[str], refs: list[str]) -> np.ndarray:
    """``(n, 3)`` array of TER (fraction), sentence BLEU and chrF (0-1) of each hyp against its ref."""
    bleu, chrf, ter = _metrics()
    out = np.zeros((len(hyps), 3))
    for i, (hyp, ref) in enumerate(zip(hyps, refs, strict=True)):
        hyp, ref = _clean(hyp), _clean(ref)
        out[i, 0] = ter.sentence_score(hyp, [ref]).score / 100.0
        out[i, 1] = bleu.sentence_score(hyp, [ref]).score / 100.0
        out[i, 2] = chrf.sentence_score(hyp, [ref]).score / 100.0
    return out


def _need(values: Any, what: str, name: str) -> Any:
    if values is None:
        raise QEInputError(f"aux target {name!r} needs the {what} of the training data, which it lacks")
    return values


def _edit_target(kind: str, column: int) -> Callable[[QEDataset, str], np.ndarray]:
    def compute(data: QEDataset, name: str) -> np.ndarray:
        refs = _need(data.post_edits if kind == "pe" else data.references, kind_names[kind], name)
        return pair_scores(data.mt, refs)[:, column]

    return compute


kind_names = {"pe": "post-edits", "ref": "references"}


def _pe_length_ratio(data: QEDataset, name: str) -> np.ndarray:
    from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

    tokenize = Tokenizer13a()
    post_edits = _need(data.post_edits, "post-edits", name)
    return np.array(
        [
            (len(tokenize(_clean(pe)).split()) + 1) / (len(tokenize(_clean(mt)).split()) + 1)
            for mt, pe in zip(data.mt, post_edits, strict=True)
        ]
    )


def _annotator(index: int) -> Callable[[QEDataset, str], np.ndarray]:
    def compute(data: QEDataset, name: str) -> np.ndarray:
        scores = _need(data.annotator_scores, "per-annotator scores", name)
        if scores.shape[1] <= index:
            raise QEInputError(f"aux target {name!r}: only {scores.shape[1]} annotator columns")
        return np.asarray(scores[:, index], dtype=np.float64)

    return compute


AUX_TARGETS: dict[str, Callable[[QEDataset, str], np.ndarray]] = {
    "hter": _edit_target("pe", 0),
    "hbleu": _edit_target("pe", 1),
    "hchrf": _edit_target("pe", 2),
    "ref_ter": _edit_target("ref", 0),
    "ref_bleu": _edit_target("ref", 1),
    "ref_chrf": _edit_target("ref", 2),
    "pe_length_ratio": _pe_length_ratio,
    "annotator1": _annotator(0),
    "annotator2": _annotator(1),
    "annotator3": _annotator(2),
}
register_names("aux target", AUX_TARGETS)


def aux_target_matrix(data: QEDataset, names: list[str]) -> np.ndarray:
    """The ``(n, len(names))`` matrix of the named aux targets of a (training) dataset."""
    unknown = [name for name in names if name not in AUX_TARGETS]
    if unknown:
        raise QEInputError(f"unknown aux target(s) {', '.join(unknown)} (known: {', '.join(AUX_TARGETS)})")
    if not names:
        return np.empty((len(data), 0))
    # The three edit scores of one reference side come from one pass.
    cache: dict[str, np.ndarray] = {}
    columns = []
    for name in names:
        kind = "pe" if name in ("hter", "hbleu", "hchrf") else "ref" if name.startswith("ref_") else None
        if kind is not None:
            if kind not in cache:
                refs = _need(data.post_edits if kind == "pe" else data.references, kind_names[kind], name)
                cache[kind] = pair_scores(data.mt, refs)
            column = {"ter": 0, "bleu": 1, "chrf": 2}[name.removeprefix("ref_").removeprefix("h")]
            columns.append(cache[kind][:, column])
        else:
            columns.append(AUX_TARGETS[name](data, name))
    return np.column_stack(columns).astype(np.float64)


def stack_targets(labels: np.ndarray, aux: np.ndarray) -> np.ndarray:
    """``[labels, aux...]`` as one 2-D target for :class:`AuxTargetStack`."""
    return np.column_stack([np.asarray(labels, dtype=np.float64), np.asarray(aux, dtype=np.float64)])


def _split_targets(y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    if y.ndim == 1:
        return y, np.empty((y.size, 0))
    return y[:, 0], y[:, 1:]


def _default_aux_estimator() -> BaseEstimator:
    return Pipeline([("scale", StandardScaler()), ("model", SVR(C=1.0, gamma="scale", epsilon=0.1))])


class AuxTargetStack(MembersMixin, RegressorMixin, BaseEstimator):
    """Predict aux targets by cross-fitting, then learn the label from the features plus them.

    ``fit(X, Y)``: ``Y[:, 0]`` is the label, ``Y[:, 1:]`` the aux targets (a 1-D ``Y`` means no aux
    targets: the final estimator alone). For every aux target a clone of ``aux_estimator`` is
    fitted on ``cv`` shuffled folds of the training rows and predicts the held-out fold, so the
    final estimator learns from *out-of-fold* aux predictions, as noisy as the ones it will see at
    prediction time; the aux models refitted on all training rows make the predictions for new
    data. The final estimator sees ``[X, aux]`` (``passthrough=True``) or the aux predictions only.
    With ``scale_targets`` each aux target is standardized for its aux model (and mapped back).
    ``n_repeats`` > 1 repeats the cross-fitting with that many fold splits (seeds ``random_state``,
    ``random_state + 1``, ...), fits one final estimator on each split's out-of-fold predictions
    and averages them (``finals_``), so the fitted system depends less on the seed.
    """

    accepts_aux_targets = True
    _parameter_constraints: ClassVar[dict[str, list]] = {
        "final_estimator": [HasMethods(["fit", "predict"]), None],
        "aux_estimator": [HasMethods(["fit", "predict"]), None],
        "cv": [Interval(Integral, 2, None, closed="left")],
        "passthrough": ["boolean"],
        "scale_targets": ["boolean"],
        "n_repeats": [Interval(Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        final_estimator: BaseEstimator | None = None,
        aux_estimator: BaseEstimator | None = None,
        cv: int = 5,
        passthrough: bool = True,
        scale_targets: bool = True,
        n_repeats: int = 1,
        random_state: int | None = 0,
    ) -> None:
        self.final_estimator = final_estimator
        self.aux_estimator = aux_estimator
        self.cv = cv
        self.n_repeats = n_repeats
        self.passthrough = passthrough
        self.scale_targets = scale_targets
        self.random_state = random_state

    def _aux_template(self) -> BaseEstimator:
        return self.aux_estimator if self.aux_estimator is not None else _default_aux_estimator()

    def _final_template(self) -> BaseEstimator:
        return self.final_estimator if self.final_estimator is not None else _default_aux_estimator()

    def _members(self) -> list[BaseEstimator]:
        return [self._aux_template(), self._final_template()]

    def _with_aux(self, X: np.ndarray, aux: np.ndarray) -> np.ndarray:
        if not self.passthrough:
            if aux.shape[1] == 0:
                raise ValueError("passthrough=False needs at least one aux target")
            return aux
        return np.hstack([X, aux])

    def fit(self, X: Any, y: Any) -> AuxTargetStack:
        """Cross-fit the aux models, fit them on all rows, then fit the final estimator."""
        self._validate_params()
        X, y = check_fit_input(self, X, y, allows_nan(self._members()))
        label, aux = _split_targets(y)
        self.n_aux_ = aux.shape[1]
        # Aux targets on very different scales (TER fractions, 1-5 scores) are standardized, so
        # one aux learner setting (e.g. an SVR's epsilon) suits them all; predictions are mapped back.
        self.aux_mean_ = aux.mean(axis=0) if self.scale_targets else np.zeros(self.n_aux_)
        spread = aux.std(axis=0) if self.scale_targets else np.ones(self.n_aux_)
        self.aux_scale_ = np.where(spread > 0, spread, 1.0)
        scaled = (aux - self.aux_mean_) / self.aux_scale_
        template = self._aux_template()
        base_seed = 0 if self.random_state is None else self.random_state
        self.aux_models_ = [clone(template).fit(X, scaled[:, j]) for j in range(self.n_aux_)]
        self.finals_ = []
        counter = progress.Progress("aux_stack", self.cv * self.n_repeats, "folds")
        for repeat in range(self.n_repeats):
            oof = np.zeros_like(aux)
            folds = KFold(self.cv, shuffle=True, random_state=(base_seed + repeat) % 2**32)
            for done, (train_idx, held_idx) in enumerate(folds.split(X), start=repeat * self.cv + 1):
                for j in range(self.n_aux_):
                    model = clone(template).fit(X[train_idx], scaled[train_idx, j])
                    oof[held_idx, j] = model.predict(X[held_idx])
                counter.step(done)
            oof = oof * self.aux_scale_ + self.aux_mean_
            self.finals_.append(clone(self._final_template()).fit(self._with_aux(X, oof), label))
        self.final_ = self.finals_[0]
        return self

    def predict_aux(self, X: Any) -> np.ndarray:
        """The aux targets predicted for new rows by the aux models fitted on all training rows."""
        check_is_fitted(self, "final_")
        X = check_predict_input(self, X, allows_nan(self._members()))
        if not self.aux_models_:
            return np.empty((X.shape[0], 0))
        scaled = np.column_stack([model.predict(X) for model in self.aux_models_])
        return scaled * self.aux_scale_ + self.aux_mean_

    def predict(self, X: Any) -> np.ndarray:
        """The final estimators' mean prediction from the features and the predicted aux targets."""
        X = check_predict_input(self, X, allows_nan(self._members()))
        inputs = self._with_aux(X, self.predict_aux(X))
        return np.mean([final.predict(inputs) for final in self.finals_], axis=0)
