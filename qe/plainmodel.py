"""Scoring with a saved model without importing scikit-learn: its skops tree read as plain data.

Importing scikit-learn (and with it scipy.stats and pandas) and skops is about 1 s of a one-pair
``qe predict``; the prediction itself is a few array operations. For the estimators qe's learners
save most often this module reads the model file's ``schema.json`` and its ``.npy`` arrays directly
(``allow_pickle=False``: nothing is imported or built from the file) and predicts with numpy:

- ``Pipeline`` with ``StandardScaler`` steps (``"passthrough"`` / ``None`` steps skipped);
- ``SVR`` (any of libsvm's dense kernels), ``RidgeCV``, ``LinearSVR``, ``DummyRegressor``;
- ``HistGradientBoostingRegressor`` with squared-error loss and no categorical features;
- qe's ``M5P``, ``NystroemSVR``, ``AveragingRegressor`` (``combine="mean"``) and ``StackedRegressor``.

Anything else (forests, Gaussian processes, rank averaging, ...) returns ``None`` from
:func:`plain_predictor` and the caller builds the estimator with skops as before. Predictions equal
scikit-learn's up to floating-point summation order (``tests/test_plainmodel.py`` compares them for
every learner); the file is checked against :data:`qe.model_types.MODEL_TYPES` before it is read.
"""

from __future__ import annotations

import io
import json
import math
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from qe.learners.m5p_tree import predict_m5p

Predict = Callable[[np.ndarray], np.ndarray]

# skops nodes whose content is not needed for prediction: kept as an opaque object of their class.
OPAQUE_NODES = frozenset({"LossNode", "TreeNode", "RandomStateNode", "RandomGeneratorNode"})


class Unsupported(Exception):
    """The file holds something this module does not predict with (skops builds it instead)."""


@dataclass(frozen=True)
class PlainObject:
    """An object of the model file: its class (``module.Class``) and attributes (``None``: opaque)."""

    cls: str
    state: dict[str, Any] | None

    def __getitem__(self, key: str) -> Any:
        if self.state is None or key not in self.state:
            raise Unsupported(f"{self.cls} without {key}")
        return self.state[key]

    def get(self, key: str, default: Any = None) -> Any:
        return default if self.state is None else self.state.get(key, default)


def read_tree(data: bytes) -> Any:
    """The skops file's content as dicts, lists, tuples, JSON values, arrays and :class:`PlainObject`."""
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        schema = json.loads(archive.read("schema.json"))
        return _node(schema, archive)


def _node(node: Any, archive: zipfile.ZipFile) -> Any:
    if not isinstance(node, dict):
        raise Unsupported("a node that is not an object")
    loader = node.get("__loader__")
    cls = f"{node.get('__module__')}.{node.get('__class__')}"
    if loader == "JsonNode":
        return json.loads(node["content"])
    if loader == "DictNode":
        content = node["content"]
        return {key: _node(value, archive) for key, value in content.items()}
    if loader == "ListNode":
        return [_node(item, archive) for item in node["content"]]
    if loader == "TupleNode":
        return tuple(_node(item, archive) for item in node["content"])
    if loader == "NdArrayNode":
        if node.get("type") != "numpy":
            raise Unsupported("an object array")
        with archive.open(node["file"]) as handle:
            array = _npy(handle.read())
        return array if cls == "numpy.ndarray" else array[()]
    if loader == "ObjectNode":
        state = node.get("content")
        attributes = {} if state is None else _node(state, archive)
        return PlainObject(cls, attributes if isinstance(attributes, dict) else None)
    if loader in OPAQUE_NODES:
        return PlainObject(cls, None)
    raise Unsupported(f"a {loader}")


def _npy(raw: bytes) -> np.ndarray:
    """An array from ``.npy`` bytes, refusing a header that declares more data than the bytes hold
    (nothing is allocated for it) and any object array."""
    buffer = io.BytesIO(raw)
    version = np.lib.format.read_magic(buffer)
    readers = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}
    if version not in readers:
        raise Unsupported(f"an array of .npy format {version}")
    shape, _, dtype = readers[version](buffer)
    if dtype.hasobject or dtype.itemsize * math.prod(shape) > len(raw) - buffer.tell():
        raise Unsupported("an array larger than its data, or of objects")
    return np.load(io.BytesIO(raw), allow_pickle=False)


# ---------------------------------------------------------------------- predictors


def plain_predictor(estimator: Any) -> Predict:
    """A numpy function ``X -> predictions`` equal to ``estimator.predict``; raises :class:`Unsupported`."""
    if not isinstance(estimator, PlainObject):
        raise Unsupported(f"a {type(estimator).__name__} as estimator")
    build = PREDICTORS.get(estimator.cls)
    if build is None:
        raise Unsupported(estimator.cls)
    return build(estimator)


def _check_finite(X: np.ndarray, *, allow_nan: bool = False) -> np.ndarray:
    """``X``, or the ValueError scikit-learn's input check raises for missing or infinite values."""
    if not np.isfinite(X).all():
        if np.isinf(X).any():
            raise ValueError("Input X contains infinity or a value too large for dtype('float64').")
        if not allow_nan:
            raise ValueError("Input X contains NaN.")
    return X


