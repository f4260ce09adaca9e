"""The README keeps its two set-up commands; its feature catalogue matches the code; its MLQE-PE and
WMT12 result rows match their records (docs/*-table.json), every recorded row carries the signature
of the run that measured it, and a cheap row rebuilt from a clean cache gives its record again."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from qe.config import load_config
from qe.data.sets.wmt20_mlqe import MLQE_PAIRS

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")
MLQE = json.loads((REPO / "docs" / "mlqe-table.json").read_text(encoding="utf-8"))
WMT12 = json.loads((REPO / "docs" / "wmt12-table.json").read_text(encoding="utf-8"))


def load_script(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def signature_parts(signature: str) -> dict[str, str]:
    """``kind:value`` parts of a run signature by kind (the first of each kind)."""
    parts: dict[str, str] = {}
    for part in signature.split("|"):
        kind, _, value = part.partition(":")
        parts.setdefault(kind, value)
    return parts


def test_readme_has_the_two_setup_commands():
    assert "make demo" in README and "make test" in README


def test_readme_is_what_its_sources_give():
    result = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "update_readme.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr


def test_a_changed_number_in_a_result_table_is_put_back():
    update = load_script(REPO / "scripts" / "update_readme.py")
    en_de = f"| en-de | **{MLQE['en-de']['da']['pearson']:.3f}** |"
    svr = f"| **qe M5P, official 17 features** (Weka defaults, 2 linear models) | {WMT12['systems']['official-m5p']['test']['MAE']:.3f} |"  # noqa: E501
    assert en_de in README and svr in README
    tampered = README.replace(en_de, "| en-de | **0.999** |").replace(svr, svr[: -len("0.000 |")] + "0.111 |")
    assert update.render(tampered) == README


@pytest.mark.parametrize("label", ["da", "hter"])
@pytest.mark.parametrize("system", ["baseline", "nmt", "best"])
def test_every_mlqe_row_carries_the_signature_of_its_config(label, system):
    prefix = {"da": "da", "hter": "pe"}[label]
    for pair in MLQE_PAIRS:
        row = (MLQE if system == "best" else MLQE[system])[pair][label]
        config = load_config(REPO / "configs" / "mlqe" / f"{prefix}-{pair}-{system}.toml")
        parts = signature_parts(row["signature"])
        assert parts["data"].startswith(f"mlqe-{prefix}/{pair}@"), (pair, parts["data"])
        assert parts["features"] == "+".join(config["features"]["families"]), pair
        if config["features"].get("resources"):
            assert parts["resources"].startswith(f"mlqe-{prefix}-{pair}@"), pair
        else:
            assert "resources" not in parts, pair
        assert parts["fit"] == "train+dev" and parts["seed"] == str(config["seed"]), pair


def test_every_wmt12_row_of_the_readme_carries_the_signature_of_its_config():
    update = load_script(REPO / "scripts" / "update_readme.py")
    for system, _, _ in update.WMT12_ROWS:
        entry = WMT12["systems"][system]
        config = load_config(REPO / entry["config"])
        parts = signature_parts(entry["signature"])
        assert parts["data"].startswith("wmt12-en-es@"), system
        assert parts["features"] == "+".join(config["features"]["sets"] + config["features"]["families"])
        assert parts["seed"] == str(config["seed"]), system


@pytest.mark.data
@pytest.mark.slow
def test_the_wmt12_official_svr_row_reproduces_from_a_clean_cache(data_dir, capsys):
    reproduce = load_script(REPO / "benchmarks" / "reproduce_row.py")
    assert reproduce.main(["--table", "wmt12", "--row", "official-svr"]) == 0, capsys.readouterr().out
    out = capsys.readouterr().out
    assert "signature: identical" in out and out.count("(ok)") == 5
