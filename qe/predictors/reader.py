"""Scoring with a saved model without scikit-learn: its skops tree read as plain data, checked whole.

Importing scikit-learn (and with it scipy.stats and pandas) and skops is about 1 s of a one-pair
``qe predict``; the prediction itself is a few array operations. So this module reads the model
file's ``schema.json`` and its ``.npy`` arrays directly (``allow_pickle=False``: nothing is imported
or built from the file) and :mod:`qe.predictors.estimators` predicts with numpy, for every estimator qe
saves. It is also the model file's checker: every array is checked (dtype, shape against the other
arrays and the number of features, index ranges, finiteness, trees without cycles) before anything
predicts, an estimator class without a numpy predictor is refused, and so is an array or object
that is neither read by a predictor nor declared inert (training records and unfitted templates,
which may hold plain numbers only), so nothing unchecked reaches scikit-learn's compiled code when
the estimator is later built by skops (``QEModel.estimator``). Predictions equal scikit-learn's up to
floating-point summation order (``tests/test_plainmodel.py`` compares them for every learner).

Memory: each array is read once (an ``.npy`` member named twice is shared) straight into its numpy
buffer, in blocks, so reading a model takes about its unpacked size, which
:func:`qe.model.allowlist.read_schema` bounds before anything is read.
"""

from __future__ import annotations

import json
import math
import zipfile
from dataclasses import dataclass
from typing import Any, BinaryIO

import numpy as np

from qe.predictors.check import BadModel, PlainObject
from qe.predictors.estimators import Predict, predictor

# skops nodes whose content no predictor needs: kept as an opaque object of their class.
OPAQUE_NODES = frozenset({"LossNode", "RandomStateNode", "RandomGeneratorNode"})
MAX_DEPTH = 200  # nodes within nodes: far more than qe's deepest models (stacks of pipelines of GPs)
READ_BLOCK = 1 << 20  # bytes unpacked at a time into an array's buffer
ARRAY_KINDS = frozenset("biufV")  # numbers, and records (trees' nodes); never objects or strings
PAYLOAD = ("estimator", "feature_names", "manifest_json")


class _Reader:
    """Turns the schema's nodes into dicts, lists, tuples, JSON values, arrays and plain objects."""

    def __init__(self, archive: zipfile.ZipFile) -> None:
        self.archive = archive
        self.arrays: dict[str, np.ndarray] = {}
        self.objects: list[PlainObject] = []

    def node(self, node: Any, depth: int = 0) -> Any:
        if depth > MAX_DEPTH:
            raise BadModel("objects nested too deeply")
        if not isinstance(node, dict):
            raise BadModel("a node that is not an object")
        loader, content = node.get("__loader__"), node.get("content")
        cls = f"{node.get('__module__')}.{node.get('__class__')}"
        if loader == "JsonNode":
            if not isinstance(content, str):
                raise BadModel("a JSON node without text")
            return json.loads(content)
        if loader == "DictNode":
            if not isinstance(content, dict):
                raise BadModel("a dict node without a dict")
            return {key: self.node(value, depth + 1) for key, value in content.items()}
        if loader in ("ListNode", "TupleNode"):
            if not isinstance(content, list):
                raise BadModel("a list node without a list")
            items = [self.node(item, depth + 1) for item in content]
            return items if loader == "ListNode" else tuple(items)
        if loader == "NdArrayNode":
            return self.array_node(node, cls, depth)
        if loader in ("ObjectNode", "TreeNode"):
            state = {} if content is None else self.node(content, depth + 1)
            obj = PlainObject(cls, state if isinstance(state, dict) else None)
            if loader == "TreeNode" and obj.state is not None:
                reduce = node.get("__reduce__")
                args = reduce.get("args") if isinstance(reduce, dict) else None
                obj.state["__reduce_args__"] = self.node(args, depth + 1)
            self.objects.append(obj)
            return obj
        if loader in OPAQUE_NODES:
            obj = PlainObject(cls, None)
            self.objects.append(obj)
            return obj
        raise BadModel(f"a node of kind {str(loader)[:40]!r}")

    def array_node(self, node: dict[str, Any], cls: str, depth: int) -> Any:
        kind = node.get("type")
        if kind == "json":  # an array of objects: only strings (feature names), read as a list
            items = self.node({"__loader__": "ListNode", "content": node.get("content")}, depth + 1)
            if not all(isinstance(item, str) for item in items):
                raise BadModel("an array of objects")
            return items
        if kind != "numpy":
            raise BadModel("an array of unknown storage")
        array = self.array(node.get("file"))
        if cls == "numpy.ndarray":
            return array
        if array.shape != () or array.dtype.kind not in "biuf":
            raise BadModel("a numpy scalar that is not a number")
        return array[()]

    def array(self, name: Any) -> np.ndarray:
        """The ``.npy`` member ``name``, read once into a read-only array."""
        if not isinstance(name, str):
            raise BadModel("an array without a file name")
        if name not in self.arrays:
            try:
                info = self.archive.getinfo(name)
            except KeyError:
                raise BadModel(f"no member {name[:40]!r} for an array") from None
            with self.archive.open(info) as handle:
                self.arrays[name] = _npy(handle, info.file_size)
        return self.arrays[name]


