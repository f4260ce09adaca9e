"""The expected times said before each long stage of ``qe run``: building a bundle (its members, then
the cross-fitting folds), extracting features, the CV predictions and the refit. Rates are set here
to known values, so the figures are checked against sums done by hand."""

from __future__ import annotations

import io
import re
from pathlib import Path

import numpy as np
import pytest
import tomli_w
from sklearn.model_selection import GridSearchCV, PredefinedSplit
from sklearn.svm import SVR

from qe.bundle import build_bundle
from qe.cli import main
from qe.features.base import Pairs
from qe.features.extractor import extract_features
from qe.features.registry import family_class
from qe.infra.expected import shown_duration
from qe.learners.progress import reporting
from qe.learners.search import ScaledGridSearchCV
from qe.run.fit import _expected
from tests.helpers import write_lines
from tests.helpers.toy import toy_config


def test_durations_are_shown_rounded_to_what_a_person_reads():
    assert [shown_duration(s) for s in (0.2, 40, 89.4, 95, 720, 7500)] == [
        "about 1 s",
        "about 40 s",
        "about 89 s",
        "about 2 min",
        "about 12 min",
        "about 2 h 5 min",
    ]


def _toy_bundle_config(tmp_path: Path) -> Path:
    write_lines(tmp_path / "train.src", ["alpha x .", "beta x .", "gamma x .", "delta x ."] * 3)
    write_lines(tmp_path / "train.mt", ["alfa y .", "beta y .", "gama y .", "delta y ."] * 3)
    write_lines(tmp_path / "ext.src", ["omega z ."] * 5)
    write_lines(tmp_path / "ext.tgt", ["OMEGA w ."] * 5)
    config = {
        "name": "times",
        "languages": {"src": "en", "tgt": "de"},
        "text": {"style": "moses"},
        "corpora": {
            "qe": {"src": "train.src", "mt": "train.mt", "cross_fit": 2},
            "ext": {"src": "ext.src", "tgt": "ext.tgt"},
        },
        "ngrams": {"src": {"side": "src", "max_order": 2}},
        "ibm1": {"iterations": 2},
    }
    path = tmp_path / "times.toml"
    path.write_text(tomli_w.dumps(config), encoding="utf-8")
    return path


def test_cross_fitting_says_its_expected_time_from_the_members_build_times(tmp_path, capsys):
    """The folds rebuild each member that read the training split: (folds - 1) times as long as the
    members took on all lines (here 2 folds: once as long)."""
    config = _toy_bundle_config(tmp_path)
    bundle = build_bundle(config, tmp_path / "out", data_dir=tmp_path, progress=True, n_jobs=2)
    err = capsys.readouterr().err
    members = bundle.manifest["members"]
    took = sum(members[name]["build_seconds"] for name in ("ibm1.s2t", "ibm1.t2s", "ngrams.src"))
    fitted = "ibm1.s2t, ibm1.t2s, ngrams.src"
    assert f"cross-fitting: {fitted} once per fold, expected to take {shown_duration(took)}" in err


def test_a_long_extraction_says_its_expected_time_and_gives_the_same_values(capsys):
    """From 1,000 pairs the first 80 are extracted here and timed before the rest goes to the workers:
    the values are those of an extraction without that pilot."""
    rng = np.random.default_rng(0)
    words = ["alpha", "beta", "gamma", "delta", "x", "y", ".", ","]
    src = [" ".join(rng.choice(words, rng.integers(1, 12))) for _ in range(1200)]
    mt = [" ".join(rng.choice(words, rng.integers(1, 12))) for _ in range(1200)]
    pairs = Pairs.of(src, mt)
    quiet = extract_features([family_class("surface")()], pairs, progress=False, n_jobs=1, batch_size=500)
    capsys.readouterr()
    loud = extract_features([family_class("surface")()], pairs, progress=True, n_jobs=2, batch_size=500)
    err = capsys.readouterr().err
    assert re.search(
        r"^features surface: 1,200 pairs, expected to take about \d+ s \(timed on the first 80\)$", err, re.M
    )
    assert loud.equals(quiet)
    assert set(loud.attrs["family_seconds"]) == {"surface"}
    small = extract_features([family_class("surface")()], pairs.slice(0, 999), progress=True, batch_size=500)
    assert "expected to take" not in capsys.readouterr().err
    assert small.equals(quiet.iloc[:999])


def test_the_fits_after_a_search_expect_what_the_search_measured():
    x = np.random.default_rng(0).normal(size=(100, 3))
    search = GridSearchCV(SVR(), {"C": [1.0, 2.0]}, cv=5).fit(x, x[:, 0])
    took = float(search.cv_results_["mean_fit_time"][search.best_index_])
    # CV folds of 80 rows, as the search's: 3 rounds take 3 x what one fit took
    assert _expected(search, 80, 3, 100, on_dev=False) == f", expected to take {shown_duration(3 * took)}"
    # chosen on dev after fitting 100 training rows: a refit on 200 rows takes 2 squared times as long
    assert _expected(search, 200, 1, 100, on_dev=True) == f", expected to take {shown_duration(4 * took)}"
    assert _expected(SVR(), 80, 3, 100, on_dev=False) == ""


def test_qe_run_says_the_cv_predictions_expected_time(tmp_path, capsys):
    config = toy_config(tmp_path)
    assert main(["run", str(config), "--output-dir", str(tmp_path / "run")]) == 0
    err = capsys.readouterr().err
    assert re.search(
        r"CV predictions: 3 folds of 80 rows with the chosen parameters, expected to take about \d+ s", err
    )


@pytest.mark.parametrize(("train_rows", "said"), [(2000, True), (1500, False)])
def test_a_choice_on_dev_among_few_candidates_expects_its_time_on_thousands_of_rows(train_rows, said):
    """Three candidates fitted once each (a choice on dev) say their expected time when the training
    rows reach PILOT_MIN_ROWS: such fits take far longer than the pilot fits."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(train_rows + 300, 3))
    y = x[:, 0] + rng.normal(0, 0.1, len(x))
    dev = PredefinedSplit([-1] * train_rows + [0] * 300)
    search = ScaledGridSearchCV(SVR(), {"C": [0.5, 1.0, 2.0]}, cv=dev, refit=False)
    stream = io.StringIO()
    with reporting(True, interval=0, stream=stream):
        search.fit(x, y)
    first = stream.getvalue().splitlines()[0]
    assert first.startswith(f"grid search (1 folds, {train_rows + 300} rows, 1 worker): 3 candidates")
    assert ("expected to take about" in first) is said
