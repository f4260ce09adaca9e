"""Hostile learner parameters in a config (main ba3d5b8): TOML reads ``C = 1e400`` (or ``inf``) as
infinity, which scikit-learn's SVR range ``(0, inf]`` accepts, and the run hung in libsvm (over two
minutes on 80 rows before it was stopped), also inside a grid or an ensemble member; a boolean
stood in for a number (``n_estimators = true`` fitted a forest of one tree, exit 0). Each is now
one line naming the config and the key, exit 2, before any feature is extracted.
"""

from __future__ import annotations

import pytest

from qe.cli import main
from tests.helpers.toy import toy_config


@pytest.mark.parametrize(
    ("learner", "expected"),
    [
        ('name = "svr"\nparams = { C = 1e400 }', "learner.params.C = inf: expected a finite number"),
        (
            'name = "svr"\ngrid = { C = [1.0, inf] }',
            "learner.grid.C[1] = inf: expected a finite number or a non-empty list",
        ),
        (
            'name = "average"\nparams = { members = [{ name = "svr", params = { C = inf } }] }',
            "learner.params.members[0].params.C = inf: expected a finite number",
        ),
        (
            'name = "random_forest"\nparams = { n_estimators = true }',
            "learner.params.n_estimators = true: expected an int in the range [1, inf)",
        ),
    ],
)
def test_learner_parameters_a_config_cannot_pass(tmp_path, capsys, learner, expected):
    config = toy_config(tmp_path, learner)
    assert main(["run", str(config), "--output-dir", str(tmp_path / "out"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"qe: error: {config}: {expected}"
    assert not (tmp_path / "out").exists()
