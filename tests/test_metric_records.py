"""The metric records (qe.evaluation.metrics.METRICS): every list of metric names in qe comes from them, so a
metric added as one record reaches evaluate, the summary tables, the bootstrap and the learners'
scoring, and the outputs keep the names and order they had."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from sklearn.linear_model import Ridge
from sklearn.model_selection import GridSearchCV

from qe.evaluation.metrics import METRICS, evaluate, paired_bootstrap
from qe.evaluation.published import COLUMNS, WMT12_COLUMNS, bootstrap_key

REPO = Path(__file__).resolve().parents[1]

# metrics.json and `qe evaluate --json`, as written before the records existed (docs, the report).
METRICS_JSON_KEYS = [
    "MAE",
    "RMSE",
    "DeltaAvg",
    "Spearman",
    "Pearson",
    "MAE_exact",
    "RMSE_exact",
    "Spearman_scipy",
    "share_errors_ge_1",
    "share_errors_le_0.1",
    "prediction_min",
    "prediction_max",
    "n",
]


def test_evaluate_writes_every_record_in_the_metrics_json_order():
    gold = [1.0, 2.0, 3.0, 4.0, 5.0]
    pred = [1.5, 2.0, 2.0, 4.25, 5.0]
    result = evaluate(gold, pred)
    assert list(result) == METRICS_JSON_KEYS == list(METRICS)
    # errors 0.5, 0, 1, 0.25, 0 (the official scorer rounds 0.25 to 0.25: nothing to round here)
    assert result["MAE"] == pytest.approx(0.35) and result["MAE_exact"] == pytest.approx(0.35)
    assert result["share_errors_ge_1"] == pytest.approx(0.2)
    assert result["share_errors_le_0.1"] == pytest.approx(0.4)
    assert (result["prediction_min"], result["prediction_max"], result["n"]) == (1.5, 5.0, 5)
    assert isinstance(result["n"], int)


def test_directions_and_ranking_metrics_are_those_of_the_wmt12_task():
    lower = {n for n, m in METRICS.items() if m.higher_is_better is False}
    higher = {n for n, m in METRICS.items() if m.higher_is_better}
    assert lower == {"MAE", "RMSE", "MAE_exact", "RMSE_exact"}
    assert higher == {"DeltaAvg", "Spearman", "Spearman_scipy", "Pearson"}
    # a ranks-only submission (WMT12's ranking task) is scored by these alone
    assert {n for n, m in METRICS.items() if m.ranking} == {"DeltaAvg", "Spearman", "Spearman_scipy", "n"}


def test_summary_tables_keep_their_columns_and_titles():
    assert WMT12_COLUMNS == (
        ("MAE", "MAE"),
        ("RMSE", "RMSE"),
        ("DeltaAvg", "DeltaAvg"),
        ("Spearman (WMT12)", "Spearman"),
        ("Spearman (scipy)", "Spearman_scipy"),
        ("Pearson", "Pearson"),
    )
    assert COLUMNS == (
        ("MAE", "MAE_exact"),
        ("RMSE", "RMSE_exact"),
        ("DeltaAvg", "DeltaAvg"),
        ("Spearman", "Spearman_scipy"),
        ("Pearson", "Pearson"),
    )
    # the bootstrap's MAE / RMSE are unrounded: the exact columns are tested under their names
    assert [bootstrap_key(k) for _, k in COLUMNS] == ["MAE", "RMSE", "DeltaAvg", "Spearman_scipy", "Pearson"]


@pytest.mark.parametrize("metric", ["MAE_exact", "n", "prediction_max", "BLEU"])
def test_the_bootstrap_refuses_a_metric_it_does_not_compare(metric):
    gold = np.arange(10.0)
    with pytest.raises(ValueError, match=rf"no paired bootstrap for '{metric}' \(allowed: MAE, RMSE, "):
        paired_bootstrap(gold, gold, gold[::-1], metric, n_samples=5)


@pytest.mark.parametrize("name", [n for n, m in METRICS.items() if m.scorer is not None])
def test_each_scoring_prefers_the_model_that_fits(name):
    """A learner's ``scoring`` picks the small penalty (a good fit) over a huge one (a constant),
    so every scorer points the right way, losses included."""
    rng = np.random.default_rng(2)
    x = rng.normal(size=(120, 3))
    y = x @ np.array([1.0, 0.5, 0.0]) + rng.normal(0, 0.1, 120)
    scorer = METRICS[name].sklearn_scorer()
    search = GridSearchCV(Ridge(), {"alpha": [1e6, 0.01]}, scoring=scorer, cv=3).fit(x, y)
    assert search.best_params_["alpha"] == 0.01


def _python(code: str, cwd: Path = REPO) -> str:
    env = {**os.environ, "PYTHONPATH": str(cwd)}
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()[-1]


MEDIAN_AE = """    Metric(
        "MedAE",
        lambda gold, pred: float(np.median(np.abs(np.subtract(pred, gold)))),
        higher_is_better=False,
        scorer="neg_median_absolute_error",
        bootstrap=True,
        column="MedAE",
        tables=((SUMMARY_TABLE, "median AE"),),
    ),
