"""The import graph of ``qe`` has no loop, counting the imports made inside functions too (issue 20):
``scripts/import_graph.py`` finds them and exits 1 naming each loop's modules."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "import_graph.py"


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *argv],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
        check=False,
    )


def test_qe_has_no_import_loop() -> None:
    result = _run()
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith("no import loop among "), result.stdout


def test_imports_inside_functions_count() -> None:
    # qe.run.config imports the registries inside a function (startup cost): the edge is still in the graph,
    # and so is a relative import
    edges = set(_run("--edges").stdout.splitlines())
    assert "qe.run.config -> qe.learners.factory" in edges
    assert "qe.config.rules -> qe.infra.errors" in edges
    assert not any(line.startswith("qe.config.rules -> qe.data") for line in edges)


def test_bundle_members_import_no_feature_code() -> None:
    # the resources families read (floor 3) import no family code: cross-fitting cuts a batch by fold
    # without importing qe.features (a batch of the batch's own class); only the diagnostics that look at
    # an experiment's families (qe.doctor) do. The member kinds register themselves: the registry finds
    # them by module name and imports none.
    edges = [line.split(" -> ") for line in _run("--edges").stdout.splitlines() if " -> " in line]
    parts = [(a, b) for a, b in edges if a.startswith(("qe.resources.", "qe.bundle."))]
    assert not [(a, b) for a, b in parts if b.startswith("qe.features")]
    assert not [(a, b) for a, b in parts if a == "qe.bundle.members" and ".kinds." in b]


def test_a_loop_closed_inside_a_function_is_found(tmp_path: Path) -> None:
    # the script run on a copy of itself beside a small package whose loop is closed in a function body
    package = tmp_path / "qe"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "low.py").write_text("def f():\n    from qe.sub import high\n")
    (package / "sub" / "__init__.py").write_text("")
    (package / "sub" / "high.py").write_text("from .. import low\n")
    (package / "alone.py").write_text("import qe.low\n")
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "import_graph.py").write_text(SCRIPT.read_text(encoding="utf-8"))
    result = subprocess.run(
        [sys.executable, str(tmp_path / "scripts" / "import_graph.py")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 1
    assert result.stdout.splitlines() == ["import loop (2 modules): qe.low qe.sub.high"]


def test_no_import_climbs() -> None:
    result = _run("--upward")
    assert not [line for line in result.stdout.splitlines() if line.startswith("upward: ")], result.stdout


def _drawing() -> str:
    page = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    drawing = page.split("```\n", 2)[1]  # the floors, drawn
    return drawing


def test_the_drawing_names_every_folder_and_nothing_else_stands_at_the_root() -> None:
    """The architecture page's floors are the folders: every package of qe/ is on one, and the qe/ root
    holds only the package face, ``__main__`` and the command line."""
    package = REPO / "qe"
    folders = sorted(p.name for p in package.iterdir() if (p / "__init__.py").is_file())
    drawing = _drawing()
    assert [name for name in folders if f"qe/{name}/" not in drawing] == []
    assert sorted(p.name for p in package.glob("*.py")) == ["__init__.py", "__main__.py", "cli.py"]
    floors = {int(line[0]) for line in drawing.splitlines() if line[:1].isdigit()}
    assert floors == set(range(7))


def test_a_module_climbing_a_floor_is_found(tmp_path: Path) -> None:
    """The floors are not decoration: a module of floor 0 importing one of floor 5 is reported."""
    for name in ("scripts", "qe/infra", "qe/run"):
        (tmp_path / name).mkdir(parents=True)
    for name in ("qe", "qe/infra", "qe/run"):
        (tmp_path / name / "__init__.py").write_text("")
    (tmp_path / "qe" / "run" / "pipeline.py").write_text("")
    (tmp_path / "qe" / "infra" / "io.py").write_text("def f():\n    from qe.run import pipeline\n")
    (tmp_path / "scripts" / "import_graph.py").write_text(SCRIPT.read_text(encoding="utf-8"))
    result = subprocess.run(
        [sys.executable, str(tmp_path / "scripts" / "import_graph.py"), "--upward"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert "upward: qe.infra.io (floor 0) -> qe.run.pipeline (floor 5)" in result.stdout, result.stdout


def test_each_config_reader_registers_the_names_it_checks_against(tmp_path: Path) -> None:
    # registries hand their names to the schema when imported: a reader used first thing in a fresh
    # process must import them itself (read_bundle_config raised "no dataset names are registered")
    bundle = tmp_path / "bundle.toml"
    bundle.write_text('[languages]\nsrc = "en"\ntgt = "es"\n\n[edits]\ndataset = "nope"\n', encoding="utf-8")
    experiment = tmp_path / "run.toml"
    experiment.write_text('[data]\ndataset = "nope"\n', encoding="utf-8")
    readers = {
        bundle: "from qe.bundle import read_bundle_config as read",
        experiment: "from qe.run.config import load_config as read",
    }
    for config, imports in readers.items():
        script = f"{imports}\nfrom qe.infra.errors import QEInputError\ntry:\n    read({str(config)!r})\n"
        script += "except QEInputError as exc:\n    print(exc)\n"
        result = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
        )
        assert result.returncode == 0, result.stderr
        assert "nope" in result.stdout and "dataset" in result.stdout, result.stdout
