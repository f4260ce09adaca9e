"""Ready-made models by name: one record per model qe can build from the data it already reads, and
the resolver that turns ``--model NAME|PATH`` into a model file.

A built model is two files in the models directory (``$QE_MODELS_DIR``, default ``models/``):
``NAME.skops`` (the run's model) and ``NAME.json`` (what ``qe models list`` shows: the record, the
run's test figures and signature, the model file's sha256). A name is looked up only in
:data:`CATALOG`, never joined onto a path, so no text given as a name reaches the file system.
"""

from __future__ import annotations

import argparse
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from qe.infra.errors import QEInputError

REPO = Path(__file__).resolve().parents[2]
"""The source checkout: the records' configs are its ``configs/`` files."""
DEFAULT_MODELS_DIR = Path("models")
MANIFEST_FORMAT = "qe-ready-model/1"


@dataclass(frozen=True)
class LabelKind:
    """What a model's score means, and which way is better."""

    name: str
    meaning: str
    higher_is_better: bool

    @property
    def direction(self) -> str:
        return "higher is better" if self.higher_is_better else "lower is better"


LABEL_KINDS: dict[str, LabelKind] = {
    "effort": LabelKind("WMT12 effort 1-5", "post-editing effort judged 1-5 (5: little editing)", True),
    "hter": LabelKind("HTER", "share of the MT words a post-editor changed (0: none)", False),
    "da": LabelKind("DA z-score", "direct assessment of quality, z-normalised per annotator", True),
}


@dataclass(frozen=True)
class ReadyModel:
    """One ready-made model: the experiment config and the config of the bundle it reads (relative to
    the checkout; None: no bundle) that build it, its language pair, label kind (a :data:`LABEL_KINDS`
    key), training and test data, and the test figures ``qe models list`` shows (metrics.json keys)."""

    name: str
    config: str
    bundle_config: str | None
    languages: tuple[str, str]
    label: str
    training_data: str
    test_data: str
    figures: tuple[str, ...]

    @property
    def label_kind(self) -> LabelKind:
        return LABEL_KINDS[self.label]

    @property
    def pair(self) -> str:
        return "-".join(self.languages)

    def describe(self) -> dict[str, Any]:
        """The record as a built model's manifest and ``qe models list --json`` give it."""
        kind = self.label_kind
        return {
            "name": self.name,
            "languages": {"src": self.languages[0], "tgt": self.languages[1]},
            "label": {"kind": kind.name, "meaning": kind.meaning, "higher_is_better": kind.higher_is_better},
            "training_data": self.training_data,
            "test_data": self.test_data,
        }


WMT12_FIGURES = ("MAE", "RMSE", "DeltaAvg", "Spearman")  # the official WMT12 columns
MLQE_PAIRS = ("ro-en", "et-en", "ne-en", "si-en", "ru-en", "en-de", "en-zh")  # docs/mlqe.md's table order
MLQE_LABELS = {"da": ("da", "DA"), "hter": ("pe", "post-editing")}  # name part -> config prefix, half
MULTILINGUAL = "mlqe-da-multilingual"
"""The ready model for text of any language pair, without labels (``qe init`` offers it)."""


def _catalog() -> dict[str, ReadyModel]:
    records = [
        ReadyModel(
            "wmt12-en-es",
            "configs/wmt12-best-rawtext.toml",
            "configs/resources-wmt12-en-es.toml",
            ("en", "es"),
            "effort",
            "WMT12 en-es training set (newstest2009/2010 through Moses SMT)",
            "WMT12 test (newstest2012, 422 pairs)",
            WMT12_FIGURES,
        ),
        ReadyModel(
            "wmt12-en-es-fast",
            "configs/wmt12-extracted-svr.toml",
            "configs/resources-wmt12-en-es.toml",
            ("en", "es"),
            "effort",
            "WMT12 en-es training set (newstest2009/2010 through Moses SMT)",
            "WMT12 test (newstest2012, 422 pairs)",
            WMT12_FIGURES,
        ),
    ]
    for label, (prefix, half) in MLQE_LABELS.items():
        for pair in MLQE_PAIRS:
            records.append(
                ReadyModel(
                    f"mlqe-{label}-{pair}",
                    f"configs/mlqe/{prefix}-{pair}-best.toml",
                    f"configs/mlqe/resources-{prefix}-{pair}.toml",
                    tuple(pair.split("-")),
                    label,
                    f"MLQE-PE {pair} {half} train + dev (Wikipedia through fairseq NMT)",
                    f"MLQE-PE {pair} test20 (1,000 pairs)",
                    ("Pearson", "MAE_exact"),
                )
            )
    records.append(
        ReadyModel(
            MULTILINGUAL,
            "configs/mlqe/da-multilingual.toml",
            "configs/mlqe/resources-da-pooled.toml",
            ("mul", "mul"),
            "da",
            "MLQE-PE DA train + dev of the seven pairs pooled (Wikipedia through fairseq NMT)",
            "MLQE-PE test20 of the seven pairs (7,000 pairs)",
            ("Pearson", "MAE_exact"),
        )
    )
    return {record.name: record for record in records}