"""


def test_one_new_record_in_qe_metrics_reaches_evaluate_tables_bootstrap_and_scoring(tmp_path):
    """A median absolute error added as one record to a copy of qe/evaluation/metrics.py, and nothing else:
    every list of metrics has it (metrics.json, the summary table, the bootstrap, a learner's scoring)."""
    shutil.copytree(REPO / "qe", tmp_path / "qe", ignore=shutil.ignore_patterns("__pycache__"))
    source = tmp_path / "qe" / "evaluation" / "metrics.py"
    anchor = '    Metric("share_errors_ge_1", share_errors_ge_1),\n'
    assert source.read_text().count(anchor) == 1
    source.write_text(source.read_text().replace(anchor, MEDIAN_AE + anchor))
    code = """
import json, numpy as np
from qe.evaluation import metrics, published
from qe.run import against
from qe.commands import evaluate
from qe.learners import factory
gold, good, bad = np.arange(12.0), np.arange(12.0) + 0.1, np.arange(12.0)[::-1]
print(json.dumps({
    "file": metrics.__file__,
    "keys": list(metrics.evaluate([1, 2, 3, 4], [1, 2, 5, 8])),
    "value": metrics.evaluate([1, 2, 3, 4], [1, 2, 5, 8])["MedAE"],
    "table": published.comparison_table({"ours": {"MedAE": 0.25}}).splitlines()[::2],
    "bootstrap": list(against.BOOTSTRAP_METRICS),
    "a_wins": metrics.paired_bootstrap(gold, good, bad, "MedAE", n_samples=50).a_wins,
    "scoring": "MedAE" in factory.SCORINGS,
    "search": factory.make_learner("kernel_ridge", grid={"alpha": [1.0]}, scoring="MedAE").scoring,
    "ranking": list(evaluate.RANKING_METRICS),
}))
"""
    found = json.loads(_python(code, tmp_path))
    assert found["file"] == str(source)
    assert found["keys"] == [*METRICS_JSON_KEYS[:8], "MedAE", *METRICS_JSON_KEYS[8:]]
    assert found["value"] == 1.0  # errors 0, 0, 2, 4: median 1
    assert found["table"] == [
        "| system | MAE | RMSE | DeltaAvg | Spearman | Pearson | median AE |",
        "| **ours** | n/a | n/a | n/a | n/a | n/a | 0.250 |",
    ]
    assert found["bootstrap"] == ["MAE", "RMSE", "DeltaAvg", "Spearman", "Spearman_scipy", "Pearson", "MedAE"]
    assert found["a_wins"] == 1.0
    assert found["scoring"] is True
    assert found["search"] == "neg_median_absolute_error"
    assert found["ranking"] == ["DeltaAvg", "Spearman", "Spearman_scipy", "n"]


def test_the_metric_records_import_neither_scipy_nor_scikit_learn():
    """`qe evaluate --help` and `qe compare --help` read the records: the numerical stack loads on use."""
    code = "import sys, qe.evaluation.metrics, qe.evaluation.published; "
    code += "print(sorted({m.split('.')[0] for m in sys.modules}))"
    loaded = set(json.loads(_python(code).replace("'", '"')))
    assert not loaded & {"scipy", "sklearn"}