def _transformer(step: Any) -> Callable[[np.ndarray], np.ndarray]:
    if step is None or step == "passthrough":
        return lambda X: X
    if isinstance(step, PlainObject) and step.cls == "sklearn.preprocessing._data.StandardScaler":
        mean = step["mean_"] if step["with_mean"] else None
        scale = step["scale_"] if step["with_std"] else None

        def standardize(X: np.ndarray) -> np.ndarray:
            _check_finite(X, allow_nan=True)
            if mean is not None:
                X = X - mean
            if scale is not None:
                X = X / scale
            return X

        return standardize
    raise Unsupported(f"{getattr(step, 'cls', type(step).__name__)} as a transformer")


def _pipeline(obj: PlainObject) -> Predict:
    steps = [step for _, step in obj["steps"]]
    if not steps or obj.get("transform_input") is not None:
        raise Unsupported("this pipeline")
    transforms = [_transformer(step) for step in steps[:-1]]
    final = plain_predictor(steps[-1])

    def predict(X: np.ndarray) -> np.ndarray:
        for transform in transforms:
            X = transform(X)
        return final(X)

    return predict


def _svr(obj: PlainObject) -> Predict:
    """libsvm's decision value: sum of dual coefficients times kernel values, plus the intercept."""
    if obj["_sparse"]:
        raise Unsupported("a sparse SVR")
    vectors, coef = obj["support_vectors_"], obj["_dual_coef_"][0]
    intercept = float(obj["_intercept_"][0])
    kernel, gamma, degree, coef0 = obj["kernel"], obj["_gamma"], obj["degree"], obj["coef0"]
    if kernel == "rbf":

        def gram(X: np.ndarray) -> np.ndarray:
            # squared distances summed from the differences, as libsvm does (no x.x - 2 x.y + y.y
            # cancellation), in blocks of rows that keep the difference array near 32 MB
            rows = max(1, (4 << 20) // max(1, vectors.size))
            out = np.empty((X.shape[0], vectors.shape[0]))
            for begin in range(0, X.shape[0], rows):
                difference = X[begin : begin + rows, None, :] - vectors[None, :, :]
                out[begin : begin + rows] = np.einsum("ijk,ijk->ij", difference, difference)
            return np.exp(-gamma * out)
    elif kernel == "linear":

        def gram(X: np.ndarray) -> np.ndarray:
            return X @ vectors.T
    elif kernel == "poly":

        def gram(X: np.ndarray) -> np.ndarray:
            return (gamma * (X @ vectors.T) + coef0) ** degree
    elif kernel == "sigmoid":

        def gram(X: np.ndarray) -> np.ndarray:
            return np.tanh(gamma * (X @ vectors.T) + coef0)
    else:
        raise Unsupported(f"an SVR with kernel {kernel!r}")
    return lambda X: gram(_check_finite(X)) @ coef + intercept


def _linear(obj: PlainObject) -> Predict:
    """``X @ coef_ + intercept_`` (RidgeCV, LinearSVR)."""
    coef, intercept = np.asarray(obj["coef_"], dtype=np.float64), obj["intercept_"]
    if coef.ndim != 1:
        raise Unsupported(f"{obj.cls} with {coef.ndim}-d coefficients")
    if np.size(intercept) != 1:
        raise Unsupported(f"{obj.cls} with several intercepts")
    offset = float(np.asarray(intercept).reshape(-1)[0])
    return lambda X: _check_finite(X) @ coef + offset


def _dummy(obj: PlainObject) -> Predict:
    constant = np.asarray(obj["constant_"], dtype=np.float64).reshape(-1)
    if constant.shape != (1,):
        raise Unsupported("a multi-output DummyRegressor")
    return lambda X: np.full(X.shape[0], constant[0])


def _hist_gradient_boosting(obj: PlainObject) -> Predict:
    """The baseline plus every tree's leaf value, added tree by tree as scikit-learn does."""
    if obj["_loss"].cls != "sklearn._loss.loss.HalfSquaredError":
        raise Unsupported(f"gradient boosting with {obj['_loss'].cls}")
    if obj["_preprocessor"] is not None or obj["n_trees_per_iteration_"] != 1:
        raise Unsupported("gradient boosting with categorical features or several outputs")
    trees = []
    for iteration in obj["_predictors"]:
        for predictor in iteration:
            nodes = predictor["nodes"]
            if nodes["is_categorical"].any():
                raise Unsupported("gradient boosting with categorical splits")
            trees.append(nodes)
    baseline = float(np.asarray(obj["_baseline_prediction"]).reshape(-1)[0])

    def predict(X: np.ndarray) -> np.ndarray:
        raw = np.full(X.shape[0], baseline)
        for nodes in trees:
            raw += nodes["value"][_leaves(nodes, X)]
        return raw

    return predict


def _leaves(nodes: np.ndarray, X: np.ndarray) -> np.ndarray:
    """The leaf each row of ``X`` reaches in one histogram-gradient-boosting tree (raw thresholds;
    a missing value goes where the split sent the training rows' missing values)."""
    node = np.zeros(X.shape[0], dtype=np.intp)
    active = np.flatnonzero(~nodes["is_leaf"][node].astype(bool))
    for _ in range(len(nodes)):  # a path visits each node at most once
        if not active.size:
            return node
        current = node[active]
        value = X[active, nodes["feature_idx"][current]]
        left = np.where(
            np.isnan(value),
            nodes["missing_go_to_left"][current].astype(bool),
            value <= nodes["num_threshold"][current],
        )
        node[active] = np.where(left, nodes["left"][current], nodes["right"][current])
        active = active[~nodes["is_leaf"][node[active]].astype(bool)]
    if active.size:
        raise ValueError("a gradient-boosting tree has a cycle")
    return node


def _m5p(obj: PlainObject) -> Predict:
    tree, fill = obj["tree_"], obj["fill_values_"]
    return lambda X: predict_m5p(tree, fill, _check_finite(X, allow_nan=True))


def _nystroem_svr(obj: PlainObject) -> Predict:
    """Nyström map (RBF kernel against the landmarks, times the normalisation) then the linear SVR."""
    landmarks = obj["map_"]
    if landmarks.cls != "sklearn.kernel_approximation.Nystroem" or landmarks["kernel"] != "rbf":
        raise Unsupported("a NystroemSVR with another kernel map")
    components, normalization = landmarks["components_"], landmarks["normalization_"]
    gamma = landmarks["gamma"]
    squared = np.einsum("ij,ij->i", components, components)[None, :]
    linear = _linear(obj["svr_"])
    offset = float(obj["offset_"])

    def predict(X: np.ndarray) -> np.ndarray:
        # the expanded x.x - 2 x.y + y.y of scikit-learn's euclidean_distances, which Nystroem uses
        # (the SVR above sums differences instead, as libsvm does)
        _check_finite(X)
        distances = -2.0 * (X @ components.T)
        distances += np.einsum("ij,ij->i", X, X)[:, None]
        distances += squared
        np.maximum(distances, 0.0, out=distances)
        kernel = np.exp(-gamma * distances)
        return linear(kernel @ normalization.T) + offset

    return predict


def _averaging(obj: PlainObject) -> Predict:
    if obj["combine"] != "mean":
        raise Unsupported(f"averaging with combine={obj['combine']!r}")
    members = [plain_predictor(member) for member in obj["estimators_"]]
    weights = np.asarray(obj["weights_"], dtype=np.float64)
    return lambda X: np.column_stack([member(X) for member in members]) @ weights


def _stacked(obj: PlainObject) -> Predict:
    members = [plain_predictor(member) for member in obj["estimators_"]]
    coef, intercept = np.asarray(obj["coef_"], dtype=np.float64), float(obj["intercept_"])
    return lambda X: np.column_stack([member(X) for member in members]) @ coef + intercept


PREDICTORS: dict[str, Callable[[PlainObject], Predict]] = {
    "sklearn.pipeline.Pipeline": _pipeline,
    "sklearn.svm._classes.SVR": _svr,
    "sklearn.svm._classes.LinearSVR": _linear,
    "sklearn.linear_model._ridge.RidgeCV": _linear,
    "sklearn.dummy.DummyRegressor": _dummy,
    "sklearn.ensemble._hist_gradient_boosting.gradient_boosting.HistGradientBoostingRegressor": (
        _hist_gradient_boosting
    ),
    "qe.learners.m5p.M5P": _m5p,
    "qe.learners.fast.NystroemSVR": _nystroem_svr,
    "qe.learners.ensemble.AveragingRegressor": _averaging,
    "qe.learners.ensemble.StackedRegressor": _stacked,
}


@dataclass(frozen=True)
class PlainModel:
    """A model file read without scikit-learn: its feature names, manifest and numpy predictor."""

    feature_names: list[str]
    manifest_json: str
    predict: Predict

    @property
    def n_features(self) -> int:
        return len(self.feature_names)

    def __call__(self, X: np.ndarray) -> np.ndarray:
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != self.n_features:
            raise ValueError(f"X has {X.shape[-1]} features, the model takes {self.n_features}")
        return np.asarray(self.predict(X), dtype=np.float64)


def plain_model(data: bytes) -> PlainModel | None:
    """The model in ``data`` (a skops file already checked against ``MODEL_TYPES``) as a
    :class:`PlainModel`, or ``None`` when its estimator needs scikit-learn to predict."""
    try:
        payload = read_tree(data)
        if not isinstance(payload, dict):
            return None
        names, manifest_json = payload["feature_names"], payload["manifest_json"]
        if not isinstance(names, list) or not isinstance(manifest_json, str):
            return None
        model = PlainModel(list(map(str, names)), manifest_json, plain_predictor(payload["estimator"]))
        if model(np.zeros((1, len(names)))).shape != (1,):  # arrays of the wrong shapes fail here
            return None
        return model
    except (
        Unsupported,
        KeyError,
        TypeError,
        ValueError,
        IndexError,
        RecursionError,
        zipfile.BadZipFile,
        OSError,
    ):
        return None
