"""``write_report(run_dir)``: the report files (Markdown, HTML, PNG figures), written atomically."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from qe.infra.errors import QEInputError
from qe.infra.io import atomic_write, write_text_atomic
from qe.infra.outputs import prepare_report_dir, recognise
from qe.report.build import FIGURE_NAMES, FIGURES_DIR, Report, build_report
from qe.report.render import render_html, render_markdown


def write_report(
    run_dir: str | Path,
    *,
    data_dir: str | Path | None = None,
    ablation_dir: str | Path | None = None,
    out_dir: str | Path | None = None,
) -> dict[str, Any]:
    """Write ``report.md``, ``report.html`` and ``report_files/*.png`` into the run directory, when
    qe wrote it (a folder of the user's that merely holds a ``metrics.json`` is refused), or into
    ``out_dir`` (new, empty, or written by qe).

    Returns ``{"markdown": path, "html": path, "figures": [paths], "notes": [...]}``; each file is
    written atomically, figures first so the pages never link a missing image.
    """
    run_dir = Path(run_dir)
    report = build_report(run_dir, data_dir=data_dir, ablation_dir=ablation_dir)
    if out_dir is None and recognise(run_dir, "run")[0] not in ("run", "ablation"):
        raise QEInputError(
            "is not a run or an ablation qe wrote, so the report is not written into it "
            "(its report.md could be yours); pass --out DIR",
            run_dir,
        )
    target = run_dir if out_dir is None else Path(out_dir)
    try:
        if out_dir is not None:
            prepare_report_dir(target)
        _refuse_links(target)
        return _write(report, target)
    except OSError as exc:
        raise QEInputError(
            f"cannot write the report here ({exc.strerror or type(exc).__name__}); "
            "pass --out DIR to write it elsewhere",
            target,
        ) from None


def _refuse_links(folder: Path) -> None:
    """Refuse, before anything is written, a report path that is a symbolic link (``report_files``
    linked to a folder of the user's would have its PNG files replaced or deleted), or a
    ``report_files`` that is not a folder: the report follows no link qe did not make."""
    figures = folder / FIGURES_DIR
    paths = [
        folder / "report.md",
        folder / "report.html",
        figures,
        *(figures / f"{n}.png" for n in FIGURE_NAMES),
    ]
    for path in paths:
        if path.is_symlink():
            raise QEInputError(
                "is a symbolic link, which qe report neither writes through nor replaces (nothing was "
                "written); remove it or pass --out DIR",
                path,
            )
    if os.path.lexists(figures) and not figures.is_dir():
        raise QEInputError(
            "is not a folder, so the report's figures cannot go there; pass --out DIR", figures
        )


def _write(report: Report, run_dir: Path) -> dict[str, Any]:
    figures_dir = run_dir / FIGURES_DIR
    written = []
    for name, data in report.figures.items():
        with atomic_write(figures_dir / name, "wb") as handle:
            handle.write(data)
        written.append(figures_dir / name)
    for stale in FIGURE_NAMES:  # figures of an earlier report that this one no longer has
        path = figures_dir / f"{stale}.png"
        if f"{stale}.png" not in report.figures and path.is_file():
            path.unlink()
    write_text_atomic(run_dir / "report.md", render_markdown(report.blocks))
    write_text_atomic(run_dir / "report.html", render_html(report.blocks, report.title))
    return {
        "markdown": run_dir / "report.md",
        "html": run_dir / "report.html",
        "figures": written,
        "notes": report.notes,
    }
