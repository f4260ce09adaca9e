"""Saved models load without executing code from the file, and refuse tampered or truncated files."""

from __future__ import annotations

import pickle
import zipfile

import numpy as np
import pytest
import skops.io as sio

from qe.infra.errors import QEInputError
from qe.learners.factory import make_learner
from qe.model.file import QEModel, load_model, save_model
from qe.model.manifest import ModelManifest


class Payload:
    """A type outside the allowlist (stands in for an attacker's class)."""

    def __reduce__(self):
        return (print, ("executed!",))


def _fitted():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(60, 3))
    return make_learner("svr").fit(x, x.sum(axis=1)), x


def test_round_trip_gives_identical_predictions(tmp_path):
    model, x = _fitted()
    save_model(tmp_path / "m.skops", model, ["a", "b", "c"], ModelManifest.from_document({"signature": "s"}))
    loaded, names, manifest = load_model(tmp_path / "m.skops")
    assert np.array_equal(loaded.predict(x), model.predict(x))
    assert (
        names == ["a", "b", "c"] and manifest.signature == "s" and manifest.to_json() == '{"signature": "s"}'
    )


def test_untrusted_type_is_refused_before_loading(tmp_path, capsys):
    path = tmp_path / "evil.skops"
    path.write_bytes(sio.dumps({"estimator": Payload(), "feature_names": [], "manifest_json": "{}"}))
    with pytest.raises(QEInputError, match="untrusted types"):
        load_model(path)
    assert "executed!" not in capsys.readouterr().out


def test_pickle_payload_and_truncated_files_are_refused(tmp_path, capsys):
    model, _ = _fitted()
    pickled = tmp_path / "pickled.skops"
    pickled.write_bytes(pickle.dumps(Payload()))  # a pickle, not a skops zip: never unpickled
    with pytest.raises(QEInputError, match="not a readable qe model file"):
        load_model(pickled)
    good = tmp_path / "good.skops"
    save_model(good, model, ["a", "b", "c"], ModelManifest())
    truncated = tmp_path / "truncated.skops"
    truncated.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    with pytest.raises(QEInputError, match="truncated or corrupt"):
        load_model(truncated)
    # a skops archive whose schema was replaced by a pickle payload
    tampered = tmp_path / "tampered.skops"
    with zipfile.ZipFile(good) as source, zipfile.ZipFile(tampered, "w") as target:
        for item in source.infolist():
            data = source.read(item.filename)
            target.writestr(item, pickle.dumps(Payload()) if item.filename == "schema.json" else data)
    with pytest.raises(QEInputError):
        load_model(tampered)
    assert "executed!" not in capsys.readouterr().out
    with pytest.raises(QEInputError, match="model file not found"):
        load_model(tmp_path / "missing.skops")


def test_prediction_uses_the_settings_of_the_predict_split():
    """Per-split family settings (e.g. decoder logs for train / test) are resolved for 'predict'."""
    manifest = {
        "families": ["surface"],
        "family_settings": {"surface": {"style": "moses", "train": {"normalize": True}}},
    }
    (family,) = QEModel(None, [], ModelManifest.from_document(manifest)).make_families()
    assert family.settings["style"] == "moses" and family.settings["normalize"] is False
    with pytest.raises(QEInputError, match="precomputed feature tables"):
        QEModel(
            None, [], ModelManifest.from_document({**manifest, "feature_sets": ["wmt12-official-bf17"]})
        ).make_families()
