"""One served model in a worker process: its scoring context, what its scores mean, and each scored
pair's most unusual features against the model's training distribution (so a reviewer sees why)."""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from qe.features.base import Pairs
from qe.infra.errors import QEInputError
from qe.model.scoring import ScoringContext
from qe.serve.names import REQUEST, ModelEntry

UNUSUAL = 3
"""Features shown per pair, the farthest from the training mean in training standard deviations."""

LABELS_BY_DATASET = {  # the training dataset's name prefix -> (label kind, higher is better)
    "wmt12-": ("WMT12 effort 1-5", True),
    "mlqe-pe/": ("HTER", False),
    "mlqe-da/": ("DA z-score", True),
}
"""What a model's scores mean when its manifest does not say: read from the dataset its signature names."""

WARM_UP = ("This is a short test sentence.", "Esta es una breve frase de prueba.")
"""A pair scored once when a worker starts, so the bundle's lazily loaded tables are in memory before
the first request (the first request is then as fast as the thousandth)."""


@dataclass(frozen=True)
class Label:
    """What a score predicts and which way is better (None when neither the model nor its training
    dataset says), and the training label range scores are clipped to."""

    kind: str | None
    higher_is_better: bool | None
    range: tuple[float, float] | None

    def as_json(self) -> dict[str, Any]:
        direction = {True: "higher is better", False: "lower is better", None: None}[self.higher_is_better]
        return {
            "kind": self.kind,
            "higher_is_better": self.higher_is_better,
            "direction": direction,
            "range": list(self.range) if self.range else None,
        }


def model_label(context: ScoringContext) -> Label:
    """The model's label: from its manifest, else from the name of the dataset it was trained on."""
    kind, higher = context.label_kind, context.higher_is_better
    if kind is None or higher is None:
        found = re.search(r"(?:^|\|)data:([^@|]+)", context.signature or "")
        dataset = found.group(1) if found else ""
        guess = next(
            (v for prefix, v in LABELS_BY_DATASET.items() if dataset.startswith(prefix)), (None, None)
        )
        kind = guess[0] if kind is None else kind
        higher = guess[1] if higher is None else higher
    return Label(kind, higher, context.label_range)


def training_statistics(estimator: Any, n_features: int) -> tuple[np.ndarray, np.ndarray] | None:
    """``(means, standard deviations)`` of the model's input features over its training rows, from the
    first fitted ``StandardScaler`` in the estimator (every scaled learner standardises its inputs with
    the training set's statistics); None for a model without one (trees, M5P)."""
    from sklearn.preprocessing import StandardScaler

    seen: set[int] = set()
    stack = [estimator]
    while stack:
        obj = stack.pop()
        if id(obj) in seen or len(seen) > 10_000:
            continue
        seen.add(id(obj))
        if isinstance(obj, StandardScaler):
            mean, var = getattr(obj, "mean_", None), getattr(obj, "var_", None)
            if mean is not None and var is not None and len(mean) == n_features:
                return np.asarray(mean, dtype=np.float64), np.sqrt(np.asarray(var, dtype=np.float64))
        elif isinstance(obj, list | tuple):
            stack.extend(reversed(obj))
        elif isinstance(obj, dict):
            stack.extend(reversed(list(obj.values())))
        elif type(obj).__module__.startswith(("sklearn.", "qe.")) and hasattr(obj, "__dict__"):
            stack.extend(reversed(list(vars(obj).values())))
    return None


class ServedModel:
    """A model loaded in a worker: :meth:`describe` says what it is, :meth:`score` scores pairs."""

    def __init__(self, entry: ModelEntry) -> None:
        self.name = entry.name
        self.context = ScoringContext.open(entry.path)
        self.label = model_label(self.context)
        names = self.context.feature_names
        self.statistics = training_statistics(self.context.model.estimator, len(names))
        definitions = {
            f"{family.name}.{spec.name}": spec.description
            for family in self.context.families
            for spec in family.specs()
        }
        self.definitions = [definitions.get(name, "") for name in names]
        self.max_chars = min((family.limits.chars for family in self.context.families), default=None)

    def describe(self) -> dict[str, Any]:
        """What ``GET /v1/models`` shows of the model (no file paths)."""
        return {
            "name": self.name,
            "kind": "sentences",
            "languages": self.context.languages,
            "label": self.label.as_json(),
            "signature": self.context.signature,
            "model_sha256": self.context.model_sha256,
            "bundle": self.context.bundle_signature,
            "pair_inputs": list(self.context.pair_inputs),
            "family_max_chars": self.max_chars,
            "features": len(self.context.feature_names),
            "training_statistics": self.statistics is not None,
        }

    def warm_up(self) -> None:
        """Fill the families' bounded caches, then score one pair, so that what the families load on
        first use is loaded now (a family that refuses the pair only loses the head start)."""
        self.context.warm()
        if not self.context.pair_inputs:
            with contextlib.suppress(QEInputError):
                self.context.score(Pairs.of([WARM_UP[0]], [WARM_UP[1]]))

    def score(
        self, src: list[str], mt: list[str], extra: dict[str, list[str]], start: int, detail: str
    ) -> tuple[list[dict[str, Any]], int]:
        """One result per pair, its score and, by ``detail``: ``"unusual"``, the :data:`UNUSUAL`
        features farthest from the training distribution; ``"features"``, every feature value too.
        Also how many scores the label range clipped."""
        origins = {name: (REQUEST, start + 1) for name in ("src", "mt", *extra)}  # line N: pair N - 1
        pairs = Pairs.of(src, mt, extra=extra, start=start, origins=origins)
        scored = self.context.score(pairs, keep_features=bool(detail))
        results: list[dict[str, Any]] = [{"score": float(score)} for score in scored.scores]
        if detail and scored.features is not None:
            names = self.context.feature_names
            rows = scored.features.to_numpy(dtype=np.float64)
            for result, row in zip(results, rows, strict=True):
                if detail == "features":
                    result["features"] = {name: float(value) for name, value in zip(names, row, strict=True)}
                result["unusual"] = self.unusual(row)
        return results, scored.clipped

    def unusual(self, row: np.ndarray) -> list[dict[str, Any]] | None:
        """The pair's features farthest from the training mean (``z``: in training standard
        deviations; features constant in training are left out); None without training statistics."""
        if self.statistics is None:
            return None
        mean, std = self.statistics
        varying = std > 0
        z = np.zeros_like(row)
        z[varying] = (row[varying] - mean[varying]) / std[varying]
        order = np.argsort(-np.abs(z), kind="stable")[:UNUSUAL]
        names = self.context.feature_names
        return [
            {
                "feature": names[k],
                "definition": self.definitions[k],
                "value": float(row[k]),
                "training_mean": float(mean[k]),
                "training_std": float(std[k]),
                "z": float(z[k]),
            }
            for k in order
            if varying[k]
        ]
