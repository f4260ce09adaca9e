"""Tokenization styles, casing, caching and the agreement of the wmt12 style with the official counts."""

from __future__ import annotations

import numpy as np
import pytest

from qe.infra.errors import QEInputError
from qe.text.processing import TextConfig, TextProcessor, corpus_key, tokenize_corpus


def tok(sentence: str, lang: str = "en", **kw) -> list[str]:
    return TextProcessor(TextConfig(lang, **kw)).tokenize(sentence)


def test_moses_basics_by_hand():
    assert tok("Hello, world!", style="moses") == ["hello", ",", "world", "!"]
    assert tok("It's 5,300 dollars.", style="moses") == ["it", "'s", "5,300", "dollars", "."]
    # No XML escaping of quotes and ampersands (escape=False).
    assert tok('He said "A & B".', style="moses") == ["he", "said", '"', "a", "&", "b", '"', "."]


def test_hyphen_styles():
    assert tok("an extra-league game", style="moses") == ["an", "extra-league", "game"]
    assert tok("an extra-league game", style="moses-aggressive") == ["an", "extra", "@-@", "league", "game"]
    # wmt12: before an upper-case letter the hyphen is its own token, before a lower-case one it
    # stays on the left piece; before a digit nothing is split.
    assert tok("the pre-Budget report", style="wmt12") == ["the", "pre", "-", "budget", "report"]
    assert tok("an extra-league game", style="wmt12") == ["an", "extra-", "league", "game"]
    assert tok("a ninety-one-year-old man", style="wmt12") == ["a", "ninety-", "one-", "year-", "old", "man"]
    assert tok("won 3-1 today", style="wmt12") == ["won", "3-1", "today"]


def test_wmt12_quotes_and_backticks():
    # Quotes at the very start and end are split as Moses does on its space-padded line.
    assert tok("'Blown opportunity'") == ["'", "blown", "opportunity", "'"]
    assert tok("`Italian Weekend'") == ["`", "italian", "weekend", "'"]
    # Clitics stay attached in English.
    assert tok("It's fine") == ["it", "'s", "fine"]


def test_case_options():
    assert tok("The UN", case="keep") == ["The", "UN"]
    assert tok("The UN", case="lower") == ["the", "un"]


def test_truecase_with_a_small_model(tmp_path):
    model = tmp_path / "truecase-model.en"
    model.write_text("the (9/10) The (1)\nparis (5/5)\nParis (7/7)\n", encoding="utf-8")
    # The most frequent casing wins: "the", and "Paris" (7) over "paris" (5).
    assert tok("THE paris", case="truecase", truecase_model=str(model)) == ["the", "Paris"]


def test_truecase_needs_a_model(tmp_path):
    with pytest.raises(QEInputError, match="truecase_model"):
        TextConfig("en", case="truecase")
    missing = tmp_path / "nope.en"
    processor = TextProcessor(TextConfig("en", case="truecase", truecase_model=str(missing)))
    with pytest.raises(QEInputError, match=r"nope\.en"):
        processor.tokenize("hello")


def test_bad_config_values():
    with pytest.raises(QEInputError, match="style"):
        TextConfig("en", style="nltk")
    with pytest.raises(QEInputError, match="case"):
        TextConfig("en", case="upper")
    with pytest.raises(QEInputError, match="unknown key"):
        TextConfig.from_dict({"lang": "en", "escape": True})


def test_empty_one_token_and_long_sentences():
    assert tok("") == []
    assert tok("   \t ") == []
    assert tok("Hello") == ["hello"]
    long = " ".join(["word"] * 999) + " ."
    assert len(tok(long)) == 1000


def test_signature_changes_with_every_setting():
    base = TextConfig("en")
    variants = [
        TextConfig("es"),
        TextConfig("en", style="moses"),
        TextConfig("en", case="keep"),
        TextConfig("en", normalize=True),
    ]
    assert len({base.signature(), *(v.signature() for v in variants)}) == 5


