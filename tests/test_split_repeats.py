"""Repeated sentences across the splits of one QE dataset are the data, not leakage (issue 24, item 1).

A bundle built from the training split itself (a cross-fitted QE corpus and ``[edits]`` from the
same files) whose sentences the test split repeats builds, reporting the count and the share, with
no --allow-overlap; ``drop_overlap`` leaves those pairs out of every member, ``[edits]`` included.
On ba3d5b8 the build stopped with ``corpus shares 2 sentence(s) and 1 near-duplicate(s)``, and
with ``drop_overlap`` with ``[edits] src: corpus shares ...``. Resources that hold evaluation
sentences are still refused: tests/hostile/test_leaked_evaluation_data.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import tomli_w

from qe.cli import main
from qe.resources.bundle import build_bundle
from qe.resources.crossfit import MEMBER
from tests.conftest import write_lines

# A software manual's training and test splits. The test split repeats two training sources word
# for word (training lines 6 and 12 = test lines 4 and 9) and one with another number and a final
# "!" (training line 18 ~ test line 15: the same once digits and punctuation are folded).
TRAIN_SRC = [
    "Open the settings dialog from the main menu .",
    "Select the printer you want to use .",
    "The installer copies all files to the program folder .",
    "Press F5 to refresh the list of devices .",
    "Your password must contain at least eight characters .",
    "Click Save to store the document on your computer .",  # = test line 4
    "The backup runs every night at midnight .",
    "Drag the icon onto the desktop to create a shortcut .",
    "Enter the license key exactly as printed on the box .",
    "Updates are downloaded automatically in the background .",
    "Remove the cable before opening the case .",
    "Check that the network cable is connected .",  # = test line 9
    "Right-click a file to see more options .",
    "The log file grows until it reaches its size limit .",
    "Choose a language for the user interface .",
    "Old versions of the driver are no longer supported .",
    "Each user gets a private folder on the server .",
    "Restart the server after 12 minutes .",  # ~ test line 15
    "Use the search box to find a setting quickly .",
    "Exported reports open in any spreadsheet program .",
    "The trial period ends after thirty days .",
    "Disable the firewall only while testing the connection .",
    "Scanned pages are saved as PDF files .",
    "Ask your administrator to reset the account .",
]
TEST_SRC = [
    "Plug the keyboard into a free USB port .",
    "Battery status is shown in the lower corner .",
    "Uninstall the previous release before upgrading .",
    "Click Save to store the document on your computer .",
    "Mobile devices sync their calendars every hour .",
    "Printing in color needs a different cartridge .",
    "Shared folders appear under network locations .",
    "The wizard guides you through the first steps .",
    "Check that the network cable is connected .",
    "Tablets rotate the screen when turned sideways .",
    "Error messages are written to the system journal .",
    "Keyboard shortcuts are listed in the help window .",
    "Screens with high resolution may need larger fonts .",
    "Deleted mail stays in the trash for a week .",
    "Restart the server after 15 minutes!",
    "Voice commands work only with a microphone attached .",
    "A green light means the drive is ready .",
    "Encrypted archives ask for a passphrase when opened .",
    "Video calls use the camera chosen in preferences .",
    "Fonts installed later appear after a restart of the editor .",
]
REPEATED = [6, 12, 18]  # 1-based training lines repeating test sentences


def mt(src: str) -> str:
    """A stand-in translation: the words in reverse (a repeated source gets the same MT, as from one
    MT system; the near-duplicate's MT is a near-duplicate)."""
    return " ".join(reversed(src.split()))


def pe(src: str) -> str:
    """A stand-in post-edit: one word added."""
    return mt(src) + " ok"


def write_split(root: Path, split: str, sources: list[str]) -> None:
    write_lines(root / f"{split}.src", sources)
    write_lines(root / f"{split}.mt", [mt(s) for s in sources])
    write_lines(root / f"{split}.pe", [pe(s) for s in sources])
    write_lines(root / f"{split}.hter", [f"{(i % 5) / 10:.1f}" for i in range(len(sources))])


@pytest.fixture()
def data(tmp_path: Path) -> Path:
    root = tmp_path / "data"
    root.mkdir()
    write_split(root, "train", TRAIN_SRC)
    write_split(root, "test", TEST_SRC)
    return root


def split_files(split: str) -> dict[str, str]:
    return {"src": f"{split}.src", "mt": f"{split}.mt", "post_edits": f"{split}.pe"}


def bundle_config(**leakage) -> dict:
    """The natural bundle of the training split: cross-fitted n-grams of it and edit statistics of
    its post-edits, checked against the test split's files."""
    return {
        "name": "manual",
        "languages": {"src": "en", "tgt": "de"},
        "text": {"style": "moses", "case": "lower"},
        "leakage": {"eval_files": ["test.src", "test.mt", "test.pe"], **leakage},
        "corpora": {"train": {**split_files("train"), "cross_fit": 2}},
        "ngrams": {"src": {"side": "src", "max_order": 1}, "tgt": {"side": "tgt", "max_order": 1}},
        "edits": {**split_files("train"), "labels": "train.hter", "folds": 2},
    }


def write_config(tmp_path: Path, config: dict) -> Path:
    path = tmp_path / "bundle.toml"
    path.write_text(tomli_w.dumps(config), encoding="utf-8")
    return path


def build(tmp_path: Path, data: Path, config: dict, **options):
    return build_bundle(
        write_config(tmp_path, config), tmp_path / "out", data_dir=data, progress=False, **options
    )


def test_the_training_split_builds_reporting_its_repeats(tmp_path, data, capsys):
    path = write_config(tmp_path, bundle_config())
    argv = ["resources", "build", str(path), "--data-dir", str(data), "--output", str(tmp_path / "b")]
    assert main([*argv, "--quiet"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("the training split ([corpora.train], [edits]) repeats evaluation sentences")
    # 3 of the 24 training lines repeat 3 of the 20 test lines, on each side of the pairs
    assert out[1:4] == [
        f"  {side} train.{ext}: 3 of 24 lines (12.50%; 2 same, 1 near-duplicate(s)) repeat 3 of the 20 "
        f"sentences of test.{ext} (15.0%)"
        for side, ext in (("src", "src"), ("mt", "mt"), ("post_edits", "pe"))
    ]
    leakage = json.loads((tmp_path / "b" / "manifest.json").read_text())["leakage"]
    assert leakage["overlaps"] == [] and leakage["dropped"] == {} and leakage["allowed"] is False
    [src, _, _] = leakage["repeats"]
    assert (src["first_lines"], src["eval_share"], src["dropped"]) == (REPEATED, 0.15, False)
    assert [e["eval"] for e in src["examples"]] == [f"{data / 'test.src'}:{line}" for line in (4, 9, 15)]


def test_the_repeats_stay_in_every_member_unless_dropped(tmp_path, data):
    bundle = build(tmp_path, data, bundle_config())
    assert bundle.get("ngrams.src").count("midnight") == 1  # a training line that is not repeated
    assert bundle.get("ngrams.src").count("cable") == 2  # training lines 11 and 12 (repeated)
    edits = bundle.get("edits")
    assert edits.info["pairs"] == 24 and "left_out" not in edits.info
    assert "network" in edits.full.mt_words


def test_drop_overlap_leaves_the_repeated_pairs_out_of_every_member_edits_included(tmp_path, data, capsys):
    path = write_config(tmp_path, bundle_config(drop_overlap=True))
    argv = ["resources", "build", str(path), "--data-dir", str(data), "--output", str(tmp_path / "b")]
    assert main([*argv, "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "dropped lines shared with the evaluation data: 3 from [edits], 3 from train" in out
    assert "repeats evaluation sentences" not in out
    from qe.resources.bundle import ResourceBundle

    bundle = ResourceBundle(tmp_path / "b")
    src = bundle.get("ngrams.src")
    assert (src.count("midnight"), src.count("cable"), src.count("minutes"), src.count("save")) == (
        1,
        1,
        0,
        0,
    )
    edits = bundle.get("edits")
    assert (edits.info["pairs"], edits.info["left_out"]) == (21, 3)
    assert "network" not in edits.full.mt_words and "midnight" in edits.full.mt_words
    # the folds are still dealt over all 24 pairs: the same as the cross-fitted corpus's
    assert edits.fold_of == bundle.get(MEMBER).fold_of and len(edits.fold_of) == 24
    dropped = bundle.manifest["leakage"]["dropped"]
    assert {name: (d["lines"], d["kept"]) for name, d in dropped.items()} == {
        "train": (3, 21),
        "[edits]": (3, 21),
    }
    assert [f["first_lines"] for f in dropped["[edits]"]["files"]] == [REPEATED] * 3
    assert all(entry["dropped"] for entry in bundle.manifest["leakage"]["repeats"])


@pytest.mark.data
def test_a_registered_training_split_is_not_compared_with_its_own_files(tmp_path, data_dir):
    """WMT12's config lists the training files as evaluation files (no external corpus may hold a
    training sentence): the training split itself is only compared with the test files."""
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "wmt12-qe").symlink_to(data_dir / "wmt12-qe")
    config = {
        "languages": {"src": "en", "tgt": "es"},
        "text": {"style": "moses", "case": "lower"},
        "leakage": {"eval_files": ["wmt12-qe/training_set/source.eng", "wmt12-qe/test_set/source.eng"]},
        "corpora": {"qe": {"dataset": "wmt12-en-es", "cross_fit": 2}},
        "ngrams": {"src": {"side": "src", "max_order": 1}},
    }
    bundle = build(tmp_path, tmp_path / "data", config)
    leakage = bundle.manifest["leakage"]
    assert leakage["overlaps"] == [] and leakage["repeats"] == [] and leakage["eval_sentences"] == 2254
    assert bundle.info("ngrams.src")["folds"]
