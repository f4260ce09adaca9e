"""Small word-level sets: written as letters (each row src, mt, MT tags, gap tags, source tags, one
letter a tag, ``B`` for BAD and ``G`` for OK), and random toy sets with a planted BAD signal."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from qe.words.files import WordLevelData

B, G = "BAD", "OK"


def lettered(rows: list[tuple[str, str, str, str, str]]) -> WordLevelData:
    """A tagged :class:`WordLevelData` from rows of (src, mt, MT tags, gap tags, source tags)."""
    tag = {"B": B, "G": G}
    return WordLevelData(
        src=[r[0].split() for r in rows],
        mt=[r[1].split() for r in rows],
        mt_tags=[tuple(tag[c] for c in r[2]) for r in rows],
        gap_tags=[tuple(tag[c] for c in r[3]) for r in rows],
        src_tags=[tuple(tag[c] for c in r[4]) for r in rows],
    )


def predict_words_args(model: Path, src: Path, mt: Path, out: Path | None = None) -> list[str]:
    """``qe predict --words`` arguments (for ``qe.cli.main``), writing to ``out`` when given."""
    args = ["predict", "--words", "--model", str(model), "--src", str(src), "--mt", str(mt)]
    return [*args, "--out", str(out)] if out is not None else args


def toy_word_files(folder: Path, split: str, n: int, seed: int) -> dict[str, Path]:
    """A seeded toy word-level split written as ``<split>.<role>`` files in ``folder``: source words
    ``sK`` translated word for word as ``tK``, a quarter of them wrongly as ``wK`` (MT word and its
    source word BAD); the post-edit puts ``tK`` back and sometimes inserts ``ins`` (that gap BAD), only
    between two right words, so the post-edit has one cheapest alignment to the MT and the tags written
    are the ones ``qe.words.derive`` must derive from it (alignments ``i-i``). Roles: src, mt, pe, tags,
    source_tags, alignments."""
    import random

    rng = random.Random(seed)
    rows: dict[str, list[str]] = {
        role: [] for role in ("src", "mt", "pe", "tags", "source_tags", "alignments")
    }
    for _ in range(n):
        words = [rng.randrange(12) for _ in range(rng.randint(3, 7))]
        wrong = [rng.random() < 0.25 for _ in words]
        padded = [False, *wrong, False]  # the gap g lies between words g - 1 and g
        free = [not (padded[g] or padded[g + 1]) for g in range(len(words) + 1)]
        inserted = [ok and rng.random() < 0.15 for ok in free]
        pe, tags = [], []
        for g, gap_bad in enumerate(inserted):
            pe += ["ins"] if gap_bad else []
            tags.append(B if gap_bad else G)
            if g < len(words):
                pe.append(f"t{words[g]}")
                tags.append(B if wrong[g] else G)
        rows["src"].append(" ".join(f"s{k}" for k in words))
        rows["mt"].append(" ".join(f"w{k}" if bad else f"t{k}" for k, bad in zip(words, wrong, strict=True)))
        rows["pe"].append(" ".join(pe))
        rows["tags"].append(" ".join(tags))
        rows["source_tags"].append(" ".join(B if bad else G for bad in wrong))
        rows["alignments"].append(" ".join(f"{i}-{i}" for i in range(len(words))))
    written = {}
    for role, lines in rows.items():
        written[role] = folder / f"{split}.{role}"
        written[role].write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return written


def toy_word_config(folder: Path, families: str, extra: str = "", aligned: tuple[str, ...] = ()) -> Path:
    """``folder/own.toml``, a word-level config on toy train (80) and dev (30) files written beside it
    (:func:`toy_word_files`): a small tagger, ``families`` (TOML text) and ``extra`` lines in ``[words]``,
    and the splits in ``aligned`` listing their alignments."""
    for split, n, seed in (("train", 80, 0), ("dev", 30, 1)):
        toy_word_files(folder, split, n, seed)
    config = folder / "own.toml"
    config.write_text(
        f"[words]\nmax_iter = 10\nmin_samples_leaf = 5\nfamilies = {families}\n{extra}"
        + "".join(
            f'[words.{s}]\nsrc = "{s}.src"\nmt = "{s}.mt"\ntags = "{s}.tags"\n'
            f'source_tags = "{s}.source_tags"\n'
            + (f'alignments = "{s}.alignments"\n' if s in aligned else "")
            for s in ("train", "dev")
        )
    )
    return config


WORDS = [
    "the",
    "a",
    "house",
    "cat",
    "dog",
    "red",
    "blue",
    "runs",
    "sleeps",
    ",",
    ".",
    "big",
    "small",
    "old",
    "new",
]


def toy(n: int, seed: int) -> WordLevelData:
    """``n`` random sentences whose words "red" and "old" are BAD (and the gaps before them)."""
    rng = np.random.default_rng(seed)
    src, mt, mt_tags, gap_tags, src_tags = [], [], [], [], []
    for _ in range(n):
        s = [str(w) for w in rng.choice(WORDS, rng.integers(3, 9))]
        m = [w.upper() if w in ("house", "cat") else w for w in s]
        bad = ["BAD" if w in ("red", "old") else "OK" for w in m]
        src.append(s)
        mt.append(m)
        mt_tags.append(tuple(bad))
        gap_tags.append(tuple(["OK", *bad]))
        src_tags.append(tuple(bad))
    return WordLevelData(src, mt, mt_tags, gap_tags, src_tags)
