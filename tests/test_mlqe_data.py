"""MLQE-PE: the 14 registered datasets, how their two halves align, and bad input around them."""

from __future__ import annotations

import hashlib
import json
import shutil
import unicodedata

import numpy as np
import pytest
from scipy import stats

from qe.cli import main
from qe.data import DATASETS, load_registered, read_da_table
from qe.data.sets.wmt20_mlqe import MLQE_PAIRS
from qe.features.base import Pairs
from qe.features.extractor import extract_features
from qe.features.registry import make_families
from qe.infra.errors import QEInputError
from tests.helpers import write_lines

SPLITS = {"train": 7000, "dev": 1000, "test20": 1000}
# Pearson of the mean token log-probability (with </s>) with z_mean on test20 (issue 14)
MEAN_LOGPROB_PEARSON = {
    "ro-en": 0.647,
    "et-en": 0.486,
    "ne-en": 0.532,
    "si-en": 0.444,
    "ru-en": 0.536,
    "en-de": 0.208,
    "en-zh": 0.257,
}


@pytest.fixture(scope="module")
def mlqe_dir(data_dir):
    if not (data_dir / "mlqe-pe").is_dir():
        pytest.skip("the shared data directory has no mlqe-pe folder")
    return data_dir


def test_every_pair_is_registered_for_both_labels():
    for pair in MLQE_PAIRS:
        src, tgt = pair.split("-")
        hter, da = DATASETS[f"mlqe-pe/{pair}"], DATASETS[f"mlqe-da/{pair}"]
        assert hter.languages == da.languages == (src, tgt)
        assert hter.label_range == (0.0, 1.0)
        assert da.label_range is None  # z-scores: unbounded, not checked, predictions not clipped
        for dataset in (hter, da):
            assert list(dataset.splits) == ["train", "dev", "test20"]
            assert dataset.split_name("test") == dataset.test_split == "test20"
            assert {"post_edits", "nmt_logprobs", "nmt_tokens", "da_table"} <= set(dataset.splits["dev"])
    with pytest.raises(
        QEInputError, match=r"no split 'test21' \(known: train, dev, test20, test \(= test20\)\)"
    ):
        DATASETS["mlqe-da/en-de"].split_name("test21")
    assert DATASETS["wmt12-en-es"].split_name("test") == "test"


@pytest.mark.data
def test_registered_checksums_match_the_files(mlqe_dir):
    checked = 0
    for name in (f"mlqe-pe/{p}" for p in MLQE_PAIRS):
        for files in DATASETS[name].splits.values():
            for entry in files.values():
                path = mlqe_dir / "mlqe-pe" / entry.path
                assert hashlib.sha256(path.read_bytes()).hexdigest() == entry.sha256, path
                checked += 1
    assert (
        checked == 7 * 3 * 10
    )  # src, mt, hter, pe, DA table, word-probas, NMT output, tags, source tags, alignments


@pytest.mark.data
@pytest.mark.parametrize("pair", MLQE_PAIRS)
def test_both_halves_load_and_align(mlqe_dir, pair):
    for split, size in SPLITS.items():
        hter = load_registered(f"mlqe-pe/{pair}", split, mlqe_dir)
        da = load_registered(f"mlqe-da/{pair}", split, mlqe_dir)
        assert len(hter) == len(da) == size
        assert hter.labels.min() >= 0 and hter.labels.max() <= 1
        assert da.post_edits == hter.post_edits
        # The DA half is the detokenised text of the post-editing half, row by row (the ne-en and
        # si-en sources also differ in quotes, dashes, ellipses and zero-width joiners).
        assert _normalised(da.mt) == _normalised(hter.mt)
        assert _normalised(da.src) == _normalised(hter.src)
        assert da.inputs == hter.inputs
        # one log-probability per subword token plus </s>, on every line
        for logprobs, tokens in zip(da.inputs["nmt_logprobs"], da.inputs["nmt_tokens"], strict=True):
            assert len(logprobs.split()) == len(tokens.split()) + 1
    assert load_registered(f"mlqe-da/{pair}", "test", mlqe_dir).name == f"mlqe-da/{pair}/test20"


def _normalised(lines: list[str]) -> list[str]:
    """Only the letters and digits of each line (after NFKC): tokenisation, quotes, dashes and
    combining marks aside, the two halves must hold the same text in the same rows."""
    return [
        "".join(c for c in unicodedata.normalize("NFKC", line) if unicodedata.category(c)[0] in "LN")
        for line in lines
    ]


