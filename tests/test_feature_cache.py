"""The per-family parquet feature cache: hits, everything that must invalidate it, and timings."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest

from qe.features.base import FeatureFamily, FeatureSpec, Pairs, Setting, number
from qe.features.cache import default_cache_dir, extract_cached
from qe.infra.errors import QEInputError

pytest.importorskip("pyarrow", reason="pyarrow (the 'parquet' extra) is needed for the feature cache")

IDS = ["a", "b", "c"]
SRC = ["one two", "three", ""]
MT = ["uno dos tres", "", "x"]


class CountingFamily(FeatureFamily):
    """Source characters and ``factor`` x MT characters; counts its extract calls."""

    name = "counting"
    setting_specs: ClassVar[dict[str, Setting]] = {
        "factor": number(1.0, "multiplies the MT characters", 0.0, 10.0)
    }

    def __init__(self, **settings: Any) -> None:
        super().__init__(**settings)
        self.calls = 0
        self.bound_to: Any = None

    def bind(self, resources: Any) -> CountingFamily:
        self.bound_to = resources
        return self

    def specs(self) -> list[FeatureSpec]:
        return [
            FeatureSpec("src_chars", "source characters"),
            FeatureSpec("mt_chars", "factor x MT characters"),
        ]

    def extract(self, batch: Pairs, resources: Any = None) -> np.ndarray:
        self.calls += 1
        factor = float(self.settings["factor"])
        return np.array(
            [[len(s), factor * len(t)] for s, t in zip(batch.src, batch.mt, strict=True)], dtype=float
        )


class OtherFamily(CountingFamily):
    name = "other"


class Bundle:
    """Just enough of a resource bundle: a signature."""

    def __init__(self, signature: str) -> None:
        self._signature = signature

    def signature(self) -> str:
        return self._signature


def test_second_call_is_a_hit(tmp_path: Path) -> None:
    family = CountingFamily()
    table, timings = extract_cached(
        [family], Pairs.of(SRC, MT, ids=IDS), Bundle("b@1"), tmp_path, dataset="toy", progress=False
    )
    assert list(table.columns) == ["counting.src_chars", "counting.mt_chars"]
    assert table.to_numpy().tolist() == [[7, 12], [5, 0], [0, 1]]
    assert family.calls == 1 and table.attrs["cache_hits"] == []
    files = list((tmp_path / "counting").glob("toy-*.parquet"))
    assert len(files) == 1
    again, timings2 = extract_cached(
        [family], Pairs.of(SRC, MT, ids=IDS), Bundle("b@1"), tmp_path, dataset="toy", progress=False
    )
    assert family.calls == 1 and again.attrs["cache_hits"] == ["counting"]
    assert again.equals(table)
    assert timings2 == timings and set(timings) == {"counting"}  # a hit reports the stored seconds
    assert family.bound_to.signature() == "b@1"


@pytest.mark.parametrize(
    "change",
    ["settings", "sentences", "ids", "bundle"],
)
def test_changes_invalidate(tmp_path: Path, change: str) -> None:
    extract_cached([CountingFamily()], Pairs.of(SRC, MT, ids=IDS), Bundle("b@1"), tmp_path, progress=False)
    family = CountingFamily(factor=2.0) if change == "settings" else CountingFamily()
    src = [*SRC[:2], "changed"] if change == "sentences" else SRC
    ids = ["a", "b", "z"] if change == "ids" else IDS
    bundle = Bundle("b@2") if change == "bundle" else Bundle("b@1")
    table, _ = extract_cached([family], Pairs.of(src, MT, ids=ids), bundle, tmp_path, progress=False)
    assert family.calls == 1 and table.attrs["cache_hits"] == []
    if change == "settings":
        assert table["counting.mt_chars"].tolist() == [24, 0, 2]
    if change == "sentences":
        assert table["counting.src_chars"].tolist() == [7, 5, 7]


def test_families_are_cached_separately(tmp_path: Path) -> None:
    first = CountingFamily()
    extract_cached([first], Pairs.of(SRC, MT, ids=IDS), None, tmp_path, progress=False)
    counting, other = CountingFamily(), OtherFamily(factor=3.0)
    table, timings = extract_cached(
        [counting, other], Pairs.of(SRC, MT, ids=IDS), None, tmp_path, progress=False
    )
    assert list(table.columns) == [
        "counting.src_chars",
        "counting.mt_chars",
        "other.src_chars",
        "other.mt_chars",
    ]
    assert (counting.calls, other.calls) == (0, 1)
    assert table["other.mt_chars"].tolist() == [36, 0, 3]
    assert table.attrs["cache_hits"] == ["counting"] and set(timings) == {"counting", "other"}


def test_refresh_no_cache_and_corrupt_files(tmp_path: Path) -> None:
    family = CountingFamily()
    extract_cached([family], Pairs.of(SRC, MT, ids=IDS), None, tmp_path, progress=False)
    extract_cached([family], Pairs.of(SRC, MT, ids=IDS), None, tmp_path, progress=False, refresh=True)
    assert family.calls == 2
    (path,) = (tmp_path / "counting").glob("*.parquet")
    path.write_bytes(b"not parquet")
    table, _ = extract_cached([family], Pairs.of(SRC, MT, ids=IDS), None, tmp_path, progress=False)
    assert family.calls == 3 and table.attrs["cache_hits"] == []
    assert table.to_numpy().tolist() == [[7, 12], [5, 0], [0, 1]]
    elsewhere = tmp_path / "unused"
    extract_cached([family], Pairs.of(SRC, MT, ids=IDS), None, elsewhere, progress=False, use_cache=False)
    assert family.calls == 4 and not elsewhere.exists()


def test_default_directory_and_bad_input(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QE_CACHE_DIR", str(tmp_path))
    assert default_cache_dir() == tmp_path / "features"
    extract_cached([CountingFamily()], Pairs.of(SRC, MT, ids=IDS), progress=False)
    assert len(list((tmp_path / "features" / "counting").glob("data-*.parquet"))) == 1
    with pytest.raises(QEInputError, match="listed twice"):
        extract_cached([CountingFamily(), CountingFamily()], Pairs.of(SRC, MT, ids=IDS), progress=False)
    with pytest.raises(QEInputError, match="2 source sentences"):
        extract_cached([CountingFamily()], Pairs.of(SRC[:2], MT, ids=IDS), progress=False)


def test_empty_dataset(tmp_path: Path) -> None:
    table, timings = extract_cached(
        [CountingFamily()], Pairs.of([], [], ids=[]), None, tmp_path, progress=False
    )
    assert table.shape == (0, 2) and set(timings) == {"counting"}
