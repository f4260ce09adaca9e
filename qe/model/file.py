"""Saved models: a skops file (loading executes no code) holding the estimator and what it needs."""

from __future__ import annotations

import hashlib
import importlib
import io
import os
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, BinaryIO

import numpy as np

from qe import __version__
from qe.config.document import thaw
from qe.infra.errors import QEInputError
from qe.infra.io import MAX_SCORE, atomic_write
from qe.model.allowlist import MAX_MODEL_BYTES, MODEL_TYPES, read_schema
from qe.model.manifest import ModelManifest

if TYPE_CHECKING:
    from qe.predictors.reader import PlainModel

__all__ = ["MODEL_TYPES", "QEModel", "load_model", "prediction_only", "save_model"]

SHOWN_REFUSED = 6  # refused entries named in an error


def skops_io() -> ModuleType:
    """``skops.io``, imported without building skops' default list of trusted estimators.

    skops makes that list at import by calling scikit-learn's ``all_estimators()``, which imports
    every scikit-learn module and its test helpers (pytest, and dask through the array-API layer),
    about 0.6 s of ``qe predict``'s start-up. qe never relies on that list: :func:`load_model`
    checks every type against ``MODEL_TYPES`` first and then trusts exactly those, so with the list
    empty skops' own audit only gets stricter.
    """
    if "skops.io" in sys.modules:
        return sys.modules["skops.io"]
    # skops also finds the module of every scipy.special ufunc by scanning sys.modules in import
    # order: imported before scikit-learn's hundreds of modules, it is found three times sooner.
    import scipy.special  # noqa: F401
    import sklearn.utils

    listing = sklearn.utils.all_estimators
    sklearn.utils.all_estimators = lambda *args, **kwargs: []
    try:
        return importlib.import_module("skops.io")
    finally:
        sklearn.utils.all_estimators = listing


def prediction_only(estimator: Any, _memo: dict[int, Any] | None = None) -> Any:
    """``estimator`` without hyperparameter searches, for saving: a fitted search becomes its refitted
    best estimator and an unfitted one (an ensemble member's template) its estimator, so the model
    holds no scorer functions. Predictions are unchanged; the original is not modified."""
    from sklearn.base import BaseEstimator
    from sklearn.model_selection import GridSearchCV, RandomizedSearchCV

    memo = {} if _memo is None else _memo
    if id(estimator) in memo:
        return memo[id(estimator)]
    if isinstance(estimator, GridSearchCV | RandomizedSearchCV):
        inner = getattr(estimator, "best_estimator_", estimator.estimator)
        out = prediction_only(inner, memo)
    elif isinstance(estimator, list | tuple):
        items = [prediction_only(item, memo) for item in estimator]
        same = all(a is b for a, b in zip(items, estimator, strict=True))
        out = estimator if same else type(estimator)(items)
    elif isinstance(estimator, dict):
        values = {key: prediction_only(value, memo) for key, value in estimator.items()}
        out = estimator if all(values[k] is estimator[k] for k in estimator) else values
    elif isinstance(estimator, BaseEstimator):
        state = {key: prediction_only(value, memo) for key, value in vars(estimator).items()}
        out = estimator
        if any(state[key] is not value for key, value in vars(estimator).items()):
            out = type(estimator).__new__(type(estimator))
            out.__dict__.update(state)
    else:
        out = estimator
    memo[id(estimator)] = out
    return out


def _refused_message(refused: list[str]) -> str:
    more = f" and {len(refused) - SHOWN_REFUSED} more" if len(refused) > SHOWN_REFUSED else ""
    return ", ".join(refused[:SHOWN_REFUSED]) + more


def save_model(path: str | Path, estimator: Any, feature_names: list[str], manifest: ModelManifest) -> None:
    """Write the estimator, its input feature names and a JSON manifest into one skops file, atomically.

    Refuses (before writing) an estimator holding anything :func:`load_model` would refuse.
    """
    payload = {
        "estimator": prediction_only(estimator),
        "feature_names": list(feature_names),
        "manifest_json": manifest.to_json(),
    }
    try:
        data = skops_io().dumps(payload)
    except Exception as exc:  # skops refuses some objects with TypeError, others overflow the stack
        raise QEInputError(f"cannot save this learner as a skops file ({type(exc).__name__})", path) from None
    _inspect(io.BytesIO(data), len(data), path, saving=True)
    with atomic_write(path, "wb") as handle:
        handle.write(data)


