"""The comparison stage: the ``[[report.against]]`` systems (on this run's data, seed and folds) tested
against ours by paired bootstrap, and the summary table beside the published systems."""

from __future__ import annotations

from typing import Any

import numpy as np

from qe.config.experiment import ExperimentConfig
from qe.config.features import FeaturesConfig
from qe.config.report import AgainstEntry, ReportConfig
from qe.evaluation.metrics import BOOTSTRAPPED, HEADLINE_METRICS, METRICS, paired_bootstrap
from qe.evaluation.published import bootstrap_key, comparison_table, summary_columns
from qe.run.config import load_config
from qe.run.fit import FittedSystem

BOOTSTRAP_METRICS = BOOTSTRAPPED
TESTED_AGAINST = (
    *BOOTSTRAPPED,
    *(n for n, m in METRICS.items() if m.higher_is_better is not None and not m.bootstrap),
)
"""The test metrics kept of each ``[[report.against]]`` system: every quality metric, bootstrapped first."""


def against_config(config: ExperimentConfig, entry: AgainstEntry) -> ExperimentConfig:
    """The config of one ``[[report.against]]`` system, sharing this run's data, seed and jobs (its
    learner is made by the run's context)."""
    if entry.config is not None:
        other = load_config(entry.config, check_learner=False)
        other = other.replace(data=config.data, seed=config.seed, cv=config.cv)
    else:
        given = entry.features or {}
        features = FeaturesConfig(
            sets=given.get("sets", ()),
            families=given.get("families", ()),
            resources=given.get("resources", config.features.resources),
            settings=given.get("settings", config.features.settings),
        )
        other = config.replace(features=features, selection=None)
    return other.replace(name=entry.name, report=ReportConfig(published=False))


def compared(gold: np.ndarray, predictions: np.ndarray, other: FittedSystem) -> dict[str, Any]:
    """One ``[[report.against]]`` system in ``metrics.json``: its CV and test metrics, and the paired
    bootstrap of ours (``predictions``) against its test predictions."""
    return {
        "cv": {m: other.metrics["cv"][m] for m in HEADLINE_METRICS},
        "test": {m: other.metrics["test"][m] for m in TESTED_AGAINST},
        "bootstrap": {
            metric: paired_bootstrap(gold, predictions, other.test_pred, metric).as_dict()
            for metric in BOOTSTRAP_METRICS
        },
    }


def summary_table(config: ExperimentConfig, metrics: dict[str, Any]) -> str:
    """Our test metrics (beside the published systems, for WMT12 only), then the bootstrap tests
    (markdown); the metric columns are the dataset's (``qe.evaluation.published.summary_columns``)."""
    against = metrics.get("against", {})
    dataset = config.data.dataset
    ours = {f"{config.name} (ours, test)": metrics["test"]}
    ours.update({f"{name} (ours, test)": other["test"] for name, other in against.items()})
    lines = [comparison_table(ours, dataset, published=config.report.published)]
    if against:
        shown = [(title, bootstrap_key(key)) for title, key in summary_columns(dataset)]
        lines += [
            "",
            f"Paired bootstrap of {config.name} against each (1000 test resamples; "
            "p = share of resamples where it is not better):",
            "",
            "| vs | " + " | ".join(title for title, _ in shown) + " |",
            "|---" * (len(shown) + 1) + "|",
        ]
        for name, other in against.items():
            tests = [other["bootstrap"].get(key) for _, key in shown]
            cells = [f"{t['a']:.3f} vs {t['b']:.3f}, p {t['p_value']:.3f}" if t else "n/a" for t in tests]
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
