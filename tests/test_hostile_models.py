"""Hostile model files: a skops tree may hold only the exact types qe saves, never a callable.

The two payloads below were found on a build that trusted every ``sklearn.`` / ``numpy.`` type:
a pipeline of ``FunctionTransformer`` steps ran arbitrary Python at ``qe predict``, another wrote
a file anywhere. Both must be refused before anything in them runs.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import numpy as np
import pytest
import skops.io as sio
from sklearn.datasets import dump_svmlight_file
from sklearn.dummy import DummyRegressor
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer, StandardScaler
from sklearn.utils._testing import assert_run_python_script_without_output

from qe.cli import main
from qe.config.document import thaw
from qe.infra.errors import QEInputError
from qe.learners.factory import LEARNERS, make_learner
from qe.model.file import MODEL_TYPES, QEModel, load_model, save_model
from qe.run.config import load_config
from tests.helpers import write_lines
from tests.helpers.learners import FACTORY_SPECS, MANIFEST, MANIFEST_DOCUMENT, fit_factory_learner
from tests.helpers.zipmembers import read_members, write_zip


def _dump(path, estimator) -> None:
    """Write a model file the way an attacker would: skops itself, no qe check on the way."""
    payload = {
        "estimator": estimator,
        "feature_names": ["surface.src_tokens"],
        "manifest_json": MANIFEST.to_json(),
    }
    path.write_bytes(sio.dumps(payload))


def _dummy() -> DummyRegressor:
    return DummyRegressor().fit(np.zeros((2, 1)), [1.0, 2.0])


def _code_execution(marker) -> Pipeline:
    """full_like fills an object array with source code, take picks it, the sklearn test helper runs it."""
    code = f"open({str(marker)!r}, 'w').write('pwned')"
    return Pipeline(
        [
            ("fill", FunctionTransformer(np.full_like, kw_args={"fill_value": code, "dtype": "O"})),
            ("take", FunctionTransformer(np.take, kw_args={"indices": 0})),
            ("run", FunctionTransformer(assert_run_python_script_without_output)),
            ("model", _dummy()),
        ]
    )


def _file_write(marker) -> Pipeline:
    """dump_svmlight_file writes the feature rows to any path the file names."""
    return Pipeline(
        [
            ("dump", FunctionTransformer(dump_svmlight_file, kw_args={"y": [0.0], "f": str(marker)})),
            ("model", _dummy()),
        ]
    )


@pytest.mark.parametrize("payload", [_code_execution, _file_write], ids=["exec", "write"])
def test_hostile_model_is_refused_by_predict_and_load(tmp_path, capsys, payload):
    marker = tmp_path / "pwned"
    model = tmp_path / "evil.skops"
    _dump(model, payload(marker))
    src = write_lines(tmp_path / "src.txt", ["The house is small ."])
    mt = write_lines(tmp_path / "mt.txt", ["La casa es pequeña ."])
    argv = ["predict", "--model", str(model), "--src", str(src), "--mt", str(mt)]
    assert main([*argv, "--no-language-check", "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith(f"qe: error: {model}: ")
    assert "FunctionTransformer" in err
    assert not marker.exists()
    with pytest.raises(QEInputError, match="FunctionTransformer"):
        QEModel.load(model)
    assert not marker.exists()


def test_callables_inside_trusted_types_are_refused(tmp_path):
    """Even inside types qe saves, a function (here ``numpy.save``) is never a value a model may hold,
    nor a numpy attribute named as a Generator's bit generator (skops would call it)."""
    scaler = StandardScaler().fit(np.zeros((3, 1)))
    scaler.with_mean = np.save
    scaler.rng_ = np.random.default_rng(0)
    path = tmp_path / "callable.skops"
    _dump(path, Pipeline([("scale", scaler), ("model", _dummy())]))
    files = read_members(path)
    files["schema.json"] = files["schema.json"].replace(b'"\\"PCG64\\""', b'"\\"seed\\""')
    write_zip(path, files, zipfile.ZIP_STORED)
    with pytest.raises(QEInputError, match=r"bit generator numpy\.random\.seed.*function numpy\.save"):
        load_model(path)


def test_only_exact_types_are_listed():
    """The list names classes, never a module prefix."""
    assert all(not name.endswith(".") and "*" not in name for name in MODEL_TYPES)
    assert "sklearn.preprocessing._function_transformer.FunctionTransformer" not in MODEL_TYPES


def test_the_specs_cover_every_factory_learner():
    assert {name for name, _ in FACTORY_SPECS} == set(LEARNERS)


