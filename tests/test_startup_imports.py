"""Start-up cost by module name: `qe --help` imports no command and no numerical stack, a command's
--help only its own module, and `qe predict` on one pair neither the test framework nor dask,
plotting or spaCy (scikit-learn's import used to bring pytest and dask through skops)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from qe.commands import summaries
from tests.helpers import write_lines
from tests.helpers.toy import EN, ES, sentences

REPO = Path(__file__).resolve().parents[1]

# Runs the CLI in a fresh interpreter and reports its exit code and every module it imported.
_PROBE = """
import contextlib, io, json, sys
from qe.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    try:
        code = main(sys.argv[1:])
    except SystemExit as exc:
        code = exc.code
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""

NUMERICAL = {"numpy", "pandas", "scipy", "sklearn", "skops", "pyarrow", "joblib", "kenlm", "tqdm"}
# Every learner qe saves (qe.predictors.reader reads them all) scores with numpy alone: scikit-learn, skops
# and scipy are not imported. What scoring never needs, whatever the learner: the test framework, dask,
# plotting, spaCy (for a model whose families do not tag), deep learning.
SCIKIT_LEARN = {"sklearn", "skops", "scipy"}
NEVER_TO_SCORE = {"pytest", "_pytest", "dask", "distributed", "matplotlib", "spacy", "torch", "IPython"}


def _imported(tmp_path: Path, *argv: str) -> tuple[int, set[str]]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    result = subprocess.run(
        [sys.executable, "-c", _PROBE, *argv],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.splitlines()[-1])
    return report["code"], set(report["modules"])


def _packages(modules: set[str]) -> set[str]:
    return {name.split(".")[0] for name in modules}


def _commands(modules: set[str]) -> set[str]:
    return {name.removeprefix("qe.commands.") for name in modules if name.startswith("qe.commands.")}


def test_top_level_help_imports_no_command_and_no_numerical_stack(tmp_path):
    code, modules = _imported(tmp_path, "--help")
    assert code == 0
    assert not _commands(modules)  # not even qe.commands.options
    unwanted = _packages(modules) & (NUMERICAL | NEVER_TO_SCORE)
    assert not unwanted, sorted(unwanted)
    assert not {"qe.run.pipeline", "qe.model.file", "qe.features.registry"} & modules


@pytest.mark.parametrize("command", sorted(summaries()))
def test_a_commands_help_imports_only_its_own_command(tmp_path, command):
    code, modules = _imported(tmp_path, command, "--help")
    assert code == 0
    assert _commands(modules) <= {command, "options"}
    heavy = {"pandas", "scipy", "sklearn", "skops", "pyarrow"} | NEVER_TO_SCORE
    assert not _packages(modules) & heavy, sorted(_packages(modules) & heavy)


def _predict_one(tmp_path: Path, model: Path) -> set[str]:
    src = write_lines(tmp_path / "one.en", sentences(1, EN, 3))
    mt = write_lines(tmp_path / "one.es", sentences(1, ES, 4))
    out = tmp_path / "scores.tsv"
    argv = ["predict", "--model", str(model), "--src", str(src), "--mt", str(mt), "--out", str(out)]
    code, modules = _imported(tmp_path, *argv, "--quiet")
    assert (
        code == 0
        and out.read_text().splitlines()[0] == "id\tscore"
        and len(out.read_text().splitlines()) == 2
    )
    assert not _packages(modules) & NEVER_TO_SCORE, sorted(_packages(modules) & NEVER_TO_SCORE)
    assert _commands(modules) <= {"predict", "options"}
    assert not {name for name in modules if name.startswith("qe.run.")}
    return modules


def test_predict_on_one_pair_with_an_svr_imports_neither_scikit_learn_nor_the_test_framework(
    tmp_path,
    surface_model,
):
    modules = _predict_one(tmp_path, surface_model)
    assert not _packages(modules) & SCIKIT_LEARN, sorted(_packages(modules) & SCIKIT_LEARN)


def test_a_forest_scores_with_numpy_alone_too(
    tmp_path,
    surface_model,
):
    """Every learner qe saves is scored by qe.predictors.reader: a random forest no longer goes through
    skops."""
    from qe.learners.factory import make_learner
    from qe.model.file import QEModel

    svr = QEModel.load(surface_model)
    rows = np.random.default_rng(0).normal(size=(30, len(svr.feature_names)))
    forest = make_learner("random_forest", {"n_estimators": 3}).fit(rows, rows[:, 0])
    QEModel(forest, svr.feature_names, svr.manifest).save(tmp_path / "forest.skops")
    modules = _predict_one(tmp_path, tmp_path / "forest.skops")
    assert not _packages(modules) & SCIKIT_LEARN, sorted(_packages(modules) & SCIKIT_LEARN)