def _inspect(
    source: BinaryIO, size: int, path: Path | str, saving: bool = False
) -> tuple[PlainModel, list[str]]:
    """The model of a skops file (``size`` bytes) checked whole by :mod:`qe.predictors.reader`, and the
    types it names: refuses any type outside ``MODEL_TYPES``, any callable and any content the
    numpy predictors would not take, before anything in the file is imported or built."""
    from qe.predictors.reader import BadModel, read_plain

    try:
        archive = zipfile.ZipFile(source)
        schema, refused, present = read_schema(archive, size)
        if refused and saving:
            raise QEInputError(
                f"cannot save this learner: it holds {_refused_message(refused)}, which a qe model "
                "file may not contain (see qe.model.allowlist)",
                path,
            )
        if refused:
            found = _refused_message(refused)
            raise QEInputError(
                f"model file holds untrusted types or callables, refusing to load: {found}", path
            )
        return read_plain(archive, schema), present
    except QEInputError:
        raise
    except BadModel as exc:
        if saving:
            raise QEInputError(f"cannot save this learner: {exc}", path) from None
        raise QEInputError(f"{exc}; the model file is damaged or was not written by qe", path) from None
    except Exception as exc:  # zipfile, zlib, json and numpy's header parser raise many types
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
        raise QEInputError(f"not a readable qe model file (truncated or corrupt?): {reason}", path) from None


def _open_model(path: Path) -> tuple[BinaryIO, int]:
    """The model file opened for reading and its size, refusing what is not a regular file of at most
    :data:`qe.model.allowlist.MAX_MODEL_BYTES` before reading anything."""
    if not path.exists():
        raise QEInputError("model file not found", path)
    if not path.is_file():
        raise QEInputError("is not a regular file; give a model file written by qe run", path)
    try:
        handle = open(path, "rb")  # noqa: SIM115 - the caller closes it
    except OSError as exc:
        raise QEInputError(f"cannot read the model file: {exc.strerror or exc}", path) from None
    size = os.fstat(handle.fileno()).st_size
    if size > MAX_MODEL_BYTES:
        handle.close()
        raise QEInputError(
            f"is {size:,} bytes, more than a qe model file may be ({MAX_MODEL_BYTES >> 20} MB); "
            "give a model file written by qe run",
            path,
        )
    return handle, size


def _read_checked(path: Path) -> tuple[bytes, PlainModel, list[str]]:
    """The model file's bytes (read once, whole), its model checked by :mod:`qe.predictors.reader` and the
    types it names: the bytes checked are the bytes hashed and the bytes skops builds from."""
    handle, size = _open_model(path)
    with handle:
        data = handle.read(size + 1)
    if len(data) != size:
        raise QEInputError("the model file changed while it was read", path)
    plain, present = _inspect(io.BytesIO(data), len(data), path)
    return data, plain, present


def _built(data: bytes, present: list[str], path: Path) -> tuple[Any, list[str], ModelManifest]:
    """``(estimator, feature_names, manifest)`` built by skops from checked bytes."""
    try:
        payload = skops_io().loads(data, trusted=present)
    except Exception as exc:  # skops raises many types for corrupt content
        raise QEInputError(f"cannot load model file: {type(exc).__name__}", path) from None
    if not isinstance(payload, dict) or not {"estimator", "feature_names", "manifest_json"} <= set(payload):
        raise QEInputError("not a qe model file (missing estimator / feature names / manifest)", path)
    manifest = ModelManifest.from_json(payload["manifest_json"], path)
    return payload["estimator"], list(payload["feature_names"]), manifest


def load_model(path: str | Path) -> tuple[Any, list[str], ModelManifest]:
    """Load ``(estimator, feature_names, manifest)``, refusing any type outside ``MODEL_TYPES``, any
    callable and any content :mod:`qe.predictors.reader` refuses before anything in the file is imported
    or built."""
    path = Path(path)
    data, _, present = _read_checked(path)
    return _built(data, present, path)