def test_tokenize_corpus_uses_its_cache(tmp_path, monkeypatch):
    config = TextConfig("en")
    sentences = ["Hello, world!", "", "Bye."]
    first = tokenize_corpus(sentences, config, cache_dir=tmp_path)
    assert first == [["hello", ",", "world", "!"], [], ["bye", "."]]
    assert (tmp_path / f"{corpus_key(sentences, config)}.tok").is_file()

    def fail(*args, **kwargs):
        raise AssertionError("tokenized again despite the cache")

    monkeypatch.setattr(TextProcessor, "tokenize_many", fail)
    assert tokenize_corpus(sentences, config, cache_dir=tmp_path) == first
    # Another config is another cache entry.
    assert corpus_key(sentences, TextConfig("en", case="keep")) != corpus_key(sentences, config)


def test_parallel_tokenization_equals_serial():
    sentences = [f"Sentence number {i}, with a pre-Budget hyphen." for i in range(2500)]
    config = TextConfig("en")
    serial = TextProcessor(config).tokenize_many(sentences)
    parallel = TextProcessor(config).tokenize_many(sentences, n_jobs=2)
    assert parallel == serial


@pytest.mark.data
def test_wmt12_style_matches_official_token_counts(data_dir):
    """Official features 1 and 2 are the 2012 pipeline's token counts: we match >= 99 % of rows."""
    root = data_dir / "wmt12-qe"
    src, tgt, official = [], [], []
    for folder, name in (("training_set", "training"), ("test_set", "test")):
        src += (root / folder / "source.eng").read_text(encoding="utf-8").splitlines()
        tgt += (root / folder / "target_system.spa").read_text(encoding="utf-8").splitlines()
        path = root / "baseline_features" / f"{name}.qe.baseline.tsv"
        official.append(np.loadtxt(path, delimiter="\t", usecols=(0, 1)))
    counts = np.vstack(official)
    n_src = np.array([len(t) for t in TextProcessor(TextConfig("en")).tokenize_many(src)])
    n_tgt = np.array([len(t) for t in TextProcessor(TextConfig("es")).tokenize_many(tgt)])
    assert (n_src == counts[:, 0]).mean() >= 0.99
    assert (n_tgt == counts[:, 1]).mean() >= 0.99


# ---------------------------------------------------------------------- languages without spaces


def test_chinese_is_segmented_into_jieba_words():
    pytest.importorskip("rjieba")
    # jieba's README gives these precise-mode segmentations (HMM on: "杭研" is a new word it finds).
    assert tok("我来到北京清华大学", "zh", style="moses") == ["我", "来到", "北京", "清华大学"]
    assert tok("他来到了网易杭研大厦。", "zh") == ["他", "来到", "了", "网易", "杭研", "大厦", "。"]
    # Latin words, numbers and punctuation inside Chinese text still go through the Moses rules.
    assert tok("他是2019年来的，Hello World!", "zh-TW", style="moses") == [
        "他", "是", "2019", "年", "来", "的", "，", "hello", "world", "!",
    ]  # fmt: skip
    assert TextConfig("zh").segmenter == "jieba"
    assert "seg=jieba@rjieba-" in TextConfig("zh").signature()
    assert tok("他来到了网易杭研大厦。", "zh", segmenter="none") == ["他来到了网易杭研大厦。"]


def test_character_tokens_keep_combining_marks():
    # Thai: U+0E34 (sara i) is a combining vowel sign and stays with its consonant.
    assert tok("กิน ok", "th", segmenter="chars", case="keep") == ["กิ", "น", "o", "k"]
    assert tok("東京タワー", "ja", segmenter="chars") == ["東", "京", "タ", "ワ", "ー"]


def test_unspaced_languages_without_a_segmenter_are_refused():
    for lang, name in (("ja", "Japanese"), ("th", "Thai"), ("km", "Khmer")):
        with pytest.raises(QEInputError, match=f'{name}.*segmenter = "chars"'):
            TextConfig(lang)
    with pytest.raises(QEInputError, match="unknown segmenter"):
        TextConfig("en", segmenter="mecab")


def test_spaced_languages_keep_their_settings_and_signatures():
    config = TextConfig("de")
    assert config.segmenter == "none" and "segmenter" not in config.to_dict()
    assert config.signature() == "tok:v1:lang=de,style=wmt12,case=lower,norm=0"
    assert TextConfig.from_dict(TextConfig("zh").to_dict()) == TextConfig("zh")
