"""Config values: a wrong type or range is one line naming the config file, the key and what is allowed."""

from __future__ import annotations

import pytest

from qe.bundle import read_bundle_config
from qe.cli import main
from qe.infra.errors import QEInputError
from tests.helpers import write_config
from tests.helpers.bundles import small_config
from tests.helpers.toy import toy_config

SVR = 'name = "svr"\ngrid = { C = [1.0, 10.0] }'


@pytest.mark.parametrize(
    ("before", "after", "expected"),
    [
        (
            "label_range = [1, 5]",
            'label_range = ["a", 5]',
            "data.label_range = ['a', 5]: expected [low, high]",
        ),
        ("label_range = [1, 5]", "label_range = [5, 1]", "data.label_range = [5, 1]: expected [low, high]"),
        ("label_range = [1, 5]", "label_range = [1, 5, 9]", "data.label_range = [1, 5, 9]: expected"),
        (
            SVR,
            'name = "svr"\nparams = { C = "big" }',
            "learner.params.C = 'big': expected a float in the range",
        ),
        (
            SVR,
            'name = "svr"\nparams = { C = -1 }',
            "learner.params.C = -1: expected a float in the range (0.0, inf",
        ),
        (
            SVR,
            'name = "svr"\ngrid = { C = [1.0, -1.0] }',
            "learner.grid.C = -1.0: expected a float in the range",
        ),
        (SVR, 'name = "svr"\ngrid = { C = 3 }', "learner.grid.C = 3: expected a non-empty list"),
        (SVR, 'name = "svr"\ngrid = "big"', "learner.grid = 'big': expected 'default' or a table"),
        (SVR, 'name = "svr"\nscale = "yes"', "learner.scale = 'yes': expected true or false"),
        (SVR, 'name = "m5p"\nparams = { min_instances = 0 }', "learner.params.min_instances = 0: expected"),
        (
            SVR,
            'name = "average"\nparams = { members = [{ name = "m5p" }, { name = "svr", params = {C = -1}}]}',
            "learner.params.members[1].params.C = -1: expected a float",
        ),
        (SVR, 'name = "svr"\nscoring = "R2"', "learner.scoring: unknown scoring 'R2' (allowed: MAE, RMSE"),
        ("folds = 3", "folds = 0", "cv.folds = 0: expected an integer >= 2"),
        ("folds = 3", "folds = 1", "cv.folds = 1: expected an integer >= 2"),
        ("folds = 3", "folds = 2.5", "cv.folds = 2.5: expected an integer >= 2"),
        ("folds = 3", "folds = 3\nn_jobs = 0", "cv.n_jobs = 0: expected an integer from 1 to 256 or -1"),
        ('name = "toy"', 'name = "toy"\nseed = -1', "seed = -1: expected an integer from 0 to 4294967295"),
        ('name = "toy"', 'name = "toy"\nseed = true', "seed = true: expected an integer from 0"),
        ("sets = []", "sets = ['a', 3]", "features.sets[1] = 3: expected a string"),
        (
            "sets = []",
            "sets = ['wmt12-official-bf17']",  # a run on the user's files: refused when extracting
            "features.sets = ['wmt12-official-bf17']: expected no feature sets without data.dataset",
        ),
        ("[cv]", "[selection]\nparams = {}\n[cv]", "[selection] needs name = ..."),
        ("[cv]", "[report]\npublished = 1\n[cv]", "report.published = 1: expected true or false"),
    ],
)
def test_bad_experiment_values_are_one_line(tmp_path, capsys, before, after, expected):
    config = toy_config(tmp_path)
    text = config.read_text()
    assert before in text
    config.write_text(text.replace(before, after, 1))
    assert main(["run", str(config), "--output-dir", str(tmp_path / "out"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert err.startswith(f"qe: error: {config}: ") and expected in err, err
    assert not (tmp_path / "out").exists()


def test_more_folds_than_training_rows_is_refused_once_the_data_is_known(tmp_path, capsys):
    config = toy_config(tmp_path)  # 80 training rows
    config.write_text(config.read_text().replace("folds = 3", "folds = 10000"))
    assert main(["run", str(config), "--output-dir", str(tmp_path / "out"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    expected = "cv.folds = 10000: expected an integer from 2 to 80 (the number of training rows)"
    assert err == f"qe: error: {config}: {expected}"
    config.write_text(config.read_text().replace("folds = 10000", "folds = 80"))  # leave-one-out is allowed
    assert main(["run", str(config), "--output-dir", str(tmp_path / "out"), "--quiet"]) == 0


def test_bad_jobs_override_is_one_line_and_valid_values_still_load(tmp_path, capsys):
    from qe.run.config import load_config

    config = toy_config(tmp_path)
    assert main(["run", str(config), "--output-dir", str(tmp_path / "out"), "--quiet", "--jobs", "0"]) == 2
    assert capsys.readouterr().err.strip() == "qe: error: --jobs = 0: expected an integer from 1 to 256 or -1"
    # the edges of the allowed ranges; [features.settings] checked by each family, naming the file
    text = config.read_text().replace("folds = 3", "folds = 2\nn_jobs = -1")
    good = text.replace("families = []", 'families = []\nsettings = { surface = { style = "wmt12" } }')
    config.write_text("seed = 0\n" + good)
    loaded = load_config(config)
    assert (loaded.cv.folds, loaded.cv.n_jobs, loaded.seed) == (2, -1, 0)
    assert loaded.features.settings == {"surface": {"style": "wmt12"}}
    for settings, expected in (
        ('{ surface = { any = "thing" } }', "features.settings.surface: unknown setting(s) any"),
        ('{ surface = { style = "nltk" } }', "features.settings.surface.style = 'nltk': expected one of"),
        ("{ lm = { orders = 9 } }", "features.settings.lm.orders = 9: expected an integer from 1 to 6"),
        ("{ nosuch = { x = 1 } }", "features.settings.nosuch: unknown feature family 'nosuch'"),
    ):
        config.write_text(text.replace("families = []", f"families = []\nsettings = {settings}"))
        with pytest.raises(QEInputError) as caught:
            load_config(config)
        assert str(caught.value).startswith(f"{config}: {expected}")


def _bundle(**changes) -> dict:
    config = small_config(with_lm=True)
    for dotted, value in changes.items():
        *parents, key = dotted.split("__")
        table = config
        for parent in parents:
            table = table.setdefault(parent, {})
        table[key] = value
    return config


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"lm__src__order": "three"}, "lm.src.order = 'three': expected an integer from 2 to 6"),
        ({"lm__src__order": 9}, "lm.src.order = 9: expected an integer from 2 to 6"),
        ({"poslm__src__order": 2}, "poslm.src.order = 2: expected an integer from 3 to 6"),
        ({"ibm1__iterations": -1}, "ibm1.iterations = -1: expected an integer >= 1"),
        ({"ibm1__min_prob": 1.5}, "ibm1.min_prob = 1.5: expected a number in [0, 1)"),
        ({"ibm1__directions": ["s2t", "up"]}, "ibm1.directions[1] = 'up': expected one of 's2t', 't2s'"),
        ({"ngrams__src__max_order": 0}, "ngrams.src.max_order = 0: expected an integer from 1 to 6"),
        ({"ngrams__src__side": "both"}, "ngrams.src.side = 'both': expected one of 'src', 'tgt'"),
        ({"lm__src__binary": "no"}, "lm.src.binary = 'no': expected true or false"),
        (
            {"text__style": "nltk"},
            "text.style = 'nltk': expected one of 'moses', 'moses-aggressive', 'wmt12'",
        ),
        (
            {"text__tgt__case": "upper"},
            "text.tgt.case = 'upper': expected one of 'lower', 'keep', 'truecase'",
        ),
        (
            {"leakage__near_duplicate_chrf": 0.3},
            "leakage.near_duplicate_chrf = 0.3: expected false or 0 (off)",
        ),
        ({"leakage__near_duplicate_chrf": True}, "leakage.near_duplicate_chrf = true: expected false or 0"),
        ({"leakage__eval_files": "eval.en"}, "leakage.eval_files = 'eval.en': expected a list of a string"),
        ({"edits__dataset": "wmt12-en-es", "edits__folds": 1}, "edits.folds = 1: expected an integer >= 2"),
        (
            {"edits__dataset": "nope"},
            "edits.dataset: unknown dataset 'nope' (allowed: wmt12-en-es, mlqe-pe/en-de,",
        ),
        ({"corpora__toy__src": 5}, "corpora.toy.src = 5: expected a string"),
        ({"name": ["x"]}, "name = ['x']: expected a string"),
    ],
)
def test_bad_bundle_values_are_one_line(tmp_path, changes, expected):
    path = write_config(tmp_path / "bundle.toml", _bundle(**changes))
    with pytest.raises(QEInputError) as info:
        read_bundle_config(path)
    assert info.value.path == str(path)
    assert expected in info.value.message, info.value.message


def test_bundle_cli_reports_a_bad_value_as_one_line(tmp_path, capsys):
    path = write_config(tmp_path / "bundle.toml", _bundle(lm__src__order="three"))
    assert main(["resources", "build", str(path), "--output", str(tmp_path / "out"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"qe: error: {path}: lm.src.order = 'three': expected an integer from 2 to 6"


def test_near_duplicate_switch_values(tmp_path):
    for value, threshold in ((False, 0.0), (0, 0.0), (0.95, 0.95), (1, 1)):
        config = read_bundle_config(
            write_config(tmp_path / "b.toml", _bundle(leakage__near_duplicate_chrf=value))
        )
        assert config.leakage.near_duplicate_chrf == threshold


@pytest.mark.parametrize(
    ("option", "value", "expected"),
    [
        ("--batch-size", "0", "--batch-size = 0: expected an integer >= 1"),
        ("--chunk-size", "0", "--chunk-size = 0: expected an integer >= 1"),
        ("--jobs", "300", "--jobs = 300: expected an integer from 1 to 256 or -1"),
    ],
)
def test_command_line_numbers_are_refused_in_the_one_wording(tmp_path, capsys, option, value, expected):
    """A number out of range on the command line reads as it does in a config: ``key = value: expected``."""
    src = tmp_path / "s.txt"
    src.write_text("a b\n")
    argv = ["features", "--src", str(src), "--mt", str(src), "--out", str(tmp_path / "f.tsv")]
    assert main([*argv, "--families", "surface", "--quiet", option, value]) == 2
    assert capsys.readouterr().err.strip() == f"qe: error: {expected}"
    assert not (tmp_path / "f.tsv").exists()