class QEModel:
    """A trained predictor: feature families and settings, resource bundle reference, estimator.

    It computes the features it was trained on from raw text (:meth:`features`) and scores a feature
    table (:meth:`checked_scores`); pairs are scored by ``qe.model.scoring.ScoringContext``, which holds
    a model with its bundle opened and its families bound.
    """

    def __init__(
        self,
        estimator: Any,
        feature_names: list[str],
        manifest: ModelManifest,
        *,
        plain: PlainModel | None = None,
        build: Callable[[], Any] | None = None,
    ) -> None:
        self._estimator = estimator
        self._build = build
        self._plain = plain
        self.feature_names = feature_names
        self.manifest = manifest
        self.path: Path | None = None  # the file it was loaded from (for error messages)
        self.sha256: str | None = None  # the SHA-256 of that file's bytes

    @property
    def estimator(self) -> Any:
        """The scikit-learn estimator (built by skops on first use when the model was loaded for
        scoring with numpy alone)."""
        if self._estimator is None and self._build is not None:
            self._estimator, self._build = self._build(), None
        return self._estimator

    @classmethod
    def load(cls, path: str | Path) -> QEModel:
        """Load a model file, refusing untrusted types, content the checker refuses and models of
        another major version.

        The file is read once, whole (its bytes are checked and hashed: :attr:`sha256`), and the model
        is scored by :mod:`qe.predictors.reader` without scikit-learn (about 1 s less start-up); the
        estimator itself is built by skops, from the file read and checked again, only if
        :attr:`estimator` is asked for.
        """
        path = Path(path)
        data, plain, _ = _read_checked(path)
        manifest = ModelManifest.from_json(plain.manifest_json, path)
        model = cls(None, plain.feature_names, manifest, plain=plain, build=lambda: load_model(path)[0])
        model.path = path
        model.sha256 = hashlib.sha256(data).hexdigest()
        if manifest.major_version != __version__.split(".")[0]:
            written_by = f"model was written by qe {manifest.qe_version}"
            raise QEInputError(f"{written_by}; this is qe {__version__}", path)
        return model

    def save(self, path: str | Path) -> None:
        """Write the model (skops) atomically."""
        save_model(path, self.estimator, self.feature_names, self.manifest)

    def open_resources(self, override: str | Path | None = None) -> Any:
        """The resource bundle the model was trained with, checked by its signature."""
        reference, mt2 = self.manifest.resources, self.manifest.mt2
        if not reference:
            if not mt2:
                return None
            from qe.bundle import with_mt2

            return with_mt2(None, mt2)
        from qe.bundle import open_bundle, with_mt2

        bundle = open_bundle(override or reference.path)
        if mt2:
            bundle = with_mt2(bundle, mt2)
        if bundle.signature() != reference.signature:
            raise QEInputError(
                f"resource bundle {bundle.signature()} differs from the one the model was trained with "
                f"({reference.signature}); rebuild it with the same config or pass the right --resources",
                bundle.path,
            )
        return bundle

    def make_families(self, inputs: dict[str, Any] | None = None) -> list[Any]:
        """The model's feature families with their prediction-time settings; ``inputs`` (by input
        name, e.g. a decoder log) are routed to the families that declare them."""
        manifest = self.manifest
        if manifest.feature_sets:
            raise QEInputError(
                "this model was trained on precomputed feature tables "
                f"({', '.join(manifest.feature_sets)}), so it cannot score raw text; "
                "train it on feature families instead"
            )
        from qe.config.features import split_settings
        from qe.features.registry import family_class, make_families, route_inputs, with_languages

        settings = split_settings(manifest.family_settings, "predict")
        for name in manifest.families:  # a log of the training data says nothing of new text,
            for item in family_class(name).inputs:  # and the model must never choose files to read
                if item.kind == "file":
                    settings.get(name, {}).pop(item.setting_name, None)
        families = list(manifest.families)
        if not manifest.resources:  # as at training: the pair from the model
            settings = with_languages(families, settings, thaw(manifest.languages))
        _, settings = route_inputs(families, inputs or {}, settings)
        return make_families(families, settings)

    def features(
        self,
        pairs: Any,
        *,
        resources: Any = None,
        families: list[Any] | None = None,
        n_jobs: int = 1,
        progress: bool = False,
        whole: bool = True,
        bind: bool = True,
    ) -> Any:
        """The model's input feature table for ``pairs`` (a ``qe.features.base.Pairs``; ``families``:
        reuse made ones; ``whole=False``: one chunk of a longer input; ``bind=False``: ``families`` are
        already bound to ``resources``)."""
        from qe.features.extractor import extract_features

        families = self.make_families() if families is None else families
        table = extract_features(
            families, pairs, resources=resources, n_jobs=n_jobs, progress=progress, whole=whole, bind=bind
        )
        missing = [name for name in self.feature_names if name not in table.columns]
        if missing:
            raise QEInputError(f"extracted features lack {', '.join(missing[:5])} that the model needs")
        return table[self.feature_names]

    def checked_scores(self, table: Any, first_line: int = 1) -> tuple[np.ndarray, int]:
        """``(scores, clipped)``: the estimator's scores for a feature table from :meth:`features` (its
        first pair on input line ``first_line``), each checked to be a finite number of at most
        ``qe.infra.io.MAX_SCORE``, clipped to the training label range, and how many were clipped."""
        rows = table.to_numpy(dtype=np.float64)
        if not np.isfinite(rows).all():
            row, column = np.argwhere(~np.isfinite(rows))[0]
            raise QEInputError(
                f"the pair on line {first_line + row} has feature {self.feature_names[column]} = "
                f"{rows[row, column]} (a bad value in its inputs?); the model cannot score it"
            )
        try:
            predict = self._plain if self._plain is not None else self.estimator.predict
            scores = np.asarray(predict(rows), dtype=np.float64)
            if scores.shape != (len(rows),):
                raise ValueError(f"{scores.shape} scores for {len(rows)} pairs")
        except (ValueError, IndexError) as exc:  # a damaged model
            raise QEInputError(f"the model cannot score these features: {exc}", self.path) from None
        except (TypeError, AttributeError, KeyError, ArithmeticError, RecursionError) as exc:
            raise QEInputError(
                f"the model's estimator cannot predict ({type(exc).__name__}): the file is damaged "
                "or was not written by qe",
                self.path,
            ) from None
        wild = ~(np.abs(scores) <= MAX_SCORE)  # NaN too
        if wild.any():
            row = int(np.argmax(wild))
            raise QEInputError(
                f"the model gives the pair on line {first_line + row} the score {scores[row]}, not a "
                f"finite number of at most {MAX_SCORE:g} in size: the model file is damaged or was not "
                "written by qe",
                self.path,
            )
        bounds = self.manifest.label_range
        if not bounds:
            return scores, 0
        clipped = np.clip(scores, *bounds)
        return clipped, int(np.count_nonzero(clipped != scores))
