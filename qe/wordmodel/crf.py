"""A linear-chain CRF over two labels (OK = 0, BAD = 1), written in numpy and scipy: a second learner for
the word tagger beside gradient boosting (issue 32, build item 3; no CRFsuite binding is installed).

One chain per sentence and kind (MT words in order, gaps in order, source words in order). A row's
features are the featurizer's columns standardised on training (mean and standard deviation kept in
the model; a value that is not finite becomes 0 after standardising, and every column that had one in
training gets a missing-indicator column), so :class:`Standardiser` turns a feature matrix into the
CRF's design matrix. The score of a label sequence y over rows x_1..x_n is

    start[y_1] + sum_t (x_t . w + b) [y_t = BAD] + sum_{t>1} transition[y_{t-1}, y_t] + end[y_n]

(OK's emission is 0: with two labels only the difference matters), and p(y | x) is its exponential over
the partition function Z(x). Training minimises the negative log-likelihood per tag plus
``l2 / 2`` times the squared weights (the bias unpenalised) with scipy's L-BFGS and the analytic
gradient; the forward-backward recursions run in log space, vectorised over the sentences of padded
length buckets (:class:`Chains`). ``l2`` is chosen from ``L2_GRID`` on 20% of the training sentences
held out (the lowest log-loss of the BAD marginals), as the boosting tagger chooses its iteration
count, then the model is refitted on all of training. Prediction gives each position's BAD marginal
probability, so a threshold is chosen on dev exactly as for the boosting tagger.

A saved CRF is plain float arrays (:func:`chain_arrays`); :func:`chain_model` checks such arrays as read
from a file (dtypes, shapes, finite values, every weight within ``MAX_WEIGHT``) and decoding is this
module's numpy code: no library's compiled code runs on a stranger's file.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from qe.infra.errors import QEInputError
from qe.predictors.check import F8, I8, BadModel, check_array

L2_GRID = (1.0, 1e-1, 1e-2, 1e-3, 1e-4)
"""The L2 strengths (per tag) tried on held-out training sentences, strongest first."""
MAX_WEIGHT = 1e4
"""The largest magnitude a saved weight may have; a file with a larger one is refused."""
MAX_CENTRE = 1e12
"""The largest magnitude of a saved column mean or scale."""
MIN_SCALE = 1e-12
"""A training column whose standard deviation is below this is not scaled (scale 1)."""
BUCKET_GROWTH = 1.5
"""Sentences whose lengths lie within this factor share a padded bucket."""
CHAIN_ARRAYS = ("mean", "scale", "missing", "emission", "bias", "transition", "start", "end")
"""The arrays of a saved CRF (each kind's ``<kind>_crf_<name>``)."""


@dataclass(frozen=True)
class ChainWeights:
    """A CRF's parameters: BAD's emission weight per design column and its bias, the 2 x 2 transition
    weights (from label i to label j), and the start and end weights of each label."""

    emission: np.ndarray
    bias: float
    transition: np.ndarray
    start: np.ndarray
    end: np.ndarray

    @classmethod
    def zeros(cls, n_columns: int) -> ChainWeights:
        """All weights 0: every label sequence equally likely."""
        return cls(np.zeros(n_columns), 0.0, np.zeros((2, 2)), np.zeros(2), np.zeros(2))

    def vector(self) -> np.ndarray:
        """The weights as one vector: emission, bias, transition (row-major), start, end."""
        parts = (self.emission, [self.bias], self.transition.ravel(), self.start, self.end)
        return np.concatenate([np.asarray(p, dtype=np.float64) for p in parts])

    @classmethod
    def of_vector(cls, theta: np.ndarray, n_columns: int) -> ChainWeights:
        """The inverse of :meth:`vector`."""
        d = n_columns
        return cls(
            theta[:d].copy(),
            float(theta[d]),
            theta[d + 1 : d + 5].reshape(2, 2).copy(),
            theta[d + 5 : d + 7].copy(),
            theta[d + 7 : d + 9].copy(),
        )


@dataclass(frozen=True)
class Bucket:
    """Sentences of similar length padded to the longest: ``rows[b, t]`` is the flat row of position t
    of sentence b (0 where ``valid`` is False), ``lengths[b]`` its length."""

    rows: np.ndarray
    valid: np.ndarray
    lengths: np.ndarray


@dataclass(frozen=True)
class Chains:
    """The sentences of a flat row layout (``lengths`` rows each, in order) grouped into padded
    :class:`Bucket` s; sentences of no row are left out (they have nothing to tag)."""

    n_rows: int
    buckets: tuple[Bucket, ...]

    @classmethod
    def of(cls, lengths: np.ndarray) -> Chains:
        """The buckets of sentences of these lengths (rows laid out sentence after sentence)."""
        lengths = np.asarray(lengths, dtype=np.int64)
        if lengths.ndim != 1 or (lengths < 0).any():
            raise QEInputError("sentence lengths must be a list of counts")
        offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
        kept = np.flatnonzero(lengths > 0)
        order = kept[np.argsort(lengths[kept], kind="stable")]
        buckets, start = [], 0
        while start < len(order):
            limit = lengths[order[start]] * BUCKET_GROWTH
            stop = start + int(np.searchsorted(lengths[order[start:]], limit, side="right"))
            buckets.append(_bucket(offsets[order[start:stop]], lengths[order[start:stop]]))
            start = stop
        return cls(int(lengths.sum()), tuple(buckets))


def _bucket(offsets: np.ndarray, lengths: np.ndarray) -> Bucket:
    steps = np.arange(int(lengths.max()))
    valid = steps[None, :] < lengths[:, None]
    rows = np.where(valid, offsets[:, None] + steps[None, :], 0)
    return Bucket(rows, valid, lengths)


def _forward_backward(
    emission: np.ndarray, valid: np.ndarray, weights: ChainWeights
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """alpha, beta (both (B, L, 2), log space) and log Z (B,) of padded chains whose (B, L, 2) emission
    scores are ``emission``; past a sentence's end alpha keeps its last value and beta is ``end``."""
    n, length = valid.shape
    T, start, end = weights.transition, weights.start, weights.end
    alpha = np.empty((n, length, 2))
    beta = np.empty((n, length, 2))
    alpha[:, 0] = start + emission[:, 0]
    for t in range(1, length):
        previous = alpha[:, t - 1]
        step = np.logaddexp(previous[:, 0, None] + T[0], previous[:, 1, None] + T[1]) + emission[:, t]
        alpha[:, t] = np.where(valid[:, t, None], step, previous)
    beta[:, length - 1] = end
    for t in range(length - 2, -1, -1):
        following = emission[:, t + 1] + beta[:, t + 1]
        step = np.logaddexp(T[:, 0] + following[:, 0, None], T[:, 1] + following[:, 1, None])
        beta[:, t] = np.where(valid[:, t + 1, None], step, end)
    last = alpha[:, length - 1]
    log_z = np.logaddexp(last[:, 0] + end[0], last[:, 1] + end[1])
    return alpha, beta, log_z


def _emission(bucket: Bucket, bad_score: np.ndarray) -> np.ndarray:
    """(B, L, 2) emission scores of a bucket: 0 for OK, the row's BAD score for BAD (0 when padded)."""
    out = np.zeros((*bucket.rows.shape, 2))
    out[..., 1] = np.where(bucket.valid, bad_score[bucket.rows], 0.0)
    return out


def forward_backward(
    weights: ChainWeights, design: np.ndarray, chains: Chains
) -> tuple[np.ndarray, np.ndarray]:
    """Each row's marginal probability of BAD and each bucket's log partition functions concatenated
    (sentences in bucket order), for the rows of ``design`` laid out as ``chains``."""
    bad_score = design @ weights.emission + weights.bias
    probability = np.zeros(chains.n_rows)
    log_partitions = []
    for bucket in chains.buckets:
        alpha, beta, log_z = _forward_backward(_emission(bucket, bad_score), bucket.valid, weights)
        marginal = np.exp(alpha[..., 1] + beta[..., 1] - log_z[:, None])
        probability[bucket.rows[bucket.valid]] = np.clip(marginal[bucket.valid], 0.0, 1.0)
        log_partitions.append(log_z)
    return probability, np.concatenate(log_partitions) if log_partitions else np.zeros(0)


@dataclass(frozen=True)
class Problem:
    """A training set laid out for the objective: design matrix, BAD flags, chains, and the observed
    counts of start labels, end labels and label pairs."""

    design: np.ndarray
    bad: np.ndarray
    chains: Chains
    start_counts: np.ndarray
    end_counts: np.ndarray
    pair_counts: np.ndarray

    @classmethod
    def of(cls, design: np.ndarray, bad: np.ndarray, lengths: np.ndarray) -> Problem:
        """The problem of rows ``design`` (tags ``bad``) in sentences of ``lengths`` rows."""
        design = np.ascontiguousarray(design, dtype=np.float64)
        bad = np.asarray(bad, dtype=bool)
        chains = Chains.of(lengths)
        if not len(design) == len(bad) == chains.n_rows:
            raise QEInputError(f"{len(design)} rows, {len(bad)} tags and {chains.n_rows} by sentence")
        label = bad.astype(np.int64)
        lengths = np.asarray(lengths, dtype=np.int64)
        ends = np.cumsum(lengths)[lengths > 0]
        firsts, lasts = ends - lengths[lengths > 0], ends - 1
        inside = np.ones(len(bad), dtype=bool)
        inside[firsts] = False  # pairs (t - 1, t) within one sentence
        pairs = np.zeros((2, 2))
        np.add.at(pairs, (label[np.flatnonzero(inside) - 1], label[inside]), 1.0)
        return cls(
            design,
            bad,
            chains,
            np.bincount(label[firsts], minlength=2).astype(np.float64),
            np.bincount(label[lasts], minlength=2).astype(np.float64),
            pairs,
        )


@dataclass
class _Expected:
    """Sums over a set of chains: log Z, and the model's expected counts (each row's BAD marginal, start
    labels, end labels, label pairs)."""

    log_z: float
    bad: np.ndarray
    start: np.ndarray
    end: np.ndarray
    pairs: np.ndarray


def _expected(problem: Problem, weights: ChainWeights, bad_score: np.ndarray) -> _Expected:
    """Forward-backward over every bucket of ``problem``, summed."""
    out = _Expected(0.0, np.zeros(len(problem.bad)), np.zeros(2), np.zeros(2), np.zeros((2, 2)))
    for bucket in problem.chains.buckets:
        emission = _emission(bucket, bad_score)
        alpha, beta, log_z = _forward_backward(emission, bucket.valid, weights)
        out.log_z += float(log_z.sum())
        unary = np.exp(alpha + beta - log_z[:, None, None])
        out.bad[bucket.rows[bucket.valid]] = unary[..., 1][bucket.valid]
        out.start += unary[:, 0].sum(axis=0)
        out.end += unary[np.arange(len(bucket.lengths)), bucket.lengths - 1].sum(axis=0)
        if bucket.valid.shape[1] > 1:  # p(y_{t-1} = i, y_t = j) for t >= 1 inside the sentence
            pair = (
                alpha[:, :-1, :, None]
                + weights.transition
                + (emission + beta)[:, 1:, None, :]
                - log_z[:, None, None, None]
            )
            out.pairs += (np.exp(pair) * bucket.valid[:, 1:, None, None]).sum(axis=(0, 1))
    return out


def objective(theta: np.ndarray, problem: Problem, l2: float, chain: bool = True) -> tuple[float, np.ndarray]:
    """The negative log-likelihood per tag plus ``l2 / 2`` times the squared weights (not the bias), and
    its gradient (expected less observed counts); without ``chain`` the transition, start and end
    weights are held at 0 (their gradient is 0), which makes the CRF a per-position logistic
    regression."""
    d = problem.design.shape[1]
    if not chain:
        theta = np.concatenate([theta[: d + 1], np.zeros(8)])
    weights = ChainWeights.of_vector(theta, d)
    bad_score = problem.design @ weights.emission + weights.bias
    expected = _expected(problem, weights, bad_score)
    score = (
        float(bad_score[problem.bad].sum())
        + float((weights.transition * problem.pair_counts).sum())
        + float(weights.start @ problem.start_counts + weights.end @ problem.end_counts)
    )
    n = max(len(problem.bad), 1)
    residual = expected.bad - problem.bad
    grad = np.concatenate(
        [
            problem.design.T @ residual,
            [residual.sum()],
            (expected.pairs - problem.pair_counts).ravel(),
            expected.start - problem.start_counts,
            expected.end - problem.end_counts,
        ]
    )
    grad = grad / n
    if not chain:
        grad[d + 1 :] = 0.0
    penalised = theta.copy()
    penalised[d] = 0.0  # the bias is not penalised
    value = (expected.log_z - score) / n + 0.5 * l2 * float(penalised @ penalised)
    return value, grad + l2 * penalised


def fit_chain(
    design: np.ndarray,
    bad: np.ndarray,
    lengths: np.ndarray,
    l2: float,
    *,
    chain: bool = True,
    initial: ChainWeights | None = None,
    max_iter: int = 500,
    tol: float = 1e-7,
) -> ChainWeights:
    """The weights minimising :func:`objective` on these rows (L-BFGS, analytic gradient), starting at
    ``initial`` (0 by default); ``tol`` bounds the largest gradient entry at convergence."""
    from scipy.optimize import minimize

    problem = Problem.of(design, bad, lengths)
    d = problem.design.shape[1]
    theta = (initial or ChainWeights.zeros(d)).vector()
    if not chain:
        theta[d + 1 :] = 0.0
    result = minimize(
        objective,
        theta,
        args=(problem, l2, chain),
        jac=True,
        method="L-BFGS-B",
        options={"maxiter": max_iter, "gtol": tol, "ftol": tol * 1e-3, "maxcor": 20},
    )
    return ChainWeights.of_vector(result.x, d)


@dataclass(frozen=True)
class Standardiser:
    """Training columns' means and scales, and the columns that get a missing-indicator (those that held
    a value that is not finite in training): a feature matrix into the CRF's design matrix."""

    mean: np.ndarray
    scale: np.ndarray
    missing: np.ndarray

    @classmethod
    def fit(cls, X: np.ndarray) -> Standardiser:
        """Means and standard deviations of each column's finite values (0 and 1 for a column without
        one; scale 1 for a constant column)."""
        X = np.asarray(X, dtype=np.float64)
        finite = np.isfinite(X)
        counts = finite.sum(axis=0)
        values = np.where(finite, X, 0.0)
        mean = values.sum(axis=0) / np.maximum(counts, 1)
        variance = (np.where(finite, X - mean, 0.0) ** 2).sum(axis=0) / np.maximum(counts, 1)
        scale = np.sqrt(variance)
        scale = np.where(scale >= MIN_SCALE, scale, 1.0)
        missing = np.flatnonzero(~finite.all(axis=0)).astype(np.int64)
        return cls(mean, scale, missing)

    @property
    def n_columns(self) -> int:
        """How many columns the design matrix has (features and missing-indicators)."""
        return len(self.mean) + len(self.missing)

    def design(self, X: np.ndarray) -> np.ndarray:
        """Standardised columns (not finite -> 0) followed by the missing-indicators (1.0 where missing)."""
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != len(self.mean):
            raise QEInputError(f"expected rows of {len(self.mean)} features, got shape {X.shape}")
        finite = np.isfinite(X)
        with np.errstate(invalid="ignore", over="ignore"):
            Z = np.where(finite, (X - self.mean) / self.scale, 0.0)
        return np.hstack([Z, (~finite[:, self.missing]).astype(np.float64)])


@dataclass(frozen=True)
class ChainModel:
    """A fitted CRF as it tags: its standardiser and weights."""

    standardiser: Standardiser
    weights: ChainWeights

    @property
    def n_features(self) -> int:
        """How many feature columns a row must have."""
        return len(self.standardiser.mean)

    def probability(self, X: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        """Each row's marginal probability of BAD, rows in sentences of ``lengths`` rows."""
        chains = Chains.of(lengths)
        if len(X) != chains.n_rows:
            raise QEInputError(f"{len(X)} rows for {chains.n_rows} by sentence")
        if not len(X):
            return np.zeros(0)
        return forward_backward(self.weights, self.standardiser.design(X), chains)[0]


class LinearChainCRF:
    """The word tagger's CRF for one kind: L2 strength chosen on held-out training sentences, then
    fitted on all of training (``seed`` draws the held-out sentences, as the boosting tagger's)."""

    def __init__(
        self, seed: int = 0, held_out: float = 0.2, grid: tuple[float, ...] = L2_GRID, max_iter: int = 500
    ) -> None:
        self.seed = seed
        self.held_out = held_out
        self.grid = grid
        self.max_iter = max_iter

    def fit(self, X: np.ndarray, bad: np.ndarray, lengths: np.ndarray) -> LinearChainCRF:
        """Standardise, choose ``l2_`` on held-out sentences, refit on all; ``model_`` tags."""
        lengths = np.asarray(lengths, dtype=np.int64)
        bad = np.asarray(bad, dtype=bool)
        standardiser = Standardiser.fit(X)
        design = standardiser.design(X)
        self.l2_, self.held_out_loss_, initial = self._choose(design, bad, lengths)
        weights = fit_chain(design, bad, lengths, self.l2_, initial=initial, max_iter=self.max_iter)
        self.model_ = ChainModel(standardiser, weights)
        return self

    def _choose(
        self, design: np.ndarray, bad: np.ndarray, lengths: np.ndarray
    ) -> tuple[float, dict[float, float], ChainWeights | None]:
        """The grid's L2 strength with the lowest log-loss of BAD marginals on held-out sentences (each
        fit warm-started from the stronger one before), the losses, and that fit's weights; the grid's
        middle value when there is nothing to hold out or the rest lacks a class."""
        held_sentences = np.random.default_rng(self.seed).random(len(lengths)) < self.held_out
        held = np.repeat(held_sentences, lengths)
        if not held.any() or held.all() or len(np.unique(bad[~held])) < 2:
            return self.grid[len(self.grid) // 2], {}, None
        train_lengths, held_lengths = lengths[~held_sentences], lengths[held_sentences]
        held_chains = Chains.of(held_lengths)
        losses, fits, weights = {}, {}, None
        for l2 in self.grid:
            weights = fit_chain(
                design[~held], bad[~held], train_lengths, l2, initial=weights, max_iter=self.max_iter
            )
            p = np.clip(forward_backward(weights, design[held], held_chains)[0], 1e-12, 1 - 1e-12)
            losses[l2] = float(-np.mean(np.where(bad[held], np.log(p), np.log1p(-p))))
            fits[l2] = weights
        best = min(self.grid, key=lambda l2: losses[l2])  # ties: the stronger, listed first
        return best, losses, fits[best]

    def bad_probability(self, X: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        """Each row's marginal probability of BAD."""
        if not hasattr(self, "model_"):
            raise QEInputError("the CRF is not fitted")
        return self.model_.probability(X, lengths)


def chain_arrays(model: ChainModel) -> dict[str, np.ndarray]:
    """The :data:`CHAIN_ARRAYS` of a fitted CRF (float64, the missing columns int64)."""
    s, w = model.standardiser, model.weights
    return {
        "mean": s.mean.astype(F8),
        "scale": s.scale.astype(F8),
        "missing": s.missing.astype(I8),
        "emission": w.emission.astype(F8),
        "bias": np.array([w.bias], dtype=F8),
        "transition": w.transition.astype(F8),
        "start": w.start.astype(F8),
        "end": w.end.astype(F8),
    }


def chain_model(what: str, arrays: dict[str, np.ndarray], n_features: int) -> ChainModel:
    """A :class:`ChainModel` from arrays read from a file (``<what>_crf_<name>``), every one checked:
    dtype, shape, finite, within range (``BadModel`` names the array and the fault)."""
    name = {key: f"{what}_crf_{key}" for key in CHAIN_ARRAYS}
    mean = check_array(arrays["mean"], name["mean"], F8, (n_features,), finite=True)
    scale = check_array(arrays["scale"], name["scale"], F8, (n_features,), finite=True)
    if (np.abs(mean) > MAX_CENTRE).any():
        raise BadModel(f"{name['mean']}: out-of-range column means (some |mean| > {MAX_CENTRE:g})")
    if (scale < MIN_SCALE).any() or (scale > MAX_CENTRE).any():
        raise BadModel(
            f"{name['scale']}: out-of-range column scales (outside [{MIN_SCALE:g}, {MAX_CENTRE:g}])"
        )
    missing = check_array(arrays["missing"], name["missing"], I8, (None,))
    if len(missing) and (missing[0] < 0 or missing[-1] >= n_features or (np.diff(missing) <= 0).any()):
        raise BadModel(f"{name['missing']} is not increasing column indices below {n_features}")
    shapes = {
        "emission": (n_features + len(missing),),
        "bias": (1,),
        "transition": (2, 2),
        "start": (2,),
        "end": (2,),
    }
    checked = {}
    for key, shape in shapes.items():
        checked[key] = check_array(arrays[key], name[key], F8, shape, finite=True)
        if (np.abs(checked[key]) > MAX_WEIGHT).any():
            raise BadModel(f"{name[key]}: out-of-range {key} weights (some |w| > {MAX_WEIGHT:g})")
    weights = ChainWeights(
        checked["emission"],
        float(checked["bias"][0]),
        checked["transition"],
        checked["start"],
        checked["end"],
    )
    return ChainModel(Standardiser(mean, scale, missing), weights)
