"""What a qe model file may contain, and the check of a skops file against it before anything is built.

The list is exact: the classes every learner of :func:`qe.learners.factory.make_learner` holds once
fitted, as each learner's record lists them (``LearnerRecord.saves``, found by saving each of them;
``tests/test_hostile_models.py`` saves them all again), plus containers, numpy values and the pipeline
around every learner. No module prefix is trusted and no callable is ever accepted as a value: a skops
function, method or partial node is refused wherever it is.
"""

from __future__ import annotations

import hashlib
import json
import zipfile
from typing import Any

from qe.learners.factory import LEARNERS
from qe.predictors.check import BadModel

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
        # what the factory wraps every learner in
        "sklearn.pipeline.Pipeline",
        "sklearn.preprocessing._data.StandardScaler",
        # each learner's own classes: qe.learners.factory.LEARNERS, LearnerRecord.saves
        *(name for record in LEARNERS.values() for name in record.saves),
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

# Sizes, measured on the largest models qe's learners make: a
# 500-tree random forest on 8,000 rows of 290 features is a 69 MB file with a 10.7 MB schema.json,
# the mlqe "best" average (SVR, 600 boosting rounds, ridge) 24 MB with 4 MB. skops stores members
# uncompressed, so a model qe wrote unpacks to its own size; what a member declares bounds what
# zipfile unpacks, and reading the schema (JSON) takes up to about 25 times its size in memory.
MAX_MODEL_BYTES = 1 << 30  # a larger file is not a model qe wrote (its stat is checked before reading)
MAX_SCHEMA_BYTES = 64 << 20  # a schema larger than this is not one qe wrote (3,000 forest trees)
MAX_UNPACKED_RATIO = 10  # a model unpacks to at most this many times its file size ...
MIN_UNPACKED_LIMIT = 4 << 20  # ... or to this many bytes, whichever is more (zip bombs are refused)


def read_schema(archive: zipfile.ZipFile, file_size: int) -> tuple[Any, list[str], list[str]]:
    """``(schema, refused, present)``: a skops file's ``schema.json``, what in it is not allowed, and
    every type it names.

    Reads only ``schema.json`` (plain JSON: nothing is imported or built), after checking that the
    members' declared sizes stay within the limits above (zipfile never unpacks more than a member
    declares). Nodes of one ``__id__`` must hold the same content: skops builds every node of an id
    from the first it meets, so what is checked wherever it appears is what is built. Raises
    :class:`qe.predictors.check.BadModel` for members over the limits, ``ValueError`` (and zipfile's
    errors) for a file that is not a readable skops archive.
    """
    unpacked = sum(member.file_size for member in archive.infolist())
    if unpacked > max(MIN_UNPACKED_LIMIT, MAX_UNPACKED_RATIO * file_size):
        raise BadModel(
            f"its members unpack to {unpacked:,} bytes from {file_size:,} (more than "
            f"{MIN_UNPACKED_LIMIT >> 20} MB and {MAX_UNPACKED_RATIO} times the file: a zip bomb?)"
        )
    info = archive.getinfo("schema.json")
    if info.file_size > MAX_SCHEMA_BYTES:
        raise BadModel(f"its schema.json is {info.file_size:,} bytes (at most {MAX_SCHEMA_BYTES >> 20} MB)")
    schema = json.loads(archive.read(info))
    refused: set[str] = set()
    present: set[str] = set()
    by_id: dict[int, list[dict[str, Any]]] = {}
    stack: list[Any] = [schema]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(item)
            continue
        if not isinstance(item, dict):
            continue
        if "__id__" in item:
            node_id = item["__id__"]
            if not isinstance(node_id, int) or isinstance(node_id, bool):
                raise ValueError("a node id that is not a number")
            by_id.setdefault(node_id, []).append(item)
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
    digests: dict[int, bytes] = {}
    for first, *others in by_id.values():
        if others and any(_digest(node, digests) != _digest(first, digests) for node in others):
            refused.add("two different nodes of one id")
    return schema, sorted(refused), sorted(present)


def _digest(node: Any, digests: dict[int, bytes]) -> bytes:
    """A hash of a node's content without the ids of the nodes in it (skops gives the temporary objects
    it saves ids of their own), computed once per node, so comparing nodes costs the schema's size."""
    if not isinstance(node, dict | list):
        return json.dumps(node).encode()
    if id(node) not in digests:
        if isinstance(node, dict):
            parts = sorted((key, _digest(value, digests)) for key, value in node.items() if key != "__id__")
        else:
            parts = [(str(index), _digest(item, digests)) for index, item in enumerate(node)]
        kind = b"{" if isinstance(node, dict) else b"["
        digests[id(node)] = hashlib.sha256(kind + repr(parts).encode()).digest()
    return digests[id(node)]


def _bit_generator(node: dict[str, Any]) -> str | None:
    """The class name a Generator node's state gives for its bit generator (where skops reads it)."""
    try:
        name = json.loads(node["content"]["bit_generator"]["content"]["bit_generator"]["content"])
    except (KeyError, TypeError, ValueError):
        return None
    return name if isinstance(name, str) else None
