"""Run reports: the metrics beside the published systems, plots and tables, as Markdown and HTML.

``write_report(run_dir)`` reads what ``qe run`` (and optionally ``qe ablate``) wrote and produces
``report.md``, ``report.html`` and PNG figures in ``report_files/``. One module a job:
:mod:`~qe.report.rundir` reads and checks the run directory, :mod:`~qe.report.analyses` derives
residual bands and importances, :mod:`~qe.report.plots` draws on a given ``Axes`` (reusable in
notebooks; the global pyplot backend is never touched), :mod:`~qe.report.build` assembles the
sections as :mod:`~qe.report.blocks`, :mod:`~qe.report.render` writes Markdown or HTML and
:mod:`~qe.report.write` writes the files. A word-level run (``qe run`` with ``[words]``) has its own
report: :mod:`~qe.report.wordrun` reads and checks its directory, :mod:`~qe.report.wordstats` counts
the confusions and the words most often BAD, :mod:`~qe.report.wordbuild` assembles the sections.
"""

from qe.report.analyses import label_bands, model_importances, residuals_by_band
from qe.report.build import build_report
from qe.report.plots import (
    figure_png,
    new_figure,
    plot_ablation,
    plot_importances,
    plot_residual_bands,
    plot_scatter,
    plot_selection_path,
)
from qe.report.rundir import load_run, read_metrics, read_predictions
from qe.report.wordbuild import build_word_report
from qe.report.wordrun import is_word_run, load_word_run
from qe.report.wordstats import confusion, most_often_bad
from qe.report.write import write_report

__all__ = [
    "build_report",
    "build_word_report",
    "confusion",
    "figure_png",
    "is_word_run",
    "label_bands",
    "load_run",
    "load_word_run",
    "model_importances",
    "most_often_bad",
    "new_figure",
    "plot_ablation",
    "plot_importances",
    "plot_residual_bands",
    "plot_scatter",
    "plot_selection_path",
    "read_metrics",
    "read_predictions",
    "residuals_by_band",
    "write_report",
]
