"""A user's own data without Python: files, tables, feature tables, a dev split, edits, qe init,
and how runs on them are signed, cached and reported."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import mean_absolute_error
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVR

from qe.cli import main
from qe.config.experiment import ExperimentConfig
from qe.data import read_feature_table
from qe.infra.errors import QEInputError
from qe.run.against import summary_table
from qe.run.config import load_config
from qe.run.context import RunContext
from qe.run.extraction import build_split
from tests.helpers import write_lines

SRC = [f"the {w} sat on the mat number {i} ." for i, w in enumerate(["cat", "dog", "bird", "cow"] * 5)]
MT = [
    f"el {w} se sentó en la alfombra número {i} ."
    for i, w in enumerate(["gato", "perro", "pájaro", "vaca"] * 5)
]
HTER = [f"{(i * 7 % 10) / 10:.1f}" for i in range(20)]


def write_text_split(folder: Path, name: str, rows: range) -> dict[str, Path]:
    paths = {}
    for role, values in (("src", SRC), ("mt", MT), ("labels", HTER)):
        paths[role] = write_lines(folder / f"{name}.{role}", [values[i] for i in rows])
    return paths


def train_and_test_files(folder: Path) -> str:
    """Training (16) and test (4) text files in ``folder``, and the config lines naming them."""
    write_text_split(folder, "train", range(0, 16))
    write_text_split(folder, "test", range(16, 20))
    return "".join(
        f'[data.{s}]\nsrc = "{s}.src"\nmt = "{s}.mt"\nlabels = "{s}.labels"\n' for s in ("train", "test")
    )


def run(config: Path, out: Path) -> int:
    return main(["run", str(config), "--output-dir", str(out), "--quiet"])


# ---------------------------------------------------------------------------------------- text files


def test_text_files_with_a_dev_split_that_chooses_the_hyperparameters(tmp_path):
    write_text_split(tmp_path, "train", range(0, 12))
    write_text_split(tmp_path, "dev", range(12, 16))
    write_text_split(tmp_path, "test", range(16, 20))
    files = {
        split: f'src = "{split}.src"\nmt = "{split}.mt"\nlabels = "{split}.labels"\n'
        for split in ("train", "dev", "test")
    }
    config = tmp_path / "c.toml"
    config.write_text(
        "[data]\nlabel_range = [0, 1]\n"
        + "".join(f"[data.{split}]\n{text}" for split, text in files.items())
        + '[features]\nfamilies = ["surface"]\n'
        + '[learner]\nname = "svr"\n[learner.grid]\nC = [0.01, 1.0, 100.0]\n[cv]\nfolds = 3\n'
    )
    out = tmp_path / "run"
    assert run(config, out) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["cv"]["grid_chosen_on"] == "dev" and "dev" in metrics
    # the same choice made by hand: fit on train, MAE on dev, pick the best C
    ctx = RunContext(load_config(config))
    train, dev = build_split(ctx, "train"), build_split(ctx, "dev")
    maes = {}
    for c in (0.01, 1.0, 100.0):
        model = make_pipeline(StandardScaler(), SVR(C=c)).fit(train.features.to_numpy(), train.dataset.labels)
        maes[c] = mean_absolute_error(dev.dataset.labels, model.predict(dev.features.to_numpy()))
    assert metrics["cv"]["grid_best_params"]["C"] == min(maes, key=maes.get)
    signature = (out / "signature.txt").read_text()
    assert "|dev:" in signature and "|select:dev-MAE|" in signature


def test_tables_with_named_columns(tmp_path):
    header = "sid\tsource\ttarget\thter\tpe"
    rows = [f"s{i}\t{SRC[i]}\t{MT[i]}\t{HTER[i]}\t{MT[i]} ." for i in range(20)]
    write_lines(tmp_path / "train.tsv", [header, *rows[:14]])
    write_lines(tmp_path / "test.tsv", [header, *rows[14:]])
    jsonl = [
        json.dumps({"sid": f"s{i}", "source": SRC[i], "target": MT[i], "hter": float(HTER[i])})
        for i in range(14, 20)
    ]
    write_lines(tmp_path / "test.jsonl", jsonl)
    columns = 'src_column = "source"\nmt_column = "target"\nlabel_column = "hter"\nid_column = "sid"\n'
    config = tmp_path / "c.toml"
    config.write_text(
        f'[data.train]\ntable = "train.tsv"\npost_edit_column = "pe"\n{columns}'
        f'[data.test]\ntable = "test.jsonl"\n{columns}'
        '[features]\nfamilies = ["surface"]\n[learner]\nname = "mean"\n[cv]\nfolds = 3\n'
    )
    loaded = build_split(RunContext(load_config(config)), "train").dataset
    assert loaded.ids[:2] == ["s0", "s1"] and loaded.post_edits[0] == f"{MT[0]} ."
    assert loaded.labels.tolist() == [float(h) for h in HTER[:14]]
    assert run(config, tmp_path / "run") == 0
    predictions = (tmp_path / "run" / "predictions.tsv").read_text().splitlines()
    assert [line.split("\t")[0] for line in predictions[1:]] == [f"s{i}" for i in range(14, 20)]
    config.write_text(config.read_text().replace('label_column = "hter"', 'label_column = "HTER"', 1))
    with pytest.raises(QEInputError, match="no label column 'HTER'"):
        build_split(RunContext(load_config(config)), "train")


# ---------------------------------------------------------------------------------------- feature tables


def feature_csv(path: Path, rows: range, shift: float = 0.0) -> Path:
    lines = ["id,f_len,f_ratio,hter"]
    lines += [f"s{i},{len(SRC[i].split()) + shift},{len(MT[i]) / len(SRC[i]):.4f},{HTER[i]}" for i in rows]
    return write_lines(path, lines)


def feature_config(tmp_path: Path, name: str, train: Path, test: Path) -> Path:
    config = tmp_path / f"{name}.toml"
    split = 'label_column = "hter"\nid_column = "id"\n'
    config.write_text(
        f'name = "{name}"\n[data.train]\nfeatures = "{train.name}"\n{split}'
        f'[data.test]\nfeatures = "{test.name}"\n{split}'
        '[learner]\nname = "svr"\n[learner.params]\nC = 1.0\n[cv]\nfolds = 3\n'
    )
    return config


def test_a_feature_table_alone_needs_no_text(tmp_path):
    train, test = (
        feature_csv(tmp_path / "train.csv", range(14)),
        feature_csv(tmp_path / "test.csv", range(14, 20)),
    )
    config = feature_config(tmp_path, "tables", train, test)
    split = build_split(RunContext(load_config(config)), "train")
    assert list(split.features.columns) == ["f_len", "f_ratio"]  # not the label, not the id
    assert split.dataset.labels.tolist() == [float(h) for h in HTER[:14]] and split.dataset.ids[0] == "s0"
    assert run(config, tmp_path / "run") == 0
    families = config.read_text() + '[features]\nfamilies = ["surface"]\n'
    config.write_text(families)
    with pytest.raises(QEInputError, match="families need sentences"):
        build_split(RunContext(load_config(config)), "train")


def test_the_header_is_detected_explicitly(tmp_path):
    tsv = read_feature_table(
        write_lines(tmp_path / "h.tsv", ["a\tb\tlabel", "1\t2\t0.5"]), label_column="label"
    )
    assert list(tsv.features.columns) == ["a", "b"] and tsv.labels.tolist() == [0.5]
    quoted = read_feature_table(write_lines(tmp_path / "q.csv", ['"len, tokens",ratio', "3,0.5"]))
    assert list(quoted.features.columns) == ["len, tokens", "ratio"]
    assert read_feature_table(write_lines(tmp_path / "n.csv", ["1,2", "3,4"])).features.columns.tolist() == [
        "f1",
        "f2",
    ]
    for name, sep in (("m.csv", ","), ("m.tsv", "\t")):
        mixed = write_lines(tmp_path / name, [sep.join(["len", "2.5", "ratio"]), sep.join(["1", "2", "3"])])
        with pytest.raises(QEInputError, match=r"the first row mixes numbers \('2.5'\) with names") as info:
            read_feature_table(mixed)
        assert info.value.line == 1
    with pytest.raises(QEInputError, match="'hter' is named but the table has no header row"):
        read_feature_table(write_lines(tmp_path / "x.csv", ["1,2", "3,4"]), label_column="hter")
    with pytest.raises(QEInputError, match="non-numeric value 'big'") as info:
        read_feature_table(write_lines(tmp_path / "v.csv", ["a,b", "1,2", "3,big"]))
    assert info.value.line == 3
    with pytest.raises(QEInputError, match="label 7 is outside the declared range") as info:
        read_feature_table(
            write_lines(tmp_path / "l.csv", ["a,y", "1,0.5", "2,7"]), label_column="y", label_range=(0, 1)
        )
    assert info.value.line == 3


def test_the_signature_hashes_the_feature_tables(tmp_path):
    test = feature_csv(tmp_path / "test.csv", range(14, 20))
    first = feature_config(tmp_path, "a", feature_csv(tmp_path / "train.csv", range(14)), test)
    signatures = []
    for out in ("r1", "r2"):
        assert run(first, tmp_path / out) == 0
        signatures.append((tmp_path / out / "signature.txt").read_text())
    feature_csv(tmp_path / "train.csv", range(14), shift=0.5)  # same shape, other values
    assert run(first, tmp_path / "r3") == 0
    signatures.append((tmp_path / "r3" / "signature.txt").read_text())
    assert signatures[0] == signatures[1] != signatures[2]
    assert "|table.train:" in signatures[0] and "|table.test:" in signatures[0]


# ---------------------------------------------------------------------------------------- cache


def test_two_learner_configs_share_the_extracted_features(tmp_path, monkeypatch):
    monkeypatch.setenv("QE_CACHE_DIR", str(tmp_path / "cache"))
    write_text_split(tmp_path, "train", range(0, 14))
    write_text_split(tmp_path, "test", range(14, 20))
    files = {s: f'src = "{s}.src"\nmt = "{s}.mt"\nlabels = "{s}.labels"\n' for s in ("train", "test")}
    data = (
        f"[data.train]\n{files['train']}[data.test]\n{files['test']}" + '[features]\nfamilies = ["surface"]\n'
    )
    for name, learner in (
        ("svr", 'name = "svr"'),
        ("forest", 'name = "random_forest"\nparams = { n_estimators = 20 }'),
    ):
        (tmp_path / f"{name}.toml").write_text(
            f'name = "{name}"\n{data}[learner]\n{learner}\n[cv]\nfolds = 3\n'
        )
    assert run(tmp_path / "svr.toml", tmp_path / "r1") == 0
    cached = sorted((tmp_path / "cache" / "features" / "surface").iterdir())
    assert len(cached) == 2  # train and test
    stamps = [path.stat().st_mtime_ns for path in cached]
    assert run(tmp_path / "forest.toml", tmp_path / "r2") == 0
    again = sorted((tmp_path / "cache" / "features" / "surface").iterdir())
    assert again == cached and [path.stat().st_mtime_ns for path in again] == stamps  # read, not rewritten


# ---------------------------------------------------------------------------------------- edits


def test_edits_learn_from_the_users_post_edits(tmp_path, monkeypatch):
    monkeypatch.setenv("QE_CACHE_DIR", str(tmp_path / "cache"))
    write_text_split(tmp_path, "train", range(0, 14))
    write_text_split(tmp_path, "test", range(14, 20))
    post_edits = [m.replace("se sentó", "estaba") if i % 2 else m for i, m in enumerate(MT[:14])]
    write_lines(tmp_path / "train.pe", post_edits)
    bundle_config = tmp_path / "bundle.toml"
    files = {
        role: tmp_path / f"train.{ext}"
        for role, ext in (("src", "src"), ("mt", "mt"), ("post_edits", "pe"), ("labels", "labels"))
    }
    bundle_config.write_text(
        'name = "mine"\n[languages]\nsrc = "en"\ntgt = "es"\n[edits]\nfolds = 2\n'
        + "".join(f'{role} = "{path}"\n' for role, path in files.items())
    )
    bundle = tmp_path / "bundle"
    assert main(["resources", "build", str(bundle_config), "--output", str(bundle), "--quiet"]) == 0
    manifest = json.loads((bundle / "manifest.json").read_text())
    summary = manifest["members"]["edits"]["summary"]
    # 7 of 14 post-edits replace "se sentó" (2 of the 10 MT tokens) by "estaba": 14 of 140 edited
    assert summary["pairs"] == 14 and summary["edited_share"] == pytest.approx(14 / 140, abs=1e-6)
    text = {s: f'src = "{s}.src"\nmt = "{s}.mt"\nlabels = "{s}.labels"\n' for s in ("train", "test")}
    config = tmp_path / "c.toml"
    config.write_text(
        f"[data.train]\n{text['train']}[data.test]\n{text['test']}"
        f'[features]\nfamilies = ["edits"]\nresources = "{bundle}"\n'
        '[learner]\nname = "mean"\n[cv]\nfolds = 3\n'
    )
    assert run(config, tmp_path / "run") == 0
    for broken in ('[edits]\nsrc = "a"\n', '[edits]\ndataset = "mlqe-pe/en-de"\nsrc = "a"\n'):
        bundle_config.write_text(f'name = "x"\n[languages]\nsrc = "en"\ntgt = "es"\n{broken}')
        assert (
            main(["resources", "build", str(bundle_config), "--output", str(tmp_path / "b2"), "--quiet"]) == 2
        )
    bundle_config.write_text(
        'name = "x"\n[languages]\nsrc = "en"\ntgt = "de"\n'
        '[edits]\ndataset = "mlqe-pe/en-de"\nsplit = "test"\n'
    )
    with pytest.raises(QEInputError, match=r"edits\.split = 'test': expected a training split"):
        from qe.bundle import read_bundle_config

        read_bundle_config(bundle_config)


# ---------------------------------------------------------------------------------------- qe init


def test_qe_init_writes_a_config_that_runs(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    train, test = (
        write_text_split(tmp_path, "train", range(0, 14)),
        write_text_split(tmp_path, "test", range(14, 20)),
    )
    write_lines(tmp_path / "train.pe", MT[:14])
    training = ["--src", str(train["src"]), "--mt", str(train["mt"]), "--labels", str(train["labels"])]
    testing = [
        "--test-src",
        str(test["src"]),
        "--test-mt",
        str(test["mt"]),
        "--test-labels",
        str(test["labels"]),
    ]
    scale = ["--label-range", "0", "1"]
    args = ["init", *training, *testing, "--src-lang", "en", "--tgt-lang", "es", *scale, "--light"]
    assert main([*args, "--post-edits", "train.pe", "--out", "exp/config.toml"]) == 0
    assert "wrote exp/config.toml: 14 train, 6 test pairs, en-es (light)" in capsys.readouterr().out
    config = load_config(tmp_path / "exp" / "config.toml")
    assert config.name == "exp" and config.data.languages == {"src": "en", "tgt": "es"}
    assert config.data.label_range == (0, 1)
    assert config.features.settings["surface"] == {"src_lang": "en", "tgt_lang": "es"}
    # the SVR's epsilon follows the labels' spread (0.1, 0.2, 0.3 on a 1-5 scale of std 0.85)
    std = float(np.std([float(h) for h in HTER[:14]]))
    assert config.learner.grid["epsilon"] == pytest.approx(
        [e * std / 0.85 for e in (0.1, 0.2, 0.3)], rel=0.05
    )
    assert (tmp_path / "exp" / "config-resources.toml").is_file()
    assert main(["run", "exp/config.toml", "--output-dir", "runs/exp", "--quiet"]) == 0
    capsys.readouterr()

    def fails(changed: list[str], message: str) -> None:
        assert main(changed) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, err

    out = ["--out", "exp/config.toml", "--force"]
    languages = ["--src-lang", "en", "--tgt-lang", "es"]
    spanish = ["init", *training, *testing, "--src-lang", "en", "--tgt-lang", "Spanish", *out]
    fails(spanish, "--tgt-lang 'Spanish' is not a language code")
    fails(
        ["init", *training, *testing, *languages, "--label-range", "1", "5", *out],
        "outside the declared range [1, 5]",
    )
    fails([*args, "--out", "exp/config.toml"], "already exists (pass --force to replace it)")
    few = {
        r: write_lines(tmp_path / f"few.{r}", v[:4]) for r, v in (("src", SRC), ("mt", MT), ("labels", HTER))
    }
    fails(
        ["init", *(f"--{r}={p}" for r, p in few.items()), *testing, *languages, "--out", "f.toml"], "too few"
    )


# ---------------------------------------------------------------------------------------- reporting


def metrics_of(spearman: float, scipy: float) -> dict:
    return {
        "test": {
            **{"MAE": 0.61, "RMSE": 0.75, "MAE_exact": 0.6049, "RMSE_exact": 0.7512, "DeltaAvg": 0.5},
            **{"Spearman": spearman, "Spearman_scipy": scipy, "Pearson": 0.47},
        }
    }


def test_summaries_show_pearson_and_the_published_table_only_beside_wmt12():
    def config(data: dict) -> ExperimentConfig:
        return ExperimentConfig.from_document({"name": "w", "learner": {"name": "svr"}, "data": data})

    text = summary_table(config({"dataset": "wmt12-en-es"}), metrics_of(0.450, 0.425))
    assert "| system | MAE | RMSE | DeltaAvg | Spearman (WMT12) | Spearman (scipy) | Pearson |" in text
    assert "| **w (ours, test)** | 0.610 | 0.750 | 0.500 | 0.450 | 0.425 | 0.470 |" in text
    assert "| SDLLW_M5PbestDeltaAvg (winner) (published) | 0.61 | 0.75 | 0.63 | 0.64 | n/a | n/a |" in text
    for data in ({"dataset": "mlqe-pe/en-de"}, {}):
        text = summary_table(config(data).replace(name="m"), metrics_of(0.450, 0.425))
        assert text.splitlines()[0] == "| system | MAE | RMSE | DeltaAvg | Spearman | Pearson |"
        assert (
            "| **m (ours, test)** | 0.605 | 0.751 | 0.500 | 0.425 | 0.470 |" in text
            and "published" not in text
        )


def test_compare_shows_the_published_table_only_for_wmt12_runs(tmp_path, capsys):
    for name, dataset in (("a", "wmt12-en-es"), ("b", "wmt12-en-es"), ("c", None)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "metrics.json").write_text(json.dumps(metrics_of(0.45, 0.425)))
        data = f'dataset = "{dataset}"\n' if dataset else 'name = "files"\n'
        (tmp_path / name / "config.toml").write_text(f"[data]\n{data}")
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "b")]) == 0
    assert "(published)" in capsys.readouterr().out
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "c")]) == 0
    out = capsys.readouterr().out
    assert "(published)" not in out and out.splitlines()[0].endswith("| Spearman | Pearson |")


# ---------------------------------------------------------------------------------------- config errors


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            '[data.train]\nsrc = "s"\nmt = "s"\nlabel_column = "y"\n',
            r"data\.train\.label_column = 'y': expected a column of a table or features file \(none given\)$",
        ),
        (
            '[data.train]\nlabels = "s"\n',
            r"data\.train\.src = null: expected src and mt files, a table \(TSV / JSONL\), or a features",
        ),
        (
            '[data.train]\ntable = "s"\nsrc = "s"\nmt = "s"\n',
            "data.train.src = 's': expected no src / mt files beside a table: the text comes from one$",
        ),
        (
            '[data.train]\nsrc = "s"\nfeatures = "s"\n',
            r"data\.train\.mt = null: expected mt = FILE beside src \(both or neither\)$",
        ),
        ('[data]\nlabel_range = [0, "1"]\n', "data.label_range = .*: expected .low, high.: two numbers"),
        (
            '[data]\ndataset = "mlqe-da/en-de"\ndev_split = "dev"\n[data.dev]\nfeatures = "s"\n',
            r"data\.dev_split = 'dev': expected no dev_split beside \[data\.dev\] files: one of them names",
        ),
        # a labels file beside the labels of a table was silently ignored, its range never checked
        (
            '[data.train]\ntable = "s"\nlabels = "s"\n',
            "data.train.labels = 's': expected no labels file beside the table's label column: labels come",
        ),
        (
            '[data.train]\nfeatures = "s"\nlabel_column = "y"\nlabels = "s"\n',
            "data.train.labels = 's': expected no labels file beside the column 'y': labels come from one$",
        ),
        (
            '[data.train]\nsrc = "s"\nmt = ""\n',
            r"data\.train\.mt = '': expected a file \(or a column\) name$",
        ),
    ],
)
def test_config_mistakes_are_one_line(tmp_path, data, message):
    write_lines(tmp_path / "s", ["x"])
    base = '[data.test]\nsrc = "s"\nmt = "s"\n' if "[data.train]" in data else ""
    if "[data.train]" not in data and "dataset" not in data:
        base = '[data.train]\nsrc = "s"\nmt = "s"\n[data.test]\nsrc = "s"\nmt = "s"\n'
    config = tmp_path / "c.toml"
    config.write_text(data + base + '[features]\nfamilies = ["surface"]\n[learner]\nname = "mean"\n')
    with pytest.raises(QEInputError, match=message):
        load_config(config)


# ---------------------------------------------------------------------------------------- hostile tables


@pytest.mark.parametrize(
    ("name", "row", "message"),
    [
        ("t.jsonl", "[" * 100000 + "]" * 100000, "nested too deeply"),  # RecursionError traceback before
        ("t.jsonl", '{"src": "\\ud800x", "mt": "y", "score": 0.2}', "lone surrogate"),  # UnicodeEncodeError
        ("t.jsonl", '{"src": "a", "mt": "b", "score": 0.2, "score": 0.9}', "key 'score' appears twice"),
        ("t.jsonl", '{"id": "a\\tb", "src": "a", "mt": "b", "score": 0.2}', "holds a tab or a line break"),
        ("t.jsonl", '{"id": "a\\nb", "src": "a", "mt": "b", "score": 0.2}', "holds a tab or a line break"),
        ("t.jsonl", '{"id": {"k": 1}, "src": "a", "mt": "b", "score": 0.2}', "is not a string or an integer"),
        ("t.jsonl", '{"id": 0, "src": "a", "mt": "b", "score": 0.2}', "id '0' appears twice"),
    ],
)
def test_a_hostile_jsonl_row_is_one_line_naming_it(tmp_path, name, row, message):
    first = json.dumps({"id": 0, "src": "the cat", "mt": "el gato", "score": 0.5})
    path = write_lines(tmp_path / name, [first, row])
    from qe.data import load_table

    with pytest.raises(QEInputError, match=message) as info:
        load_table(path)
    assert info.value.line == 2 and info.value.path == str(path)


def test_a_tsv_table_naming_a_column_twice_is_refused(tmp_path):
    """The last of two 'score' columns silently became the labels."""
    from qe.data import load_table

    path = write_lines(tmp_path / "t.tsv", ["id\tsrc\tmt\tscore\tscore", "0\ta\tb\t0.1\t0.99"])
    with pytest.raises(QEInputError, match="names column 'score' twice") as info:
        load_table(path)
    assert info.value.line == 1


def test_a_named_id_column_must_exist(tmp_path):
    from qe.data import load_table

    path = write_lines(tmp_path / "t.tsv", ["src\tmt\tscore", "a\tb\t0.1"])
    with pytest.raises(QEInputError, match="no id column 'nope'"):
        load_table(path, id_column="nope")
    assert load_table(path).ids == ["0"]  # the default 'id' column may be absent: positions


def test_fixed_learner_parameters_are_in_the_signature_and_not_overridden_silently(tmp_path):
    """C = 1 and C = 3 gave different predictions under one signature; a grid silently beat params."""
    data = train_and_test_files(tmp_path)
    signatures = []
    for c in (1.0, 3.0):
        config = tmp_path / f"c{c:g}.toml"
        config.write_text(
            data + f'[features]\nfamilies = ["surface"]\n[learner]\nname = "svr"\nparams = {{ C = {c} }}\n'
        )
        assert run(config, tmp_path / f"run{c:g}") == 0
        signatures.append((tmp_path / f"run{c:g}" / "signature.txt").read_text())
    assert '|learner-params:{"C":1.0}|' in signatures[0] and '|learner-params:{"C":3.0}|' in signatures[1]
    both = tmp_path / "both.toml"
    both.write_text(
        data
        + '[features]\nfamilies = ["surface"]\n[learner]\nname = "svr"\nparams = { C = 3.0 }\n'
        + "[learner.grid]\nC = [1.0, 2.0]\n"
    )
    with pytest.raises(
        QEInputError, match=r"learner\.params\.C = 3\.0: expected no value: learner\.grid gives it"
    ):
        load_config(both)


def test_mismatched_feature_tables_name_the_first_different_column(tmp_path, capsys):
    train = feature_csv(tmp_path / "train.csv", range(14))
    test = write_lines(
        tmp_path / "test.csv",
        ["id,f_ratio,f_len,hter"] + [f"s{i},1.0,{len(SRC[i].split())},{HTER[i]}" for i in range(14, 20)],
    )
    config = feature_config(tmp_path, "swapped", train, test)
    capsys.readouterr()
    assert run(config, tmp_path / "run") == 2
    err = capsys.readouterr().err.strip()
    assert "column 1 is 'f_ratio' there and 'f_len' in train" in err and "test.csv" in err


def test_a_malformed_csv_names_its_line(tmp_path):
    path = write_lines(tmp_path / "t.csv", ["a,b", "1,2", '3,"4'])
    with pytest.raises(QEInputError, match="malformed CSV") as info:
        read_feature_table(path)
    assert info.value.line == 3


def test_a_family_listed_twice_names_the_config(tmp_path):
    data = train_and_test_files(tmp_path)
    config = tmp_path / "twice.toml"
    config.write_text(data + '[features]\nfamilies = ["surface", "surface"]\n[learner]\nname = "svr"\n')
    twice = r"features\.families = \['surface', 'surface'\]: expected each family once, not 'surface' twice$"
    with pytest.raises(QEInputError, match=twice) as info:
        load_config(config)
    assert info.value.path == str(config)


def test_fit_on_train_and_dev_refits_the_choice_on_both_without_repeated_pairs(tmp_path):
    write_text_split(tmp_path, "train", range(0, 12))
    write_text_split(tmp_path, "dev", [*range(12, 16), 0])  # the last dev pair repeats a training pair
    write_text_split(tmp_path, "test", range(16, 20))
    files = "".join(
        f'[data.{split}]\nsrc = "{split}.src"\nmt = "{split}.mt"\nlabels = "{split}.labels"\n'
        for split in ("train", "dev", "test")
    )
    learner = (
        '[features]\nfamilies = ["surface"]\n[learner]\nname = "svr"\n[learner.grid]\nC = [0.01, 100.0]\n'
    )
    config = tmp_path / "c.toml"
    config.write_text(
        '[data]\nlabel_range = [0, 1]\nallow_overlap = true\nfit_on = "train+dev"\n'
        + files
        + learner
        + "[cv]\nfolds = 3\n"
    )
    out = tmp_path / "run"
    assert run(config, out) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["fit_on"] == {"splits": "train+dev", "rows": 16, "dev_rows_left_out": 1}
    assert "|fit:train+dev|" in (out / "signature.txt").read_text()
    # by hand: C chosen on dev by a model fitted on train, then an SVR with it fitted on train + 4 dev pairs
    ctx = RunContext(load_config(config))
    train, dev, test = (build_split(ctx, split) for split in ("train", "dev", "test"))
    chosen = metrics["cv"]["grid_best_params"]["C"]
    x = np.vstack([train.features.to_numpy(), dev.features.to_numpy()[:4]])
    y = np.r_[train.dataset.labels, dev.dataset.labels[:4]]
    expected = np.clip(
        make_pipeline(StandardScaler(), SVR(C=chosen)).fit(x, y).predict(test.features.to_numpy()), 0, 1
    )
    got = [float(line.split("\t")[1]) for line in (out / "predictions.tsv").read_text().splitlines()[1:]]
    assert got == pytest.approx(expected, abs=1e-6)
    # dev is scored by the model fitted on train alone (never by one that saw it)
    alone = make_pipeline(StandardScaler(), SVR(C=chosen)).fit(
        train.features.to_numpy(), train.dataset.labels
    )
    dev_mae = mean_absolute_error(dev.dataset.labels, np.clip(alone.predict(dev.features.to_numpy()), 0, 1))
    assert metrics["dev"]["MAE_exact"] == pytest.approx(dev_mae)


def test_fit_on_train_and_dev_needs_a_dev_split(tmp_path):
    data = train_and_test_files(tmp_path)
    config = tmp_path / "c.toml"
    config.write_text(
        '[data]\nfit_on = "train+dev"\n'
        + data
        + '[features]\nfamilies = ["surface"]\n[learner]\nname = "svr"\n'
    )
    expected = r"data\.fit_on = 'train\+dev': expected 'train' when there is no dev split \(dev_split or "
    with pytest.raises(QEInputError, match=expected):
        load_config(config)


@pytest.mark.parametrize(
    ("learner", "message"),
    [
        ('name = "svr"\nparams = { kernel = "precomputed" }', "cannot be fitted with these parameters"),
        (
            'name = "ridge"\nparams = { alphas = [] }',
            "[learner]",
        ),  # NaN predictions and a NaN in metrics.json
        (
            'name = "average"\nparams = { weights = [1, 2, 3], members = [{ name = "ridge" }] }',
            "cannot be fitted",
        ),
        ('name = "svr"\nscoring = "DeltaAvg"\ngrid = { C = [1.0, 3.0] }', "cannot be scored by DeltaAvg"),
    ],
)
def test_learner_choices_that_fail_on_the_data_are_one_line_naming_the_config(
    tmp_path, capsys, learner, message
):
    """Each ended in a traceback (or exited 0 with NaN scores, or chose by NaN fold scores)."""
    data = train_and_test_files(tmp_path)
    folds = "[cv]\nfolds = 5\n" if "DeltaAvg" in learner else ""
    config = tmp_path / "c.toml"
    config.write_text(data + f'[features]\nfamilies = ["surface"]\n[learner]\n{learner}\n' + folds)
    capsys.readouterr()
    assert run(config, tmp_path / "run") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"qe: error: {config}: ") and message in err[0], err
    assert not (tmp_path / "run").exists()


def test_a_grid_of_words_is_signed_and_clipping_and_the_range_are_in_the_signature(tmp_path):
    data = train_and_test_files(tmp_path)
    signatures = {}
    for name, extra in (("words", 'grid = { kernel = ["rbf", "linear"] }\n'), ("noclip", "clip = false\n")):
        config = tmp_path / f"{name}.toml"
        config.write_text(data + f'[features]\nfamilies = ["surface"]\n[learner]\nname = "svr"\n{extra}')
        assert run(config, tmp_path / name) == 0  # a grid of words crashed the signature (:g) before
        signatures[name] = (tmp_path / name / "signature.txt").read_text()
    assert "kernel=" in signatures["words"]
    assert '|learner-options:{"clip":false' in signatures["noclip"]
    assert '|learner-options:{"clip":true' in signatures["words"]


def test_two_comparisons_with_one_name_are_refused(tmp_path):
    data = train_and_test_files(tmp_path)
    config = tmp_path / "c.toml"
    against = '[[report.against]]\nname = "x"\nfeatures = { families = ["surface"] }\n'
    config.write_text(data + '[features]\nfamilies = ["surface"]\n[learner]\nname = "svr"\n' + against * 2)
    with pytest.raises(QEInputError, match=r"report\.against = 'x': expected each name once \(the second"):
        load_config(config)
