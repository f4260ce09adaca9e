"""A saved model held ready to score: the model file read once, its bundle opened once, its families bound
once, then any number of batches of pairs scored.

``qe predict`` builds one :class:`ScoringContext` per process (the parent for its checks; a forked
worker inherits it, any other worker builds its own once); a long-running service holds one per
model and scores every request with it.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from qe.features.base import Pairs
from qe.features.memos import clear_text_memos
from qe.infra.errors import QEInputError
from qe.model.file import QEModel

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd


@dataclass(frozen=True)
class Scored:
    """One batch's scores, each checked to be a finite number and then clipped to the training label
    range (``clipped`` of them were), and the feature table they came from when it was asked for."""

    scores: np.ndarray
    clipped: int
    features: pd.DataFrame | None = None


class ScoringContext:
    """A model, its resource bundle and its bound feature families, ready to score batches of pairs.

    The attributes describe the model and do not change (read them from any thread); :meth:`score`
    scores one batch at a time (a lock serialises concurrent calls: the families keep per-batch
    caches).
    """

    def __init__(
        self, model: QEModel, resources: Any, families: Sequence[Any], line_inputs: Mapping[str, Path]
    ):
        self.model = model
        self.resources = resources
        self.families = tuple(families)
        self.line_inputs = dict(line_inputs)
        self._lock = threading.Lock()

    @classmethod
    def open(
        cls,
        model: str | Path,
        *,
        resources: str | Path | None = None,
        inputs: Mapping[str, str | Path] | None = None,
    ) -> ScoringContext:
        """Read and check the model file, open the bundle it names (or ``resources``) and check its
        signature, make the model's families with their prediction-time settings and bind them.

        ``inputs`` are declared inputs by name (``qe predict``'s ``--decoder-nbest``, ``--pseudo-ref``
        ...): a file input (a decoder log) goes to the families that declare it; a line input is kept
        in :attr:`line_inputs`, its lines coming with each batch (``score``'s ``extra``).
        """
        from qe.features.registry import route_inputs

        loaded = QEModel.load(model)
        given = dict(inputs or {})
        lines, _ = route_inputs(list(loaded.manifest.families), given, {})
        files = {name: str(path) for name, path in given.items() if name not in lines}
        families = loaded.make_families(files)  # refuses a model trained on precomputed tables
        bundle = loaded.open_resources(resources)
        return cls(loaded, bundle, [family.bind(bundle) for family in families], lines)

    def warm(self) -> None:
        """Let every family fill its bounded caches now (:meth:`FeatureFamily.warm`): a service pays
        their time and memory at start, not on its first requests."""
        with self._lock:
            for family in self.families:
                family.warm()

    @property
    def feature_names(self) -> tuple[str, ...]:
        """The model's input features, in order."""
        return tuple(self.model.feature_names)

    @property
    def signature(self) -> str | None:
        """The signature of the run that trained the model (data, features, resources, learner, versions)."""
        return self.model.manifest.signature

    @property
    def languages(self) -> dict[str, str | None]:
        """The model's source and target languages (``{"src": ..., "tgt": ...}``, empty if unknown)."""
        return dict(self.model.manifest.languages or {})

    @property
    def label_range(self) -> tuple[float, float] | None:
        """The training label range scores are clipped to (None: unbounded labels, e.g. z-scores)."""
        bounds = self.model.manifest.label_range
        return (float(bounds[0]), float(bounds[1])) if bounds else None

    @property
    def label_kind(self) -> str | None:
        """What the scores predict (e.g. HTER), when the model's manifest says."""
        return self.model.manifest.label_kind

    @property
    def higher_is_better(self) -> bool | None:
        """Whether a higher score means a better translation, when the model's manifest says."""
        return self.model.manifest.higher_is_better

    @property
    def model_sha256(self) -> str | None:
        """The SHA-256 of the model file's bytes, as read."""
        return self.model.sha256

    @property
    def bundle_signature(self) -> str | None:
        """The signature of the resource bundle in use (None without one)."""
        return self.resources.signature() if self.resources is not None else None

    @property
    def pair_inputs(self) -> tuple[str, ...]:
        """The line inputs each pair must come with (e.g. a pseudo-reference), beyond source and MT:
        those the families read that the bundle does not provide."""
        needed = []
        for family in self.families:
            for item in family.needed_inputs():
                provided = item.provider and self.resources is not None and item.provider in self.resources
                if item.kind == "lines" and not provided and item.name not in needed:
                    needed.append(item.name)
        return tuple(needed)

    def score(self, pairs: Pairs, *, keep_features: bool = False) -> Scored:
        """Score ``pairs`` (``Pairs.of(src, mt, extra=..., start=..., origins=...)``: ``extra`` holds the
        line inputs by name, ``start`` the 0-based position of the first pair in a longer input, which
        pair ids and the line numbers of messages count from, ``origins`` where each text was read, for
        messages). The whole-input id checks of decoder logs are the caller's."""
        if not len(pairs):
            raise QEInputError("no sentence pairs to score")
        with self._lock:
            try:
                table = self.model.features(
                    pairs,
                    resources=self.resources,
                    families=list(self.families),
                    whole=False,
                    bind=False,  # bound once, in open: a rebind drops what a family built
                )
            finally:
                clear_text_memos(self.families, self.resources)  # memory does not grow with the batches
        scores, clipped = self.model.checked_scores(table, first_line=pairs.line(0))
        return Scored(scores, clipped, table if keep_features else None)
