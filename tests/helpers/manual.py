"""A software manual's training and test splits that share sentences (tests/test_split_repeats.py and
tests/hostile/test_leaked_evaluation_data.py)."""

from __future__ import annotations

from pathlib import Path

from qe.bundle import build_bundle
from tests.helpers import write_config, write_lines

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


def bundle_toml(tmp_path: Path, config: dict) -> Path:
    """The bundle config written as tmp_path/bundle.toml."""
    return write_config(tmp_path / "bundle.toml", config)


def build(tmp_path: Path, data: Path, config: dict, **options):
    """Build ``config`` over ``data`` into tmp_path/out."""
    return build_bundle(
        bundle_toml(tmp_path, config), tmp_path / "out", data_dir=data, progress=False, **options
    )
