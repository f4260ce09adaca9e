"""The MLQE-PE table's configs: written by scripts/mlqe_configs.py, valid, and honest about languages."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from qe.config import load_config
from qe.data.sets.wmt20_mlqe import MLQE_PAIRS
from qe.resources.bundle import read_bundle_config

REPO = Path(__file__).resolve().parents[1]
CONFIGS = sorted((REPO / "configs" / "mlqe").glob("*.toml"))


def test_configs_are_what_the_generator_writes() -> None:
    done = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "mlqe_configs.py"), "--check"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout
    names = {path.name for path in CONFIGS}
    for label in ("da", "pe"):
        for pair in MLQE_PAIRS:
            assert {f"resources-{label}-{pair}.toml", f"resources-{label}-{pair}-finetuned.toml"} <= names
            systems = ("baseline", "nmt", "best", "finetuned", "stacked")
            assert {f"{label}-{pair}-{system}.toml" for system in systems} <= names


@pytest.mark.parametrize("path", CONFIGS, ids=[path.stem for path in CONFIGS])
def test_every_config_passes_the_schema(path: Path) -> None:
    if path.name.startswith("resources-"):
        config = read_bundle_config(path)
        label, pair = path.stem.removesuffix("-finetuned").split("-", 2)[1:]
        dataset = f"mlqe-{label}/{pair}"
        # Resources come from the training split of the same half (same raw strings, so the
        # cross-fitting folds recognise the training pairs) and never from test20.
        assert config["corpora"]["qe"]["dataset"] == config["edits"]["dataset"] == dataset
        assert config["corpora"]["qe"]["cross_fit"] == 5
        # the fine-tuned encoder's bundle: the same members, plus the encoder trained on the same pairs
        assert ("finetuned" in config) == path.stem.endswith("-finetuned")
        if "finetuned" in config:
            assert config["finetuned"]["corpus"] == "qe" and config["finetuned"]["folds"] == 5
            plain = read_bundle_config(path.with_name(path.name.replace("-finetuned", "")))
            assert {k: v for k, v in config.items() if k not in ("finetuned", "name", "description")} == {
                k: v for k, v in plain.items() if k not in ("name", "description")
            }
        return
    config = load_config(path)
    label, rest = path.stem.split("-", 1)
    pair = rest.rsplit("-", 1)[0]
    assert config["data"]["dataset"] == f"mlqe-{label}/{pair}"
    assert not config["learner"].get("grid")  # frozen: chosen on dev, test20 only reports
    resources = config["features"].get("resources")
    finetuned = "finetuned" in config["features"]["families"]
    assert resources in (None, f"models/resources/mlqe-{label}-{pair}" + ("-finetuned" if finetuned else ""))
    if path.stem.endswith("-stacked"):  # the best system plus the fine-tuned encoder's prediction
        best = load_config(path.with_name(path.name.replace("-stacked", "-best")))
        assert config["features"]["families"] == [*best["features"]["families"], "finetuned"]
        assert config["learner"] == best["learner"]
    embeddings = config["features"]["settings"].get("embeddings")
    if embeddings is not None:  # the encoder covers en, de, zh, ru but not ro, et, ne, si
        assert (embeddings.get("sides") == "mt") == (pair.split("-")[0] in ("ro", "et", "ne", "si"))


def run_table(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "mlqe_table.py"), *args], capture_output=True, text=True
    )


def test_table_renders_a_saved_run(tmp_path: Path) -> None:
    metrics = {"pearson": 0.8, "spearman": 0.7, "mae": 0.4, "rmse": 0.5}
    table = {
        "ro-en": {"da": metrics},
        "baseline": {"ro-en": {"da": dict(metrics, pearson=0.5)}},
        "nmt": {"ro-en": {"da": dict(metrics, pearson=0.6)}},
        "lp_mean": {"ro-en": {"da": 0.647}},
    }
    saved = tmp_path / "table.json"
    saved.write_text(json.dumps(table), encoding="utf-8")
    done = run_table("--markdown", "--from", str(saved))
    assert done.returncode == 0, done.stderr
    rows = [line for line in done.stdout.splitlines() if line.startswith("| ")][1:]
    # Three rows for the one pair saved: baseline first (with lp_mean, OpenKiwi 0.685 and the goal
    # 0.75 of issue 14), then nmt, then the best system in bold.
    assert rows[0].split(" | ")[:4] == ["| ro-en", "da", "baseline", "0.500"]
    assert rows[0].endswith("| 0.647 | 0.685 | 0.75 |")
    assert rows[1].split(" | ")[2:4] == ["nmt", "0.600"]
    assert rows[2].split(" | ")[2:4] == ["**best**", "**0.800**"]
    assert len(rows) == 3


@pytest.mark.parametrize("content", ["[1]", "{not json", '{"baseline": {}}'])
def test_table_refuses_what_it_did_not_print(tmp_path: Path, content: str) -> None:
    saved = tmp_path / "table.json"
    saved.write_text(content, encoding="utf-8")
    done = run_table("--markdown", "--from", str(saved))
    assert done.returncode == 2
    assert "not a table this script printed" in done.stderr
    assert "Traceback" not in done.stderr