CATALOG: dict[str, ReadyModel] = _catalog()
"""Every ready-made model, by name: WMT12 en-es's best raw-text system, its 17 baseline features with an
SVR (``-fast``: about 50 times less CPU per pair, for a service that must answer one pair in
milliseconds), and the best DA and HTER systems of each MLQE-PE pair (chosen on dev, fitted on train +
dev), and ``mlqe-da-multilingual``: the encoder fine-tuned on the seven pairs' DA labels pooled, for
text of any language pair without labels (``qe init`` offers it)."""


def models_dir(given: str | Path | None = None) -> Path:
    """The models directory: ``given``, else ``$QE_MODELS_DIR`` when set and not empty, else ``models``."""
    if given:
        return Path(given)
    return Path(os.environ.get("QE_MODELS_DIR") or DEFAULT_MODELS_DIR)


def model_path(name: str, folder: str | Path | None = None) -> Path:
    """Where the catalogue model ``name`` is (or will be) built; refuses any other name."""
    return models_dir(folder) / f"{record(name).name}.skops"


def manifest_path(name: str, folder: str | Path | None = None) -> Path:
    """The manifest written beside the built model ``name``."""
    return models_dir(folder) / f"{record(name).name}.json"


def unknown_name(name: str) -> QEInputError:
    """The one-line error for a name that is not in the catalogue, listing those that are."""
    shown = name if len(name) <= 80 else f"{name[:77]}..."
    return QEInputError(f"unknown model name {shown!r}; known names: {', '.join(CATALOG)}")


def record(name: str) -> ReadyModel:
    """The catalogue record of ``name``; any other text (a path, ``../x``) is an unknown name."""
    found = CATALOG.get(name) if isinstance(name, str) else None
    if found is None:
        raise unknown_name(str(name))
    return found


def find_ready(name: str, folder: str | Path | None = None) -> Path:
    """The built model file of the catalogue name ``name``; an unknown name, or a model not built
    yet, is refused in one line (saying how to build it)."""
    path = model_path(name, folder)
    if not path.is_file() or not path.with_suffix(".json").is_file():
        raise QEInputError(f"model {name!r} is not built yet: run `qe models build {name}`", path)
    return path


def model_argument(text: str, folder: str | Path | None = None) -> Path:
    """``--model NAME|PATH``: a catalogue name is its built model; text that is absolute, holds a path
    separator or a suffix, or names an existing file, is that path; any other word is an unknown name
    (a file in the working directory named like a catalogue name is given as ``./NAME``)."""
    if text in CATALOG:
        return find_ready(text, folder)
    path = Path(text)
    if path.is_absolute() or "/" in text or os.sep in text or path.suffix or path.exists():
        return path
    raise unknown_name(text)


class ModelOption(argparse.Action):
    """An argparse action for ``--model NAME|PATH`` (:func:`model_argument`): the namespace gets the
    model file's path, and a bad name stops the command with one line, exit code 2."""

    def __call__(
        self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any, option: Any = None
    ) -> None:
        try:
            setattr(namespace, self.dest, model_argument(values))
        except QEInputError as exc:
            parser.exit(2, f"qe: error: {exc}\n")


def read_manifest(name: str, folder: str | Path | None = None) -> dict[str, Any] | None:
    """The manifest of the built model ``name`` (None when it is not built); a manifest that is not
    one qe wrote is refused in one line."""
    path = manifest_path(name, folder)
    if not path.is_file() or not path.with_suffix(".skops").is_file():
        return None
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        raise QEInputError("not a ready-model manifest (unreadable JSON)", path) from None
    if not isinstance(manifest, dict) or manifest.get("format") != MANIFEST_FORMAT:
        raise QEInputError(f"not a ready-model manifest (expected the format {MANIFEST_FORMAT})", path)
    if manifest.get("name") != name:
        raise QEInputError(f"the manifest is of {manifest.get('name')!r}, not {name!r}", path)
    return manifest


def listing(folder: str | Path | None = None) -> list[dict[str, Any]]:
    """Every catalogue model as ``qe models list`` shows it: the record, whether it is built, and if
    so its training rows, test figures, signature and build time from its manifest."""
    shown = []
    for name, entry in CATALOG.items():
        manifest = read_manifest(name, folder)
        built = (
            {key: manifest[key] for key in ("training_rows", "test", "signature", "built_at")}
            if manifest
            else {}
        )
        shown.append({**entry.describe(), "built": manifest is not None, **built})
    return shown