@pytest.mark.parametrize(
    "name,spec", FACTORY_SPECS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(FACTORY_SPECS)]
)
def test_every_factory_learner_saves_and_loads(tmp_path, name, spec):
    chosen, x = fit_factory_learner(name, spec)
    path = tmp_path / "m.skops"
    save_model(path, chosen, ["a", "b", "c"], MANIFEST)
    loaded, names, manifest = load_model(path)
    assert names == ["a", "b", "c"] and manifest == MANIFEST
    assert np.array_equal(loaded.predict(x), chosen.predict(x))


CONFIGS = Path(__file__).resolve().parents[1] / "configs"


# The wmt12-best configs' averages take ~5 s each on an idle core; their members' types are those of
# the average, svr, ridge and gradient_boosting FACTORY_SPECS, saved and loaded in the fast tier.
SLOW_CONFIGS = ("wmt12-best.toml", "wmt12-best-rawtext.toml")


@pytest.mark.parametrize(
    "config_name",
    [
        pytest.param(p.name, marks=[pytest.mark.slow] if p.name in SLOW_CONFIGS else [])
        for p in sorted(CONFIGS.glob("*.toml"))
        if not p.name.startswith("resources-")
    ],
)
def test_every_shipped_config_learner_saves_and_loads(tmp_path, config_name):
    learner = load_config(CONFIGS / config_name).learner
    params = thaw(learner.params)
    if "n_repeats" in params:
        params["n_repeats"] = 1  # more repeats only add copies of the same types
    estimator = make_learner(learner.name, params, thaw(learner.grid), scale=learner.scale, cv_folds=3)
    rng = np.random.default_rng(1)
    x = rng.normal(size=(50, 4))
    y = x @ [1.0, 0.5, 0.0, -0.5] + 3
    target = np.column_stack([y, x[:, :2]]) if learner.aux_targets else y
    estimator.fit(x, target)
    chosen = estimator.best_estimator_ if isinstance(estimator, GridSearchCV) else estimator
    save_model(tmp_path / "m.skops", chosen, ["a", "b", "c", "d"], MANIFEST)
    loaded, _, _ = load_model(tmp_path / "m.skops")
    assert np.array_equal(loaded.predict(x), chosen.predict(x))


def test_save_refuses_what_load_would_refuse(tmp_path):
    """qe never writes a model file it would not load: a callable anywhere stops the save."""
    pipeline = Pipeline([("log", FunctionTransformer(np.log1p)), ("model", _dummy())])
    with pytest.raises(QEInputError, match=r"cannot save this learner.*function numpy\.log1p"):
        save_model(tmp_path / "m.skops", pipeline, ["a"], MANIFEST)
    assert list(tmp_path.iterdir()) == []


def test_grid_searches_inside_ensembles_are_saved_as_their_best_pipeline(tmp_path):
    """A member's grid search holds scorer functions: the saved model keeps its refitted best pipeline."""
    rng = np.random.default_rng(2)
    x = rng.normal(size=(40, 2))
    y = x[:, 0] * 2 + 1
    members = [{"name": "svr", "grid": {"C": [0.1, 10.0]}, "scoring": "DeltaAvg"}, {"name": "mean"}]
    model = make_learner("average", {"members": members}).fit(x, y)
    save_model(tmp_path / "m.skops", model, ["a", "b"], MANIFEST)
    loaded, _, _ = load_model(tmp_path / "m.skops")
    ensemble, original = loaded.steps[-1][1], model.steps[-1][1]
    assert isinstance(original.estimators_[0], GridSearchCV)  # the fitted model is left as it was
    saved = ensemble.estimators_[0]
    assert isinstance(saved, Pipeline)
    assert saved.get_params()["model__C"] == original.estimators_[0].best_params_["model__C"]
    assert np.array_equal(loaded.predict(x), model.predict(x))


# ---------------------------------------------------------------------- damaged or crafted content


def _rezip(source: Path, target: Path, edit) -> Path:
    """A copy of a model file with ``edit(members)`` applied to its members (name -> bytes)."""
    members = read_members(source)
    edit(members)
    return write_zip(target, members)


def _with_manifest(path: Path, target: Path, **changes) -> Path:
    manifest = {**MANIFEST_DOCUMENT, **changes}

    def edit(members):
        schema = json.loads(members["schema.json"])
        schema["content"]["manifest_json"]["content"] = json.dumps(json.dumps(manifest))
        members["schema.json"] = json.dumps(schema).encode()

    return _rezip(path, target, edit)


