"""Print the import loops among qe's modules and exit 1 if there is one.

Counts every ``import qe...`` / ``from qe... import`` / relative import, at module level and inside
functions alike, because a loop closed by a deferred import is still a loop (issue 20). ``--edges``
also prints every import, ``--upward`` the imports from a lower floor to a higher one (``FLOORS``, the
layers docs/architecture.md draws). Modules loaded by name at run time (the commands
``qe.commands`` loads, the feature families and selectors their registries discover) are not imports here.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import numpy as np
from scipy.sparse import csr_array
from scipy.sparse.csgraph import connected_components

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "qe"

FLOORS: dict[str, int] = {
    # 0 foundations: errors, safe file I/O and outputs, workers and the parallel backend, memos; metrics
    **dict.fromkeys(("qe", "qe.infra", "qe.evaluation"), 0),
    # 1 config rules: rule types and predicates, the names and tables registries hand in; each section's
    # rule beside its frozen dataclass, the experiment config composed of them
    "qe.config": 1,
    # 2 data and text: datasets, tables, a config's splits; tokenization, spaCy pipelines; word-level tags
    **dict.fromkeys(("qe.data", "qe.text", "qe.words"), 2),
    # 3 parts: feature families, learners, selectors, resources and the bundle, encoders, decoder and NMT
    # readers, the numpy predictors, the word-level model
    **dict.fromkeys(("qe.features", "qe.learners", "qe.selection", "qe.resources", "qe.embeddings"), 3),
    **dict.fromkeys(("qe.nmt", "qe.decoder", "qe.predictors", "qe.wordmodel", "qe.bundle"), 3),
    # 4 assembly: saved models (the file, its manifest, the allow-list, scoring, the catalogue); streaming
    **dict.fromkeys(("qe.model", "qe.stream"), 4),
    # 5 workflows: a run (reading its config, its stages, ablations, the ready-made models), reports, the
    # service, the diagnostics of a language pair
    **dict.fromkeys(("qe.run", "qe.report", "qe.serve", "qe.doctor"), 5),
    # 6 entry points: the command line
    **dict.fromkeys(("qe.cli", "qe.__main__", "qe.commands"), 6),
}
"""Module (or package: its whole subtree) -> floor; the longest match wins, a new module falls to 0."""


def module_name(path: Path) -> str:
    """The dotted name of the module at ``path`` (a package's ``__init__`` is the package)."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def resolve(name: str, modules: set[str]) -> str | None:
    """The longest known module that ``name`` (a module or ``module.attribute``) lies in."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def imported(tree: ast.AST, here: str, is_package: bool, modules: set[str]) -> set[str]:
    """The qe modules a file's import statements name, wherever in the file they stand."""
    found: set[str] = set()
    package = here if is_package else here.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            # ``from qe.x import y`` may name a submodule y or an attribute of qe.x.
            names = [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        for name in names:
            target = resolve(name, modules)
            if target is not None and target != here:
                found.add(target)
    return found


def graph() -> dict[str, set[str]]:
    """Each module under ``qe/`` mapped to the qe modules it imports."""
    files = sorted(PACKAGE.rglob("*.py"))
    modules = {module_name(path) for path in files}
    edges: dict[str, set[str]] = {}
    for path in files:
        here = module_name(path)
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        edges[here] = imported(tree, here, path.name == "__init__.py", modules)
    return edges


def loops(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module, each sorted, largest first."""
    names = sorted(edges)
    index = {name: i for i, name in enumerate(names)}
    pairs = [(index[a], index[b]) for a in names for b in edges[a]]
    rows, cols = (np.array(side, dtype=np.int64) for side in zip(*pairs, strict=True)) if pairs else ([], [])
    matrix = csr_array((np.ones(len(pairs)), (rows, cols)), shape=(len(names), len(names)))
    _, labels = connected_components(matrix, directed=True, connection="strong")
    components: dict[int, list[str]] = {}
    for name, label in zip(names, labels, strict=True):
        components.setdefault(int(label), []).append(name)
    found = [c for c in components.values() if len(c) > 1]
    return sorted(found, key=lambda c: (-len(c), c))


def floor(module: str) -> int:
    """The floor of ``module``: its own entry in ``FLOORS`` or its nearest package's."""
    while module not in FLOORS:
        module = module.rpartition(".")[0]
    return FLOORS[module]


def upward(edges: dict[str, set[str]]) -> list[tuple[str, str]]:
    """The imports from a lower floor to a higher one."""
    return sorted((a, b) for a, targets in edges.items() for b in targets if floor(b) > floor(a))


def main(argv: list[str]) -> int:
    edges = graph()
    if "--edges" in argv:
        for source in sorted(edges):
            for target in sorted(edges[source]):
                print(f"{source} -> {target}")
    if "--upward" in argv:
        for source, target in upward(edges):
            print(f"upward: {source} (floor {floor(source)}) -> {target} (floor {floor(target)})")
    found = loops(edges)
    for component in found:
        print(f"import loop ({len(component)} modules): {' '.join(component)}")
    if not found:
        count = sum(map(len, edges.values()))
        print(f"no import loop among {len(edges)} modules ({count} imports)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
