"""Toy experiments written by the tests: labelled splits, their configs, random sentences."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import tomli_w

from tests.helpers import write_lines

EN = "the of and to in is that for it with was on are be this by have from not but which".split()  # noqa: SIM905
ES = "el la de que y en los las del se por un una con para es al lo como pero sus".split()  # noqa: SIM905


def toy_dataset(folder: Path, n: int, seed: int) -> dict[str, Path]:
    """``n`` sentence pairs whose label falls with the source length, and a 2-column feature table."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 12, n)
    src = [" ".join(["word"] * k) for k in lengths]
    mt = [" ".join(["palabra"] * (k + int(rng.integers(0, 3)))) for k in lengths]
    labels = [f"{np.clip(5 - 0.3 * k + rng.normal(0, 0.2), 1, 5):.2f}" for k in lengths]
    features = [f"{k}\t{len(m.split())}\t" for k, m in zip(lengths, mt, strict=True)]
    folder.mkdir()
    return {
        "src": write_lines(folder / "src.txt", src),
        "mt": write_lines(folder / "mt.txt", mt),
        "labels": write_lines(folder / "labels.txt", labels),
        "features": write_lines(folder / "features.tsv", features),
    }


def toy_config(tmp_path: Path, learner: str = 'name = "svr"\ngrid = { C = [1.0, 10.0] }') -> Path:
    """A run config over toy_dataset splits (80 train, 30 test rows), labels in [1, 5], 3-fold CV."""
    train = toy_dataset(tmp_path / "train", 80, 0)
    test = toy_dataset(tmp_path / "test", 30, 1)
    lines = ['name = "toy"', "[data]", "label_range = [1, 5]"]
    for split, files in (("train", train), ("test", test)):
        lines.append(f"[data.{split}]")
        lines += [f'{role} = "{path}"' for role, path in files.items()]
    lines += ["[features]", "sets = []", "families = []", "[learner]", learner, "[cv]", "folds = 3"]
    config = tmp_path / "toy.toml"
    config.write_text("\n".join(lines) + "\n")
    return config


def sentences(n: int, words: list[str], seed: int) -> list[str]:
    """``n`` random sentences of 2 to 13 of ``words``, some with a number, most with a full stop."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        tokens = list(rng.choice(words, int(rng.integers(2, 14))))
        if rng.random() < 0.3:
            tokens.append(str(int(rng.integers(0, 100))))
        out.append(" ".join(tokens).capitalize() + ("." if rng.random() < 0.8 else ""))
    return out


def pieces_experiment(tmp_path: Path, families: list[str], languages: dict[str, str], **settings) -> Path:
    """A 3-sentence experiment config asking for ``families`` in ``languages`` (for resource checks)."""
    write_lines(tmp_path / "train.src", ["a b .", "c d .", "e f ."])
    write_lines(tmp_path / "train.mt", ["g h .", "i j .", "k l ."])
    write_lines(tmp_path / "train.lab", ["0.1", "0.5", "0.3"])
    split = {"src": "train.src", "mt": "train.mt", "labels": "train.lab"}
    config = {
        "name": "pieces",
        "data": {"languages": languages, "train": split, "test": split},
        "features": {"families": families, "settings": settings},
        "learner": {"name": "mean"},
        "cv": {"folds": 2},
    }
    path = tmp_path / "exp.toml"
    path.write_text(tomli_w.dumps(config), encoding="utf-8")
    return path
