"""Shared fixtures: the data directory (QE_DATA_DIR) and small corpora, bundles and models written by the
tests (plain helpers: tests/helpers)."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import pytest

from tests.helpers import FUZZ_EXAMPLES, write_lines
from tests.helpers.bundles import write_small_data
from tests.helpers.manual import TEST_SRC, TRAIN_SRC, write_split
from tests.helpers.toy import EN, ES, sentences

HOSTILE = Path(__file__).parent / "hostile"


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Print how many cases of the hostile catalogue (tests/hostile) ran and held, and how many examples each
    fuzzed reader (tests/fuzz) was given."""
    _hostile_summary(terminalreporter)
    _fuzz_summary(terminalreporter)


def _hostile_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Count the hostile catalogue's cases by outcome (a skip counts at setup, the rest at call)."""
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    root = terminalreporter.config.rootpath
    for outcome in counts:
        for report in terminalreporter.stats.get(outcome, []):
            ran = report.when == "call" or (outcome == "skipped" and report.when == "setup")
            if ran and HOSTILE in (root / str(report.fspath)).parents:  # fspath is relative to the root
                counts[outcome] += 1
    total = sum(counts.values())
    if total:
        terminalreporter.write_line(
            f"hostile catalogue: {total} cases, {counts['passed']} held, "
            f"{counts['failed']} failed, {counts['skipped']} skipped"
        )


def _fuzz_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Sum the counts each fuzz test attached to its teardown report (carried back from xdist workers too)."""
    examples: Counter[str] = Counter()
    for reports in terminalreporter.stats.values():
        for report in reports:
            if getattr(report, "when", None) != "teardown":
                continue
            for name, counts in report.user_properties:
                if name == FUZZ_EXAMPLES:
                    examples.update(counts)
    for reader, count in sorted(examples.items()):
        terminalreporter.write_line(f"fuzz: {reader}: {count} examples")


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The shared data directory; tests that need it are skipped when QE_DATA_DIR is unset."""
    value = os.environ.get("QE_DATA_DIR")
    if not value or not Path(value, "wmt12-qe").is_dir():
        pytest.skip("QE_DATA_DIR is not set to the shared data directory")
    return Path(value)


@pytest.fixture()
def small_data(tmp_path: Path) -> Path:
    """A data directory with one tiny parallel corpus, an evaluation file and a truecase model."""
    return write_small_data(tmp_path / "data")


@pytest.fixture()
def manual_data(tmp_path: Path) -> Path:
    """A software manual's training and test splits, three test sentences repeating training ones."""
    root = tmp_path / "data"
    root.mkdir()
    write_split(root, "train", TRAIN_SRC)
    write_split(root, "test", TEST_SRC)
    return root


@pytest.fixture(scope="module")
def surface_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small SVR on the surface family (no resources), trained from files like `qe run` does."""
    from qe.model.file import QEModel
    from qe.run.config import load_config
    from qe.run.pipeline import run_experiment

    root = tmp_path_factory.mktemp("model")
    lines = ['name = "stream-toy"', "[data]", "label_range = [1, 5]"]
    for split, n, seed in (("train", 60, 0), ("test", 20, 1)):
        src, mt = sentences(n, EN, seed), sentences(n, ES, seed + 10)
        labels = [f"{1 + 4 * (len(m) % 7) / 6:.2f}" for m in mt]
        write_lines(root / f"{split}.src", src)
        write_lines(root / f"{split}.mt", mt)
        write_lines(root / f"{split}.labels", labels)
        lines += [f"[data.{split}]"] + [f'{k} = "{root / f"{split}.{k}"}"' for k in ("src", "mt", "labels")]
    lines += ["[features]", 'families = ["surface"]', "[learner]", 'name = "svr"', "[cv]", "folds = 3"]
    (root / "toy.toml").write_text("\n".join(lines) + "\n")
    run_experiment(load_config(root / "toy.toml"), root / "run", progress=False)
    model = QEModel.load(root / "run" / "model.skops")
    model.manifest = model.manifest.with_changes(languages={"src": "en", "tgt": "es"})
    model.save(root / "model.skops")
    return root / "model.skops"


@pytest.fixture(scope="module")
def pairs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """600 random English-Spanish sentence pairs (source file, MT file)."""
    root = tmp_path_factory.mktemp("pairs")
    return (
        write_lines(root / "src.txt", sentences(600, EN, 5)),
        write_lines(root / "mt.txt", sentences(600, ES, 6)),
    )