@pytest.mark.data
def test_mean_token_logprob_reproduces_the_issue_correlations(mlqe_dir):
    family = make_families(["nmt"], {"nmt": {"model_score": False}})
    for pair, expected in MEAN_LOGPROB_PEARSON.items():
        test = load_registered(f"mlqe-da/{pair}", "test", mlqe_dir)
        table = extract_features(
            family, Pairs.of(test.src, test.mt, extra=test.inputs, ids=test.ids), progress=False
        )
        r = stats.pearsonr(table["nmt.lp_mean"], test.labels).statistic
        assert round(r, 3) == expected, pair
        # the same mean computed straight from the word-probas file
        by_hand = [np.mean([float(v) for v in line.split()]) for line in test.inputs["nmt_logprobs"]]
        np.testing.assert_allclose(table["nmt.lp_mean"], by_hand)


@pytest.mark.data
def test_a_config_just_names_the_family(mlqe_dir, tmp_path, capsys):
    config = tmp_path / "c.toml"
    config.write_text(
        '[data]\ndataset = "mlqe-da/ro-en"\ntrain_split = "dev"\n[features]\nfamilies = ["nmt"]\n'
        '[learner]\nname = "svr"\n[learner.params]\nC = 1.0\n[cv]\nfolds = 3\n'
    )
    out = tmp_path / "run"
    assert main(["run", str(config), "--output-dir", str(out), "--data-dir", str(mlqe_dir), "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert "| system | MAE | RMSE | DeltaAvg | Spearman | Pearson |" in printed
    assert "published" not in printed  # the WMT12 table belongs beside WMT12 only
    assert "data:mlqe-da/ro-en@" in (out / "signature.txt").read_text()


# ---------------------------------------------------------------------------------------- bad input

HEADER = "index\toriginal\ttranslation\tscores\tmean\tz_scores\tz_mean\tmodel_scores"


def test_a_quoted_tab_in_a_da_table_is_refused_naming_the_line(tmp_path):
    rows = [
        HEADER,
        '0\tA "quoted" word.\tEin "zitiertes" Wort.\t[90]\t90.0\t[0.5]\t0.5\t-0.2',
        '1\tTabs "in\tquotes".\tTabs "in\tAnführungszeichen".\t[80]\t80.0\t[0.1]\t0.1\t-0.3',
    ]
    path = write_lines(tmp_path / "dev.ende.df.short.tsv", rows)
    with pytest.raises(
        QEInputError, match="expected 8 tab-separated fields, found 10; a field holds a tab"
    ) as info:
        read_da_table(path)
    assert info.value.line == 3
    table = read_da_table(write_lines(tmp_path / "ok.tsv", rows[:2]))  # quotes alone are plain text
    assert table.texts("translation") == ['Ein "zitiertes" Wort.'] and table.numbers("z_mean").tolist() == [
        0.5
    ]


def test_da_table_header_and_values_are_checked(tmp_path):
    with pytest.raises(QEInputError, match="the header lacks z_mean") as info:
        read_da_table(
            write_lines(tmp_path / "a.tsv", ["index\toriginal\ttranslation\tmodel_scores", "0\ta\tb\t-1"])
        )
    assert info.value.line == 1
    bad = write_lines(tmp_path / "b.tsv", [HEADER, "0\ta\tb\t[1]\t1\t[1]\tn/a\t-1"])
    with pytest.raises(QEInputError, match="label 'n/a' is not a number") as info:
        read_da_table(bad).numbers("z_mean")
    assert info.value.line == 2
    empty = write_lines(tmp_path / "c.tsv", [HEADER, "0\ta\t \t[1]\t1\t[1]\t1\t-1"])
    with pytest.raises(QEInputError, match="empty 'translation'"):
        read_da_table(empty).texts("translation")


def own_files(tmp_path, labels: list[str], dev: list[tuple[str, str]] | None = None):
    """A tiny dataset of files, a config over it; ``dev`` pairs become a [data.dev] split."""
    src = [f"sentence {i}" for i in range(8)]
    mt = [f"Satz {i}" for i in range(8)]
    write_lines(tmp_path / "src", src)
    write_lines(tmp_path / "mt", mt)
    write_lines(tmp_path / "labels", labels)
    text = 'src = "src"\nmt = "mt"\nlabels = "labels"\n'
    config = f"[data]\nlabel_range = [0, 1]\n[data.train]\n{text}[data.test]\n{text}"
    if dev is not None:
        write_lines(tmp_path / "dev.src", [s for s, _ in dev])
        write_lines(tmp_path / "dev.mt", [t for _, t in dev])
        write_lines(tmp_path / "dev.labels", ["0.5"] * len(dev))
        config += '[data.dev]\nsrc = "dev.src"\nmt = "dev.mt"\nlabels = "dev.labels"\n'
    config += '[features]\nfamilies = ["surface"]\n[learner]\nname = "mean"\n[cv]\nfolds = 4\n'
    (tmp_path / "c.toml").write_text(config)
    return tmp_path / "c.toml"


def test_labels_on_another_scale_than_declared_are_refused(tmp_path, capsys):
    # DA means (0-100) where HTER (declared [0, 1]) was expected
    config = own_files(tmp_path, ["0.1", "0.3", "72.5", "0.2", "0.0", "1.0", "0.4", "0.6"])
    assert main(["run", str(config), "--output-dir", str(tmp_path / "run"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"qe: error: {tmp_path / 'labels'}:3: label 72.5 is outside the declared range [0, 1]"


def test_a_dev_split_repeating_many_training_pairs_is_refused(tmp_path, capsys):
    labels = ["0.1", "0.3", "0.5", "0.2", "0.0", "1.0", "0.4", "0.6"]
    dev = [("new one", "neu eins"), ("sentence 5", "Satz 5"), ("sentence 6", "Satz 6"), ("x", "y")]
    config = own_files(tmp_path, labels, dev)
    assert main(["run", str(config), "--output-dir", str(tmp_path / "run"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    expected = "the dev split shares 2 of its 4 sentence pairs (50.0%) with the training split"
    assert err.startswith(f"qe: error: {tmp_path / 'dev.src'}:2: {expected}")
    assert "allow_overlap = true" in err and "sentence 5" not in err  # the text is not echoed
    config.write_text(
        config.read_text().replace("label_range = [0, 1]", "label_range = [0, 1]\nallow_overlap = true")
    )
    assert main(["run", str(config), "--output-dir", str(tmp_path / "run"), "--quiet"]) == 0


def test_a_dev_split_repeating_a_few_training_pairs_leaves_them_out_and_says_so(tmp_path, capsys):
    """One of 21 dev pairs (4.8 %) repeats a training pair: left out of choosing, scoring and refitting."""
    labels = ["0.1", "0.3", "0.5", "0.2", "0.0", "1.0", "0.4", "0.6"]
    dev = [("sentence 5", "Satz 5"), *((f"new {k}", f"neu {k}") for k in range(20))]
    config = own_files(tmp_path, labels, dev)
    config.write_text(config.read_text().replace("[data]\n", '[data]\nfit_on = "train+dev"\n', 1))
    assert main(["run", str(config), "--output-dir", str(tmp_path / "run"), "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "the dev split repeats 1 of its 21 pairs (4.8%) from the training split" in err
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert metrics["fit_on"]["rows"] == 8 + 20


@pytest.mark.data
def test_registered_dev_overlap_is_reported(mlqe_dir):
    """Upstream ne-en repeats 47 training pairs in dev (si-en 24, ru-en 1): each left out, and said."""
    from qe.data.splits import dev_repeats, repeated_pairs

    for pair, count in (("ne-en", 47), ("si-en", 24), ("ru-en", 1), ("ro-en", 0)):
        train, dev = (load_registered(f"mlqe-pe/{pair}", split, mlqe_dir) for split in ("train", "dev"))
        assert len(repeated_pairs(train, dev)) == count
        assert dev_repeats(train, dev, allow=True) == []
        assert len(dev_repeats(train, dev, allow=False)) == count  # at most 4.7 % of 1,000: left out


@pytest.mark.data
def test_word_probabilities_not_matching_the_tokens_name_the_line(mlqe_dir, tmp_path, capsys):
    folder = mlqe_dir / "mlqe-pe" / "direct-assessments" / "ro-en-test20"
    logprobs = (folder / "word-probas" / "word_probas.test20.roen").read_text().splitlines()
    logprobs[41] = logprobs[41].rsplit(" ", 1)[0]  # line 42 loses its </s> value
    bad = write_lines(tmp_path / "word_probas", logprobs)
    tokens = tmp_path / "mt.tokens"
    shutil.copy(folder / "word-probas" / "mt.test20.roen", tokens)
    hter = mlqe_dir / "mlqe-pe" / "post-editing" / "ro-en-test20"
    args = [
        "features",
        "--src",
        str(hter / "test20.src"),
        "--mt",
        str(hter / "test20.mt"),
        "--families",
        "nmt",
    ]
    args += ["--nmt-logprobs", str(bad), "--nmt-tokens", str(tokens), "--set", "nmt.model_score=false"]
    args += ["--out", str(tmp_path / "f.tsv"), "--quiet", "--chunk-size", "16"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert (
        err.startswith(f"qe: error: {bad}:42: nmt: ")
        and "expected" in err
        and "one per token plus </s>" in err
    )
