"""``[cv]``: cross-validation folds and parallel jobs; its rule and its typed view."""

from __future__ import annotations

from dataclasses import dataclass, field

from qe.config.document import SHOWN
from qe.config.rules import (
    JOBS,
    Fields,
    Int,
)

CV = Fields({"folds": Int(2), "n_jobs": JOBS})


@dataclass(frozen=True, kw_only=True)
class CvConfig:
    """``[cv]``: cross-validation folds and parallel jobs."""

    folds: int = field(default=5, metadata=SHOWN)
    n_jobs: int = field(default=1, metadata=SHOWN)
