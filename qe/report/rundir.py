"""Reading a run directory for a report: its metrics, predictions, config and gold labels, checked,
and only from the run's own files and the data directory."""

from __future__ import annotations

import dataclasses
import json
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from qe.config.data import DataConfig
from qe.config.document import from_table, thaw
from qe.config.experiment import EXPERIMENT
from qe.config.rules import AnyTable, Anything, Fields, Mistake, Number, Optional, TablesOf, check
from qe.evaluation.published import METRICS_SHOWN
from qe.infra.errors import QEInputError
from qe.infra.io import MAX_SCORE, is_score, parse_bounded, parse_label, read_lines


def read_back_data(document: Mapping[str, Any], path: Path) -> DataConfig:
    """The ``[data]`` of a config ``qe run`` wrote (a run directory's ``config.toml``, which may have been
    edited since), checked by the schema's rule of that table; ``path`` names the file in a mistake."""
    import qe.data
    import qe.features.registry  # noqa: F401  (and the families' pair inputs)

    table = document.get("data", {})
    return from_table(DataConfig, check(EXPERIMENT.fields["data"], thaw(table), path, "data"))


@dataclass
class RunDir:
    """What a run (or ablation) directory holds; absent parts are None."""

    path: Path
    config: dict[str, Any] | None
    metrics: dict[str, Any] | None
    predictions: tuple[list[str], np.ndarray] | None
    selection: dict[str, Any] | None
    model_text: str | None
    ablation: dict[str, Any] | None


def read_json(path: Path, what: str) -> dict[str, Any]:
    """A run file's JSON object (a BOM dropped); anything else is one line naming it as ``what``."""
    try:
        value = json.loads(path.read_text(encoding="utf-8-sig"))  # -sig: drops a BOM
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise QEInputError(f"corrupt {what}: {exc}", path) from None
    except (RecursionError, ValueError):  # nested too deeply, an integer of thousands of digits
        raise QEInputError(f"corrupt {what}: not a file qe writes", path) from None
    if not isinstance(value, dict):
        raise QEInputError(f"corrupt {what}: expected a JSON object", path)
    return value


def read_predictions(path: Path) -> tuple[list[str], np.ndarray]:
    """Read ``predictions.tsv`` (header ``id<TAB>score``) as ids and scores."""
    lines = read_lines(path)
    if lines[0] != "id\tscore":
        raise QEInputError("expected the header 'id<TAB>score'", path, 1)
    ids, scores = [], []
    for number, text in enumerate(lines[1:], start=2):
        fields = text.split("\t")
        if len(fields) != 2:
            raise QEInputError(f"expected 2 tab-separated fields, found {len(fields)}", path, number)
        ids.append(fields[0])
        try:
            scores.append(parse_label(fields[1], path, number, None, what="score"))
        except QEInputError:  # its message quotes the field: the report never shows a file's text
            raise QEInputError("the score is not a finite number", path, number) from None
        if not is_score(scores[-1]):
            raise QEInputError(f"the score is beyond {MAX_SCORE:g}: not a prediction qe wrote", path, number)
    return ids, np.array(scores)


def _test_or_cv(metrics: dict[str, Any]) -> Mistake:
    """A run scores its test split, its cross-validation, or both."""
    if metrics.get("test") is None and metrics.get("cv") is None:
        return "test", None, "a table of test metrics (or cv = a table of cross-validation metrics)"
    return None


SPLIT_METRICS = Optional(Fields({name: Number() for name in METRICS_SHOWN}, METRICS_SHOWN, others=Anything()))
METRICS_JSON = Fields({"test": SPLIT_METRICS, "cv": SPLIT_METRICS}, others=Anything(), rules=(_test_or_cv,))
"""What a report reads of ``metrics.json``: finite test and / or cross-validation metrics."""
ABLATION_JSON = Fields({"systems": TablesOf(AnyTable())}, ("systems",), others=Anything())
"""What a report reads of ``ablation.json``: each system's results, by name."""


def read_metrics(path: Path) -> dict[str, Any]:
    """A run's ``metrics.json``, refusing (one line naming it) anything but numeric test / CV metrics."""
    return check(METRICS_JSON, read_json(path, "metrics.json"), path)


def own_file(folder: Path, name: str) -> Path | None:
    """``folder/name`` if it is a file of that folder, None if absent; a link leading out is refused."""
    path = folder / name
    if not path.is_file():
        return None
    if not path.resolve().is_relative_to(folder.resolve()):
        raise QEInputError(f"{name} is a link to a file outside {folder}, refusing to read it", path)
    return path


