"""The README keeps its two set-up commands; its feature catalogue matches the code; its MLQE-PE,
WMT12, family-gain and ablation result rows match their records (docs/*-table.json), every recorded
row carries the signature of the run that measured it, and a cheap row rebuilt from a clean cache
gives its record again."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from qe.config.load import load_config
from qe.data.sets.wmt20_mlqe import MLQE_PAIRS

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")
MLQE = json.loads((REPO / "docs" / "mlqe-table.json").read_text(encoding="utf-8"))
WMT12 = json.loads((REPO / "docs" / "wmt12-table.json").read_text(encoding="utf-8"))
FAMILY_GAIN = json.loads((REPO / "docs" / "family-gain-table.json").read_text(encoding="utf-8"))
ABLATION = json.loads((REPO / "docs" / "ablation-table.json").read_text(encoding="utf-8"))
OFFICIAL = "wmt12-official-bf17"


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
    lm = FAMILY_GAIN["families"]["lm"]["alone"]
    family = f"| `lm` alone | {lm['n_features']} | {lm['cv']['MAE']:.3f} |"
    only_lm = ABLATION["systems"]["only:lm"]
    ablation = f"| only:lm | {only_lm['n_features']} | {only_lm['cv']['MAE']:.3f} |"
    assert all(row in README for row in (en_de, svr, family, ablation))
    tampered = README.replace(en_de, "| en-de | **0.999** |").replace(svr, svr[: -len("0.000 |")] + "0.111 |")
    tampered = tampered.replace(family, family[: -len("0.000 |")] + "0.222 |")
    tampered = tampered.replace(ablation, ablation[: -len("0.000 |")] + "0.333 |")
    assert tampered != README and update.render(tampered) == README


@pytest.mark.parametrize("label", ["da", "hter"])
@pytest.mark.parametrize("system", ["baseline", "nmt", "best"])
def test_every_mlqe_row_carries_the_signature_of_its_config(label, system):
    prefix = {"da": "da", "hter": "pe"}[label]
    for pair in MLQE_PAIRS:
        row = (MLQE if system == "best" else MLQE[system])[pair][label]
        config = load_config(REPO / "configs" / "mlqe" / f"{prefix}-{pair}-{system}.toml")
        parts = signature_parts(row["signature"])
        assert parts["data"].startswith(f"mlqe-{prefix}/{pair}@"), (pair, parts["data"])
        assert parts["features"] == "+".join(config.features.families), pair
        if config.features.resources:
            assert parts["resources"].startswith(f"mlqe-{prefix}-{pair}@"), pair
        else:
            assert "resources" not in parts, pair
        assert parts["fit"] == "train+dev" and parts["seed"] == str(config.seed), pair


def test_every_wmt12_row_of_the_readme_carries_the_signature_of_its_config():
    update = load_script(REPO / "scripts" / "update_readme.py")
    for system, _, _ in update.WMT12_ROWS:
        entry = WMT12["systems"][system]
        config = load_config(REPO / entry["config"])
        parts = signature_parts(entry["signature"])
        assert parts["data"].startswith("wmt12-en-es@"), system
        assert parts["features"] == "+".join(config.features.sets + config.features.families)
        assert parts["seed"] == str(config.seed), system


def family_gain_rows() -> list[tuple[str, dict]]:
    """(row name as benchmarks/reproduce_row.py takes it, record) of every family-gain row."""
    rows = [("reference", FAMILY_GAIN["reference"])]
    for name, entry in FAMILY_GAIN["families"].items():
        rows += [(f"{name}:{part}", entry[part]) for part in ("alone", "with_bf17")]
    return rows


def test_every_family_gain_row_carries_the_signature_of_its_config(tmp_path):
    family_gain = load_script(REPO / "benchmarks" / "family_gain.py")
    assert len(family_gain_rows()) == 1 + 2 * len(FAMILY_GAIN["families"]) >= 17
    for row, entry in family_gain_rows():
        family, _, part = row.partition(":")
        sets = [] if part == "alone" else [OFFICIAL]
        families = [] if row == "reference" else [family]
        assert entry["signature"], row
        config = family_gain.load_row_config(entry["config"], tmp_path)  # as qe run reads it
        assert (list(config.features.sets), list(config.features.families)) == (sets, families), row
        parts = signature_parts(entry["signature"])
        assert parts["data"].startswith("wmt12-en-es@"), row
        assert parts["features"] == "+".join(sets + families), row
        assert [p.split("(")[0] for p in entry["signature"].split("|family:")[1:]] == families, row
        assert parts["learner"].startswith("SVR(C=") and parts["learner-options"] == '{"clip":false}', row
        assert parts["seed"] == str(config.seed) and parts["select"] == "cv5-MAE", row
        assert ("resources" in parts) == bool(families), row
        if part == "with_bf17":
            assert entry["n_features"] == 17 + FAMILY_GAIN["families"][family]["alone"]["n_features"], row


def test_every_ablation_row_carries_the_signature_of_its_variant():
    config = load_config(REPO / ABLATION["config_file"])
    systems = ABLATION["systems"]
    groups = [name.removeprefix("only:") for name in systems if name.startswith("only:")]
    assert list(systems) == ["full", *(f"{kind}:{g}" for g in groups for kind in ("without", "only"))]
    assert len(groups) == len(config.features.sets + config.features.families) == 9
    shared = None
    for name, system in systems.items():
        assert system["signature"], name
        parts = signature_parts(system["signature"])
        assert parts["variant"] == name and parts["data"].startswith("wmt12-en-es@"), name
        assert parts["features"] == "+".join(config.features.sets + config.features.families)
        assert parts["seed"] == str(config.seed) and parts["learner"].startswith("SVR(C="), name
        # one run's signature throughout, but for the variant and the learner chosen for it
        rest = [p for p in system["signature"].split("|") if not p.startswith(("variant:", "learner:"))]
        assert rest == (shared := shared or rest), name


@pytest.mark.data
@pytest.mark.slow
def test_the_spelling_family_gain_row_reproduces_from_a_clean_cache(data_dir, capsys):
    reproduce = load_script(REPO / "benchmarks" / "reproduce_row.py")
    assert reproduce.main(["--table", "family-gain", "--row", "spelling:alone"]) == 0, capsys.readouterr().out
    out = capsys.readouterr().out
    assert "signature: identical" in out and out.count("(ok)") == 6


@pytest.mark.data
@pytest.mark.slow
def test_the_wmt12_official_svr_row_reproduces_from_a_clean_cache(data_dir, capsys):
    reproduce = load_script(REPO / "benchmarks" / "reproduce_row.py")
    assert reproduce.main(["--table", "wmt12", "--row", "official-svr"]) == 0, capsys.readouterr().out
    out = capsys.readouterr().out
    assert "signature: identical" in out and out.count("(ok)") == 5


STEP_SYSTEMS = {  # the protocol's systems per label (zero-shot models are trained for DA only)
    "da": ("best", "finetuned", "stacked", "pooled", "zeroshot"),
    "hter": ("best", "finetuned", "stacked", "pooled"),
}


def test_every_steps_row_is_there_and_carries_the_signature_of_its_config():
    """Issue 23's steps table (docs/mlqe-steps-<label>.json): every system of the protocol on every
    pair, each measured with its own config (data, families, resources, seed)."""
    update = load_script(REPO / "scripts" / "update_readme.py")
    for path in update.MLQE_STEPS_TABLES:
        table = json.loads(path.read_text(encoding="utf-8"))
        label = path.stem.removeprefix("mlqe-steps-")
        prefix = {"da": "da", "hter": "pe"}[label]
        for system in STEP_SYSTEMS[label]:
            for pair in MLQE_PAIRS:
                row = (table[pair] if system == "best" else table[system][pair])[label]
                name = f"{prefix}-pooled" if system == "pooled" else f"{prefix}-{pair}-{system}"
                config = load_config(REPO / "configs" / "mlqe" / f"{name}.toml")
                parts = signature_parts(row["signature"])
                datasets = "+".join(config.data.datasets or (config.data.dataset,))
                assert parts["data"].startswith(f"{datasets}@"), (name, parts["data"])
                assert (f"/{pair}" in datasets) == (system != "zeroshot"), name  # zero-shot: never its pair
                assert parts["features"] == "+".join(config.features.families), name
                assert parts["resources"].startswith(f"{Path(config.features.resources).name}@"), name
                assert parts["seed"] == str(config.seed), name