def _predict_error(capsys, model: Path, tmp_path: Path) -> str:
    src = write_lines(tmp_path / "new.en", ["The house is small ."])
    mt = write_lines(tmp_path / "new.es", ["La casa es pequeña ."])
    capsys.readouterr()
    code = main(["predict", "--model", str(model), "--src", str(src), "--mt", str(mt), "--quiet"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith("qe: error: "), err
    return err[0]


@pytest.mark.parametrize(
    ("field", "value", "problem"),
    [
        ("families", 123, "manifest.families = 123: expected a list of a string"),
        ("families", [1], "manifest.families[0] = 1: expected a string"),
        ("label_range", ["a", "b"], "manifest.label_range = ['a', 'b']: expected [low, high]: two numbers"),
        ("label_range", [1], "manifest.label_range = [1]: expected [low, high]: two numbers"),
        ("label_range", [5, 1], "manifest.label_range = [5, 1]: expected [low, high]: two numbers"),
        ("label_range", {"low": 1}, "manifest.label_range = a table: expected [low, high]: two numbers"),
        ("languages", "xx", "manifest.languages = 'xx': expected a table"),
        ("resources", "/etc", "manifest.resources = '/etc': expected a table"),
        ("family_settings", [1, 2], "manifest.family_settings = [1, 2]: expected a table"),
        ("family_settings", {"surface": 3}, "manifest.family_settings.surface = 3: expected a table"),
        ("mt2", "apertium", "manifest.mt2 = 'apertium': expected a table"),
        ("feature_sets", "x", "manifest.feature_sets = 'x': expected a list of a string"),
        ("higher_is_better", "yes", "manifest.higher_is_better = 'yes': expected true or false"),
    ],
)
def test_a_manifest_with_fields_of_the_wrong_type_is_refused_in_one_line(
    tmp_path, capsys, field, value, problem
):
    """These used to end in a TypeError / AttributeError traceback half-way through scoring; the
    refusal is worded as every other: ``file: key.path = value: expected ...``."""
    base = tmp_path / "base.skops"
    _dump(base, _dummy())
    crafted = _with_manifest(base, tmp_path / "crafted.skops", **{field: value})
    err = _predict_error(capsys, crafted, tmp_path)
    assert err.startswith(f"qe: error: {crafted}: {problem}"), err


def test_an_estimator_that_is_not_an_estimator_is_one_line(tmp_path, capsys):
    """A model file whose estimator is a plain string (AttributeError at predict before)."""
    model = tmp_path / "str.skops"
    payload = {
        "estimator": "not a model",
        "feature_names": ["surface.src_tokens"],
        "manifest_json": MANIFEST.to_json(),
    }
    model.write_bytes(sio.dumps(payload))
    err = _predict_error(capsys, model, tmp_path)
    assert "damaged or was not written by qe" in err and "str.skops" in err


def test_an_array_declaring_more_data_than_it_holds_allocates_nothing(tmp_path, capsys):
    """A .npy member whose header declares 10**12 values (a MemoryError traceback before)."""
    base = tmp_path / "base.skops"
    _dump(base, _dummy())

    def edit(members):
        name = next(n for n in members if n.endswith(".npy"))
        header = "{'descr': '<f8', 'fortran_order': False, 'shape': (1000000000000,), }"
        header += " " * (63 - (10 + len(header)) % 64) + "\n"
        members[name] = b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode() + b"\0" * 8

    err = _predict_error(capsys, _rezip(base, tmp_path / "huge.skops", edit), tmp_path)
    assert "huge.skops" in err


def test_a_zip_bomb_is_refused_before_it_is_unpacked(tmp_path, capsys):
    """300 MB of zeros compress to about 300 KB: more than 10 times the file, over 4 MB."""
    base = tmp_path / "base.skops"
    _dump(base, _dummy())

    def edit(members):
        members["padding.npy"] = bytes(300 << 20)

    bomb = _rezip(base, tmp_path / "bomb.skops", edit)
    assert bomb.stat().st_size < 2 << 20
    err = _predict_error(capsys, bomb, tmp_path)
    assert "bomb.skops" in err and "a zip bomb?" in err


def test_a_model_cannot_choose_a_log_file_for_predict_to_read(tmp_path, capsys):
    """family_settings naming a decoder log (e.g. /etc/shadow) made qe predict open and parse it."""
    secret = write_lines(tmp_path / "secret.txt", ["0 ||| not yours ||| d: -1 ||| -1"])
    base = tmp_path / "base.skops"
    _dump(base, _dummy())
    crafted = _with_manifest(
        base,
        tmp_path / "crafted.skops",
        families=["decoder"],
        family_settings={"decoder": {"nbest": str(secret)}},
    )
    err = _predict_error(capsys, crafted, tmp_path)
    assert "--decoder-nbest" in err and str(secret) not in err


def test_a_model_path_that_is_not_a_file_says_so(tmp_path, capsys):
    err = _predict_error(capsys, tmp_path, tmp_path)
    assert "is not a regular file" in err
