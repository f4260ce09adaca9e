"""The ``cross_fit`` member: which cross-fitting fold each training pair belongs to
(``qe.resources.crossfit.FoldMap``, ``cross_fit.json.gz``), written by the bundle itself when a QE
training corpus is cross-fitted (``qe.bundle.crossfitting``), not built from a config table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from qe.bundle.members import MemberKind, register_member
from qe.resources.crossfit import FoldMap


def _load(path: Path, options: dict[str, Any], manifest: dict[str, Any]) -> FoldMap:
    return FoldMap.load(path)


register_member(MemberKind(kind="folds", load=_load))
