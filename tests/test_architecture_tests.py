"""The test suite's own layout: no test module imports another (shared fixtures live in conftest.py,
shared helpers in tests/helpers), so each test module can be run, moved or deleted alone."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def imported_modules(path: Path, root: Path) -> list[tuple[int, str]]:
    """Every module a file under ``root`` imports, at any depth, relative imports resolved, with its line
    (``from a import b`` counts both a and a.b: b may be a module)."""
    package = ".".join(path.relative_to(root.parent).parent.parts)
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
            module = (f"{base}.{node.module}" if node.module else base) if node.level else str(node.module)
            found.append((node.lineno, module))
            found += [(node.lineno, f"{module}.{alias.name}") for alias in node.names]
    return found


def imports_of_test_modules(root: Path) -> list[str]:
    """``file:line imports module`` for each import of a test module (test_*.py) in a file under root."""
    found = set()
    for path in sorted(root.rglob("*.py")):
        for line, module in imported_modules(path, root):
            parts = module.split(".")
            tests = [k for k, part in enumerate(parts) if k and part.startswith("test_")]
            if parts[0] == root.name and tests:
                found.add(f"{path.relative_to(root.parent)}:{line} imports {'.'.join(parts[: tests[0] + 1])}")
    return sorted(found)


def test_no_test_module_imports_another() -> None:
    assert imports_of_test_modules(TESTS) == []


def test_the_check_finds_each_way_of_importing_a_test_module(tmp_path: Path) -> None:
    root = tmp_path / "tests"
    (root / "hostile").mkdir(parents=True)
    (root / "helpers.py").write_text("from tests.conftest import x\nimport json\n")
    (root / "test_a.py").write_text("from tests.helpers import lines\n\ndef f():\n    import tests.test_b\n")
    (root / "hostile" / "test_c.py").write_text("from ..test_a import f\nfrom tests import test_b\n")
    assert imports_of_test_modules(root) == [
        "tests/hostile/test_c.py:1 imports tests.test_a",
        "tests/hostile/test_c.py:2 imports tests.test_b",
        "tests/test_a.py:4 imports tests.test_b",
    ]