def _npy(handle: BinaryIO, size: int) -> np.ndarray:
    """An array from an ``.npy`` stream of ``size`` bytes, refusing object and string arrays and a
    header that does not declare exactly the data that follows it (nothing is allocated for it)."""
    version = np.lib.format.read_magic(handle)
    readers = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}
    if version not in readers:
        raise BadModel(f"an array of .npy format {version}")
    shape, fortran_order, dtype = readers[version](handle)
    if dtype.hasobject or dtype.kind not in ARRAY_KINDS or (dtype.kind == "V" and dtype.fields is None):
        raise BadModel(f"an array of {dtype.str}")
    count = math.prod(shape)
    if any(length < 0 for length in shape) or dtype.itemsize * count != size - handle.tell():
        raise BadModel("an array whose header does not match its data")
    flat = np.empty(count, dtype=dtype)
    buffer = memoryview(flat.view(np.uint8))
    position = 0
    while position < len(buffer):
        got = handle.readinto(buffer[position : position + READ_BLOCK])
        if not got:
            raise BadModel("an array shorter than its header says")
        position += got
    array = flat.reshape(shape, order="F" if fortran_order else "C")
    array.flags.writeable = False
    return array


@dataclass(frozen=True)
class PlainModel:
    """A checked model file: its feature names, manifest and numpy predictor."""

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
        with np.errstate(all="ignore"):  # overflow shows in the scores, which the caller checks
            return np.asarray(self.predict(X), dtype=np.float64)


def read_plain(archive: zipfile.ZipFile, schema: Any) -> PlainModel:
    """The model of a skops archive whose ``schema`` :func:`qe.model.allowlist.read_schema` found free of
    refused types, checked whole; raises :class:`BadModel` saying what is wrong (``qe.model.file`` turns
    it into one line naming the file)."""
    reader = _Reader(archive)
    try:
        payload = reader.node(schema)
    except RecursionError:
        raise BadModel("objects nested too deeply") from None
    if not isinstance(payload, dict) or set(payload) != set(PAYLOAD):
        raise BadModel("not a qe model (it should hold an estimator, feature names and a manifest)")
    names, manifest_json = payload["feature_names"], payload["manifest_json"]
    if not isinstance(names, list) or not names or not all(isinstance(name, str) for name in names):
        raise BadModel("its feature names are not a list of names")
    if not isinstance(manifest_json, str):
        raise BadModel("its manifest is not text")
    model = PlainModel(names, manifest_json, predictor(payload["estimator"], len(names)))
    unread = next((obj for obj in reader.objects if not obj.finished), None)
    if unread is not None:
        raise BadModel(f"it holds a {unread.name} that no prediction reads")
    try:
        probe = model(np.zeros((2, len(names))))
    except (ValueError, IndexError, TypeError, ArithmeticError) as exc:  # a check this module lacks
        raise BadModel(f"its estimator cannot predict ({type(exc).__name__})") from None
    if probe.shape != (2,):
        raise BadModel(f"its estimator gives {probe.shape} predictions for 2 rows")
    return model
