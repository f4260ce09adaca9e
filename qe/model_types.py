"""What a qe model file may contain, and the check of a skops file against it before anything is built.

The list is exact: the classes every learner of :func:`qe.learners.factory.make_learner` holds once
fitted (found by saving each of them; ``tests/test_hostile_models.py`` saves them all again), plus
the numpy / scikit-learn internals of their trees. No module prefix is trusted and no callable is
ever accepted as a value: a skops function, method or partial node is refused wherever it is.
"""

from __future__ import annotations

import io
import json
import zipfile
from typing import Any

# Classes (module.class as skops records them) that may appear as objects or arrays in a model file.
MODEL_TYPES = frozenset(
    {
        # containers and plain values
        "builtins.dict",
        "builtins.list",
        "builtins.str",  # skops records every JSON value (str, int, float, bool, None) as str
        "builtins.tuple",
        # numpy arrays, numpy scalars and random generators
        "numpy.ndarray",
        "numpy.float64",
        "numpy.uint64",
        "numpy.random._generator.Generator",
        "numpy.random.mtrand.RandomState",
        # qe learners
        "qe.learners.aux.AuxTargetStack",
        "qe.learners.ensemble.AveragingRegressor",
        "qe.learners.ensemble.StackedRegressor",
        "qe.learners.fast.NystroemSVR",
        "qe.learners.gp.GPRegressor",
        "qe.learners.m5p.M5P",
        # scikit-learn estimators and what their fitted trees hold
        "sklearn.pipeline.Pipeline",
        "sklearn.preprocessing._data.StandardScaler",
        "sklearn.svm._classes.SVR",
        "sklearn.svm._classes.LinearSVR",
        "sklearn.kernel_approximation.Nystroem",
        "sklearn.dummy.DummyRegressor",
        "sklearn.kernel_ridge.KernelRidge",
        "sklearn.linear_model._ridge.RidgeCV",
        "sklearn.tree._classes.DecisionTreeRegressor",
        "sklearn.tree._classes.ExtraTreeRegressor",
        "sklearn.tree._tree.Tree",
        "sklearn.ensemble._forest.RandomForestRegressor",
        "sklearn.ensemble._forest.ExtraTreesRegressor",
        "sklearn.ensemble._hist_gradient_boosting.gradient_boosting.HistGradientBoostingRegressor",
        "sklearn.ensemble._hist_gradient_boosting.binning._BinMapper",
        "sklearn.ensemble._hist_gradient_boosting.predictor.TreePredictor",
        "sklearn._loss.link.IdentityLink",
        "sklearn._loss.link.LogLink",
        "sklearn._loss.link.Interval",
        "sklearn._loss.loss.HalfSquaredError",
        "sklearn._loss.loss.AbsoluteError",
        "sklearn._loss.loss.PinballLoss",
        "sklearn._loss.loss.HalfPoissonLoss",
        "sklearn._loss._loss.CyHalfSquaredError",
        "sklearn._loss._loss.CyAbsoluteError",
        "sklearn._loss._loss.CyPinballLoss",
        "sklearn._loss._loss.CyHalfPoissonLoss",
        "sklearn.gaussian_process._gpr.GaussianProcessRegressor",
        "sklearn.gaussian_process.kernels.ConstantKernel",
        "sklearn.gaussian_process.kernels.DotProduct",
        "sklearn.gaussian_process.kernels.Product",
        "sklearn.gaussian_process.kernels.RBF",
        "sklearn.gaussian_process.kernels.Sum",
        "sklearn.gaussian_process.kernels.WhiteKernel",
    }
)

# skops node kinds that build data from the types above. Absent on purpose: FunctionNode,
# MethodNode, PartialNode, OperatorFuncNode (callables), ConstructorFromReduceNode, SparseMatrixNode,
# DTypeNode, SetNode, SliceNode, Bytes*Node, CachedNode (qe's models never hold them).
MODEL_NODES = frozenset(
    {
        "DictNode",
        "ListNode",
        "TupleNode",
        "JsonNode",
        "NdArrayNode",
        "ObjectNode",
        "LossNode",
        "TreeNode",
        "RandomStateNode",
        "RandomGeneratorNode",
        "TypeNode",
    }
)
# Types that may appear as values (skops TypeNode: the key types of a dict), not as objects.
KEY_TYPES = frozenset({"builtins.str"})
# The bit generator a numpy Generator is rebuilt with: skops stores its class name as a string.
BIT_GENERATORS = frozenset({"PCG64"})

MAX_SCHEMA_BYTES = 256 << 20  # a schema larger than this is not one qe wrote
MAX_UNPACKED_RATIO = 50  # a model qe wrote unpacks to at most this many times its file size ...
MIN_UNPACKED_LIMIT = 256 << 20  # ... or to this many bytes, whichever is more (zip bombs are refused)


def refused_entries(data: bytes) -> tuple[list[str], list[str]]:
    """``(refused, present)``: what in a skops file's tree is not allowed, and every type it names.

    Reads only ``schema.json`` (plain JSON: nothing is imported or built). Raises ``ValueError`` for
    a file that is not a readable skops archive.
    """
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        unpacked = sum(member.file_size for member in archive.infolist())
        if unpacked > max(MIN_UNPACKED_LIMIT, MAX_UNPACKED_RATIO * len(data)):
            raise ValueError(f"its members unpack to {unpacked} bytes from {len(data)}")
        info = archive.getinfo("schema.json")
        if info.file_size > MAX_SCHEMA_BYTES:
            raise ValueError(f"schema.json is {info.file_size} bytes")
        schema = json.loads(archive.read(info))
    refused: set[str] = set()
    present: set[str] = set()
    stack: list[Any] = [schema]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(item)
            continue
        if not isinstance(item, dict):
            continue
        stack.extend(item.values())
        if "__loader__" not in item:
            continue
        loader, module, name = item.get("__loader__"), item.get("__module__"), item.get("__class__")
        if not all(isinstance(v, str) for v in (loader, module, name)):
            raise ValueError("a node without a loader, module or class name")
        full = f"{module}.{name}"
        present.add(full)
        if loader not in MODEL_NODES:
            kind = loader.removesuffix("Node").lower() or "node"
            refused.add(f"{kind} {full}")
        elif full not in (KEY_TYPES if loader == "TypeNode" else MODEL_TYPES):
            refused.add(f"type {full}" if loader == "TypeNode" else full)
        elif loader == "RandomGeneratorNode" and _bit_generator(item) not in BIT_GENERATORS:
            refused.add(f"bit generator numpy.random.{_bit_generator(item)}")
    return sorted(refused), sorted(present)


def _bit_generator(node: dict[str, Any]) -> str | None:
    """The class name a Generator node's state gives for its bit generator (where skops reads it)."""
    try:
        name = json.loads(node["content"]["bit_generator"]["content"]["bit_generator"]["content"])
    except (KeyError, TypeError, ValueError):
        return None
    return name if isinstance(name, str) else None
