"""The README is a newcomer's page: at most 250 lines, its two set-up commands, links to every docs page
(every relative link of README.md and docs/*.md leads to a file). The parts written from the code and
the records stand wherever they are (README.md or a docs page; ``scripts/update_readme.py`` finds them):
the feature catalogue matches the code; the demo, MLQE-PE, WMT12, family-gain and ablation result rows
match their records (docs/*-table.json), every recorded row carries the signature of the run that
measured it, and a cheap row rebuilt from a clean cache gives its record again."""

from __future__ import annotations

import importlib.util
import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from qe.data.sets.wmt20_mlqe import MLQE_PAIRS
from qe.model.catalog import CATALOG
from qe.run.config import load_config

REPO = Path(__file__).resolve().parents[1]
README_PATH = REPO / "README.md"
README = README_PATH.read_text(encoding="utf-8")
DOC_PAGES = sorted((REPO / "docs").glob("*.md"))
MLQE = json.loads((REPO / "docs" / "mlqe-table.json").read_text(encoding="utf-8"))
WMT12 = json.loads((REPO / "docs" / "wmt12-table.json").read_text(encoding="utf-8"))
FAMILY_GAIN = json.loads((REPO / "docs" / "family-gain-table.json").read_text(encoding="utf-8"))
ABLATION = json.loads((REPO / "docs" / "ablation-table.json").read_text(encoding="utf-8"))
INIT = json.loads((REPO / "docs" / "init-table.json").read_text(encoding="utf-8"))
OFFICIAL = "wmt12-official-bf17"
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def load_script(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


UPDATE = load_script(REPO / "scripts" / "update_readme.py")


def signature_parts(signature: str) -> dict[str, str]:
    """``kind:value`` parts of a run signature by kind (the first of each kind)."""
    parts: dict[str, str] = {}
    for part in signature.split("|"):
        kind, _, value = part.partition(":")
        parts.setdefault(kind, value)
    return parts


def pages() -> dict[Path, str]:
    """README.md and every docs page, by path: where the generated parts may stand."""
    return {path: path.read_text(encoding="utf-8") for path in UPDATE.generated_files()}


def holder(part: str) -> Path:
    """The one page holding ``part``."""
    found = [path for path, text in pages().items() if part in text]
    assert len(found) == 1, (part, found)
    return found[0]


def section(text: str, name: str) -> str:
    """What stands between a generated section's markers."""
    begin, end = UPDATE.markers(name)
    return text.split(begin, 1)[1].split(end, 1)[0]


def relative_links(text: str) -> list[str]:
    """The targets of a page's markdown links and images outside code blocks, but for web addresses
    and anchors within the page."""
    prose = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    targets = [
        target
        for target in LINK.findall(prose)
        if not target.startswith(("http://", "https://", "mailto:", "#"))
    ]
    return [target.split("#", 1)[0] for target in targets]


def test_the_readme_fits_a_newcomer():
    assert len(README.splitlines()) <= 250


def test_readme_has_the_two_setup_commands():
    setup = README.split("\n## Set up\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"^```[^\n]*\n(.*?)^```", setup, flags=re.S | re.M)
    commands = [line.split("#", 1)[0].strip() for block in blocks for line in block.splitlines()]
    assert [command for command in commands if command] == ["make demo", "make test"]


def test_every_relative_link_leads_to_a_file():
    for path, text in pages().items():
        for target in relative_links(text):
            assert (path.parent / target).resolve().is_file(), (str(path.relative_to(REPO)), target)


def test_the_readme_links_every_docs_page():
    linked = {(REPO / target).resolve() for target in relative_links(README)}
    assert DOC_PAGES and [page for page in DOC_PAGES if page.resolve() not in linked] == []


def test_readme_is_what_its_sources_give():
    result = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "update_readme.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr


@pytest.mark.slow
def test_the_check_names_a_stale_docs_page(tmp_path):
    # a copy of the pages and the script, reading this checkout's code and records
    (tmp_path / "scripts").mkdir()
    shutil.copy(REPO / "scripts" / "update_readme.py", tmp_path / "scripts")
    shutil.copy(README_PATH, tmp_path / "README.md")
    shutil.copytree(REPO / "docs", tmp_path / "docs")
    for folder in ("qe", "benchmarks"):
        (tmp_path / folder).symlink_to(REPO / folder)
    holder_page = tmp_path / holder(f"| en-de | **{MLQE['en-de']['da']['pearson']:.3f}** |").relative_to(REPO)
    text = holder_page.read_text(encoding="utf-8")
    holder_page.write_text(text.replace(f"**{MLQE['en-de']['da']['pearson']:.3f}**", "**0.999**"), "utf-8")
    script = [sys.executable, str(tmp_path / "scripts" / "update_readme.py")]
    result = subprocess.run([*script, "--check"], capture_output=True, text=True)
    stale = holder_page.relative_to(tmp_path)
    assert result.returncode == 1 and result.stderr.strip().startswith(f"{stale} is stale"), result.stderr
    assert subprocess.run(script, capture_output=True, text=True).returncode == 0
    assert holder_page.read_text(encoding="utf-8") == text
    assert subprocess.run([*script, "--check"], capture_output=True, text=True).returncode == 0


def test_a_changed_number_in_a_result_table_is_put_back():
    en_de = f"| en-de | **{MLQE['en-de']['da']['pearson']:.3f}** |"
    svr = f"| **qe M5P, official 17 features** (Weka defaults, 2 linear models) | {WMT12['systems']['official-m5p']['test']['MAE']:.3f} |"  # noqa: E501
    lm = FAMILY_GAIN["families"]["lm"]["alone"]
    family = f"| `lm` alone | {lm['n_features']} | {lm['cv']['MAE']:.3f} |"
    only_lm = ABLATION["systems"]["only:lm"]
    ablation = f"| only:lm | {only_lm['n_features']} | {only_lm['cv']['MAE']:.3f} |"
    m5p = f"| **wmt12-official-m5p** | {WMT12['systems']['official-m5p']['test']['MAE']:.3f} |"
    rows = {en_de: "| en-de | **0.999** |", svr: svr[: -len("0.000 |")] + "0.111 |"}
    rows |= {family: family[: -len("0.000 |")] + "0.222 |", ablation: ablation[: -len("0.000 |")] + "0.333 |"}
    rows |= {m5p: m5p[: -len("0.000 |")] + "0.444 |"}
    init = f"| et-en HTER | {INIT['rows']['hter-et-en']['init']['pearson']:.3f} |"
    rows |= {init: init[: -len("0.000 |")] + "0.555 |"}
    texts = pages()
    tampered = dict(texts)
    for row, changed in rows.items():
        found = [path for path, text in texts.items() if row in text]
        assert len(found) == 1, (row, found)
        tampered[found[0]] = tampered[found[0]].replace(row, changed)
    # every page with a generated result table has a row changed here (the catalogue: the test below)
    results = {name for name in UPDATE.SECTIONS if name != "catalogue"}
    generated = {path for path, text in texts.items() if results & {*UPDATE.section_names(text)}}
    generated |= {path for path, text in texts.items() if UPDATE.wmt12_rows_in(text)}
    changed_pages = {path for path in texts if tampered[path] != texts[path]}
    assert generated and changed_pages >= generated, sorted(map(str, generated - changed_pages))
    for path in changed_pages:
        assert UPDATE.render(tampered[path], path) == texts[path], path


def change_last_digit(line: str) -> str:
    """``line`` with its last digit changed."""
    position = max(k for k, char in enumerate(line) if char.isdigit())
    return line[:position] + str((int(line[position]) + 1) % 10) + line[position + 1 :]


@pytest.mark.parametrize("name", sorted(UPDATE.SECTIONS))
def test_every_generated_section_is_put_back_where_it_stands(name):
    """A digit changed in the first row of each generated table, in whichever page holds it."""
    (path,) = [path for path, text in pages().items() if name in UPDATE.section_names(text)]
    text = path.read_text(encoding="utf-8")
    first_row = section(text, name).strip("\n").split("\n")[2]
    tampered = text.replace(first_row, change_last_digit(first_row), 1)
    assert tampered != text and UPDATE.render(tampered, path) == text


def test_every_wmt12_row_is_put_back_where_it_stands():
    for _, label, _ in UPDATE.WMT12_ROWS:
        rows = [
            line for text in pages().values() for line in text.split("\n") if line.startswith(f"| {label} |")
        ]
        assert len(rows) == 1, label
        path = holder(rows[0])
        text = path.read_text(encoding="utf-8")
        tampered = text.replace(rows[0], change_last_digit(rows[0]))
        assert tampered != text and UPDATE.render(tampered, path) == text, label


def demo_target() -> list[list[str]]:
    """The commands of the Makefile's ``demo`` target, split into words."""
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    recipe = makefile.split("\ndemo:", 1)[1].split("\n\n", 1)[0].split("\n")[1:]
    return [shlex.split(line.strip().lstrip("@")) for line in recipe]


def test_the_demo_table_shows_the_runs_the_demo_compares():
    """The README's demo rows: the runs ``make demo`` hands to ``qe compare``, in its order, each with
    the config it was run from (``qe run`` or a ready-made model's record) and that config's record."""
    commands = demo_target()
    (compare,) = [words for words in commands if words[1:2] == ["compare"]]
    names = [Path(run).name for run in compare[2:]]
    assert names == [name for name, _ in UPDATE.DEMO_RUNS]
    configs = {}
    for words in commands:
        if words[1:2] == ["run"]:
            configs[Path(words[words.index("--output-dir") + 1]).name] = words[2]
        if words[1:3] == ["models", "build"]:
            configs[words[3]] = CATALOG[words[3]].config
    recorded = {system["config"] for system in WMT12["systems"].values()}
    for name, config in UPDATE.DEMO_RUNS:
        assert configs[name] == config and config in recorded, name
    rows = section(README, "demo-table").strip("\n").split("\n")[2:]
    assert [row.split(" | ")[0] for row in rows[: len(names)]] == [f"| **{name}**" for name in names]


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


def test_every_wmt12_row_carries_the_signature_of_its_config():
    for system, _, _ in UPDATE.WMT12_ROWS:
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
CROSS_SYSTEMS = ("best", "crossencoder", "crossstacked", "crosspooled", "crosszeroshot")  # issue 34's


def check_step_row(row: dict, label: str, pair: str, system: str) -> None:
    """A steps row carries the signature of its system's config for ``pair`` (data, families, resources,
    seed); a zero-shot system's data never holds the pair, every other system's does."""
    prefix = {"da": "da", "hter": "pe"}[label]
    pooled = system in ("pooled", "crosspooled")
    name = f"{prefix}-{system}" if pooled else f"{prefix}-{pair}-{system}"
    config = load_config(REPO / "configs" / "mlqe" / f"{name}.toml")
    parts = signature_parts(row["signature"])
    datasets = "+".join(config.data.datasets or (config.data.dataset,))
    assert parts["data"].startswith(f"{datasets}@"), (name, parts["data"])
    assert (f"/{pair}" in datasets) == ("zeroshot" not in system), name  # zero-shot: never its pair
    assert parts["features"] == "+".join(config.features.families), name
    assert parts["resources"].startswith(f"{Path(config.features.resources).name}@"), name
    assert parts["seed"] == str(config.seed), name


def test_every_steps_row_is_there_and_carries_the_signature_of_its_config():
    """Issue 23's steps table (docs/mlqe-steps-<label>.json): every system of the protocol on every
    pair, each measured with its own config."""
    for path in UPDATE.MLQE_STEPS_TABLES:
        table = json.loads(path.read_text(encoding="utf-8"))
        label = path.stem.removeprefix("mlqe-steps-")
        for system in STEP_SYSTEMS[label]:
            for pair in MLQE_PAIRS:
                row = (table[pair] if system == "best" else table[system][pair])[label]
                check_step_row(row, label, pair, system)


def test_every_cross_encoder_steps_row_carries_the_signature_of_its_config():
    """Issue 34's steps table (docs/mlqe-cross-run-<label>.json, one run): each row measured with its
    own config; the DA pairs' own steps are all there."""
    for path in UPDATE.MLQE_CROSS_TABLES:
        table = json.loads(path.read_text(encoding="utf-8"))
        label = path.stem.removeprefix("mlqe-cross-run-")
        found = set()
        for system in CROSS_SYSTEMS:
            for pair in MLQE_PAIRS:
                row = (table.get(pair, {}) if system == "best" else table.get(system, {}).get(pair, {})).get(
                    label
                )
                if row is not None:
                    check_step_row(row, label, pair, system)
                    found.add((system, pair))
        if label == "da":
            assert {(s, p) for s in CROSS_SYSTEMS[:3] for p in MLQE_PAIRS} <= found
