"""The reference every scoring path is compared with: a model's pairs scored all at once, its families
made and bound afresh (no ``ScoringContext``, no batches, no pre-bound families)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from qe.features.base import Pairs
from qe.model.file import QEModel


def scored_at_once(model_path: Path, src: list[str], mt: list[str]) -> np.ndarray:
    """The scores of ``src`` / ``mt`` from the model file, every pair in one feature table."""
    model = QEModel.load(model_path)
    table = model.features(Pairs.of(src, mt), resources=model.open_resources())
    return model.checked_scores(table)[0]
