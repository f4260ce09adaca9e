"""The walkthrough notebook is stored clean and runs end to end on a small WMT12 subset."""

from __future__ import annotations

from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "wmt12_walkthrough.ipynb"


def _code_cells(notebook) -> list:
    return [cell for cell in notebook.cells if cell.cell_type == "code"]


def test_notebook_is_valid_and_stored_without_outputs():
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(notebook)
    cells = _code_cells(notebook)
    assert cells and all(cell.outputs == [] and cell.execution_count is None for cell in cells)
    assert notebook.metadata.kernelspec.name == "python3"


@pytest.mark.slow
@pytest.mark.data
def test_notebook_runs_on_a_small_subset(data_dir, tmp_path, monkeypatch):
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    monkeypatch.setenv("QE_DATA_DIR", str(data_dir))
    monkeypatch.setenv("QE_NOTEBOOK_SMALL", "1")
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    # "python3" runs this interpreter (jupyter_client swaps a bare "python" for sys.executable),
    # so the kernel sees the same installed qe; the working folder is a scratch one.
    client = nbclient.NotebookClient(
        notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()
    outputs = [output for cell in _code_cells(notebook) for output in cell.outputs]
    assert not [output for output in outputs if output.output_type == "error"]
    stdout = "".join(output.get("text", "") for output in outputs if output.output_type == "stream")
    assert "train: 300 pairs, test: 100 pairs" in stdout
    assert "89 features: 17 official + 72 surface" in stdout
    figures = [output for output in outputs if "image/png" in output.get("data", {})]
    assert len(figures) == 2
    markdown = [
        output.data["text/markdown"] for output in outputs if "text/markdown" in output.get("data", {})
    ]
    assert markdown and "SDLLW_M5PbestDeltaAvg (winner) (published)" in markdown[0]