def load_run(run_dir: str | Path, ablation_dir: str | Path | None = None) -> RunDir:
    """Read a run directory (``metrics.json`` ...) and/or an ablation directory (``ablation.json``).

    ``ablation_dir`` names a separate ``qe ablate`` output whose results join the report; without
    it, an ``ablation.json`` inside ``run_dir`` is used when present.
    """
    path = Path(run_dir)
    if not path.is_dir():
        raise QEInputError("run directory not found", path)
    metrics_path = own_file(path, "metrics.json")
    ablation_path = own_file(path if ablation_dir is None else Path(ablation_dir), "ablation.json")
    if ablation_dir is not None and ablation_path is None:
        raise QEInputError("not an ablation directory (no ablation.json)", ablation_dir)
    if metrics_path is None and ablation_path is None:
        raise QEInputError("not a run directory (no metrics.json or ablation.json)", path)
    metrics = read_metrics(metrics_path) if metrics_path is not None else None
    ablation = None
    if ablation_path is not None:
        ablation = check(ABLATION_JSON, read_json(ablation_path, "ablation.json"), ablation_path)
    config = read_config(path)
    predictions = None
    predictions_path = own_file(path, "predictions.tsv")
    if metrics is not None and predictions_path is not None:
        predictions = read_predictions(predictions_path)
    selection = None
    if (selection_path := own_file(path, "selection.json")) is not None:
        selection = read_json(selection_path, "selection.json")
        if not isinstance(selection.get("path"), list):
            raise QEInputError("corrupt selection.json: no 'path' list", selection_path)
    model_text = None
    if (model_path := own_file(path, "model.txt")) is not None:
        model_text = model_path.read_text(encoding="utf-8", errors="replace").rstrip("\n")
    return RunDir(path, config, metrics, predictions, selection, model_text, ablation)


def read_config(folder: Path) -> dict[str, Any] | None:
    """A run directory's ``config.toml`` (None when absent); a corrupt one is one line naming it."""
    config_path = own_file(folder, "config.toml")
    if config_path is None:
        return None
    try:
        return parse_bounded(
            tomllib.loads, config_path.read_text(encoding="utf-8"), config_path, "config.toml"
        )
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise QEInputError(f"corrupt config.toml: {exc}", config_path) from None


def gold_labels(run: RunDir, data_dir: str | Path | None = None) -> np.ndarray | None:
    """The gold labels of the run's test split (from its config), aligned with ``predictions.tsv``.

    Returns None when the test split has no labels; raises ``QEInputError`` when the data cannot
    be read or does not match the predictions.
    """
    from qe.data.splits import load_split

    if run.config is None or run.predictions is None:
        raise QEInputError("the run directory lacks config.toml or predictions.tsv", run.path)
    data = read_back_data(run.config, run.path / "config.toml")
    if data_dir is not None:
        data = dataclasses.replace(data, data_dir=str(data_dir))
    _check_data_paths(data, run.path, data_dir)
    dataset = load_split(data, "test").dataset
    ids, _ = run.predictions
    if len(dataset) != len(ids):
        raise QEInputError(
            f"predictions.tsv has {len(ids)} rows but the test split has {len(dataset)}", run.path
        )
    if list(dataset.ids) != ids:
        raise QEInputError("predictions.tsv ids do not match the test split's ids", run.path)
    return None if dataset.labels is None else np.asarray(dataset.labels, dtype=np.float64)


def _check_data_paths(data: DataConfig, run_dir: Path, data_dir: str | Path | None) -> None:
    """Refuse test data named by config.toml outside the run directory and the data directory
    (``--data-dir``, else ``$QE_DATA_DIR``): an edited config.toml must not make a report read other files."""
    from qe.data import resolve_data_dir

    root = resolve_data_dir(data_dir)
    roots = (run_dir.resolve(), root.resolve())
    named = {f"data.test.{role}": value for role, value in data.files("test").items()}
    if data_dir is None and data.data_dir is not None:
        named["data.data_dir"] = data.data_dir
    for key, value in named.items():
        if not isinstance(value, str) or not any(Path(value).resolve().is_relative_to(r) for r in roots):
            raise QEInputError(
                f"config.toml names {key} = {value!r}, outside the run directory and the data "
                f"directory ({root}), so it is not read; pass --data-dir with the folder that holds it",
                run_dir / "config.toml",
            )


def error_reason(exc: QEInputError) -> str:
    """An error as a report may show it: one pointing at a line of a file gives only the place (its
    message may quote that line, and a report is shared)."""
    if exc.line is None:
        return str(exc)
    return f"{exc.path}:{exc.line} could not be read (qe report printed why)"
