"""Experiment helpers: per-split family settings."""

from __future__ import annotations

from qe.config import split_settings


def test_split_settings_override_shared_keys_per_split():
    settings = {
        "decoder": {
            "missing": "nan",
            "train": {"nbest": "a.nbest"},
            "test": {"nbest": "b.nbest", "missing": "error"},
        },
        "surface": {"style": "moses"},
    }
    assert split_settings(settings, "train") == {
        "decoder": {"missing": "nan", "nbest": "a.nbest"},
        "surface": {"style": "moses"},
    }
    assert split_settings(settings, "test")["decoder"] == {"missing": "error", "nbest": "b.nbest"}
    assert split_settings(settings, "predict")["decoder"] == {"missing": "nan"}
