"""`qe ablate`: variants per family, bootstrap against the full system, table and chart."""

from __future__ import annotations

import json

import pytest

from qe.cli import main
from qe.run.ablation import ablation_variants, family_groups
from tests.helpers.toy import toy_config


def test_variants_by_family_prefix():
    groups = family_groups(["bf17.a", "bf17.b", "surface.c", "lm.d"])
    assert groups == {"bf17": ["bf17.a", "bf17.b"], "surface": ["surface.c"], "lm": ["lm.d"]}
    variants = ablation_variants(groups)
    assert variants["full"] == ["bf17.a", "bf17.b", "surface.c", "lm.d"]
    assert variants["without:bf17"] == ["surface.c", "lm.d"]
    assert variants["only:surface"] == ["surface.c"]
    assert len(variants) == 1 + 2 * 3
    assert list(ablation_variants({"x": ["x.a"]})) == ["full"]


def test_ablate_end_to_end(tmp_path, capsys):
    config = toy_config(tmp_path, learner='name = "svr"\nparams = { C = 10.0 }')
    out = tmp_path / "ablation"
    assert (
        main(["ablate", str(config), "--output-dir", str(out), "--quiet", "--bootstrap-samples", "100"]) == 0
    )
    result = json.loads((out / "ablation.json").read_text())
    # toy tables have headerless columns f1 (source length) and f2 (MT length): two groups
    assert set(result["systems"]) == {"full", "without:f1", "only:f1", "without:f2", "only:f2"}
    for name, system in result["systems"].items():
        assert {"MAE", "DeltaAvg"} <= set(system["cv"]) and "MAE" in system["test"]
        if name != "full":
            assert 0.0 <= system["bootstrap_vs_full"]["MAE"]["p_value"] <= 1.0
    # the label is driven by the source length (f1): dropping it must hurt on test
    systems = result["systems"]
    assert systems["only:f1"]["test"]["MAE"] < systems["only:f2"]["test"]["MAE"]
    table = (out / "ablation.md").read_text()
    assert len(table.strip().splitlines()) == 2 + len(systems)
    assert (out / "ablation.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert main(["ablate", str(config), "--output-dir", str(out), "--quiet"]) == 2
    assert "already holds a run" in capsys.readouterr().err


@pytest.mark.parametrize("bad", ["[selection]\nname = 'nope'\n"])
def test_unknown_selector_in_config_is_one_line(tmp_path, capsys, bad):
    config = toy_config(tmp_path)
    config.write_text(config.read_text() + bad)
    assert main(["run", str(config), "--output-dir", str(tmp_path / "o"), "--quiet"]) == 2
    assert "unknown selector 'nope'" in capsys.readouterr().err


@pytest.mark.parametrize("samples", ["-5", "0", "19", "1000001", "99999999999999999999999"])
def test_too_few_or_too_many_bootstrap_samples_are_refused_before_any_work(tmp_path, capsys, samples):
    config = toy_config(tmp_path)
    out = tmp_path / "ablation"
    argv = ["ablate", str(config), "--output-dir", str(out), "--quiet", "--bootstrap-samples", samples]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    expected = "--bootstrap-samples must be an integer from 20 to 1,000,000 (p-values come in steps of "
    assert err == f"qe: error: {expected}1/samples; 1000 is usual), got {samples}"
    assert not out.exists() and not list(tmp_path.glob(".ablation*"))


@pytest.mark.parametrize(
    ("extra", "what"),
    [('[selection]\nname = "correlation"\nparams = { k = 2 }\n', "[selection]"), (None, "a dev split")],
)
def test_what_ablate_does_not_apply_is_refused_not_ignored(tmp_path, capsys, extra, what):
    """[selection] and a dev split were silently ignored: the ablation's 'full' system was another one."""
    config = toy_config(tmp_path)
    text = config.read_text()
    if extra is None:  # the training files serve as a dev split
        train = text[text.index("[data.train]") : text.index("[data.test]")]
        text = text.replace("[data.test]", train.replace("[data.train]", "[data.dev]") + "[data.test]")
        text = text.replace("[data]\n", "[data]\nallow_overlap = true\n", 1)
    else:
        text += extra
    config.write_text(text)
    assert main(["ablate", str(config), "--output-dir", str(tmp_path / "a"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert f"it does not apply {what}" in err and str(config) in err


def test_a_single_family_is_refused_with_nothing_written(tmp_path, capsys):
    """One family gave an ablation of 'full' alone, silently."""
    config = toy_config(tmp_path)
    text = config.read_text()
    start = text.index('features = "')  # the toy's feature tables (two headerless columns) go
    text = text.replace(text[start : text.index("\n", start) + 1], "")
    text = text.replace(
        text[text.index('features = "') : text.index("\n", text.index('features = "')) + 1], ""
    )
    config.write_text(text.replace("families = []", 'families = ["surface"]'))
    out = tmp_path / "a"
    assert main(["ablate", str(config), "--output-dir", str(out), "--quiet"]) == 2
    assert "nothing to ablate: every feature belongs to one family (surface)" in capsys.readouterr().err
    assert not out.exists() and not list(tmp_path.glob(".a.*"))


def test_every_system_keeps_the_signature_qe_run_writes_with_its_variant(tmp_path):
    """An ablation row carried no signature: nothing told which data, features or learner gave it."""
    config = toy_config(tmp_path)
    assert main(["run", str(config), "--output-dir", str(tmp_path / "run"), "--quiet"]) == 0
    run_signature = (tmp_path / "run" / "signature.txt").read_text().strip()
    out = tmp_path / "ablation"
    assert (
        main(["ablate", str(config), "--output-dir", str(out), "--quiet", "--bootstrap-samples", "20"]) == 0
    )
    systems = json.loads((out / "ablation.json").read_text())["systems"]
    # the full system is the run: the same data, tables, features and chosen learner
    assert systems["full"]["signature"] == run_signature.replace("|features:|", "|features:|variant:full|")
    for name, system in systems.items():
        parts = system["signature"].split("|")
        assert parts[parts.index("features:") + 1] == f"variant:{name}"
        learner = next(p for p in parts if p.startswith("learner:SVR(C="))
        chosen = system["cv"]["grid_best_params"]["C"]
        assert learner == f"learner:SVR(C={chosen:g};scaled=True)", (name, learner)
        others = [p for p in parts if not p.startswith(("variant:", "learner:"))]
        assert others == [p for p in run_signature.split("|") if not p.startswith("learner:")]


def test_systems_fits_the_named_variants_and_the_full_one_with_the_same_numbers(tmp_path, capsys):
    config = toy_config(tmp_path)
    whole, some = tmp_path / "whole", tmp_path / "some"
    samples = ["--quiet", "--bootstrap-samples", "50"]
    assert main(["ablate", str(config), "--output-dir", str(whole), *samples]) == 0
    assert main(["ablate", str(config), "--output-dir", str(some), *samples, "--systems", "only:f2"]) == 0
    every = json.loads((whole / "ablation.json").read_text())["systems"]
    chosen = json.loads((some / "ablation.json").read_text())["systems"]
    assert list(chosen) == ["full", "only:f2"]
    for name in chosen:
        assert chosen[name] == every[name]
    capsys.readouterr()
    argv = ["ablate", str(config), "--output-dir", str(tmp_path / "x"), *samples, "--systems", "only:f3"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith(
        "--systems: no system 'only:f3' in this ablation (systems: full, without:f1, only:f1, "
        "without:f2, only:f2)"
    ), err
    assert not (tmp_path / "x").exists()
