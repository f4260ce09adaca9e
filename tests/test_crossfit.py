"""Cross-fitted bundle members: a training pair never sees its own sentences, other pairs see all.

The toy QE training split has four pairs, each with a word no other pair has ("alpha", "beta",
"gamma", "delta" in the source; "alfa", ... in the post-edits) and words all pairs share ("x",
"y", "."). With two folds each fold holds two pairs (four distinct keys dealt round-robin), so by
hand: a training pair's fold tables count its own word 0 times and "x" twice; the full tables count
its word once and "x" four times.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import tomli_w

from qe.bundle import build_bundle
from qe.cli import main
from qe.features.base import FeatureFamily, FeatureSpec, Pairs
from qe.features.extractor import extract_features
from qe.infra.errors import QEInputError
from qe.resources.edits import EditModel, pair_key
from qe.resources.folds import assign_folds
from tests.helpers import write_lines
from tests.helpers.bundles import needs_kenlm

SRC = ["alpha x .", "beta x .", "gamma x .", "delta x ."]
MT = ["alfa y .", "beta y .", "gama y .", "delta y ."]
PE = ["ALFA y .", "BETA y .", "GAMA y .", "DELTA y ."]
OWN_SRC = ["alpha", "beta", "gamma", "delta"]
OWN_PE = ["alfa", "beta", "gama", "delta"]


@pytest.fixture()
def data(tmp_path: Path) -> Path:
    root = tmp_path / "data"
    root.mkdir()
    write_lines(root / "train.src", SRC)
    write_lines(root / "train.mt", MT)
    write_lines(root / "train.pe", PE)
    write_lines(root / "ext.src", ["alpha x .", "omega z ."])  # repeats a training source
    write_lines(root / "ext.tgt", ["Something else .", "OMEGA w ."])
    write_lines(root / "eval.txt", ["nothing like the training data at all ."])
    return root


def config(qe: dict | None = None, ext: dict | None = None, **members) -> dict:
    corpora = {
        "qe": {"src": "train.src", "mt": "train.mt", "post_edits": "train.pe", "cross_fit": 2, **(qe or {})}
    }
    if ext is not None:
        corpora["ext"] = {"src": "ext.src", "tgt": "ext.tgt", **ext}
    return {
        "name": "cf",
        "languages": {"src": "en", "tgt": "de"},
        "text": {"style": "moses"},
        "leakage": {"eval_files": ["eval.txt"]},
        "corpora": corpora,
        **(members or {"ngrams": {"src": {"side": "src", "max_order": 2}}, "ibm1": {"iterations": 5}}),
    }


def build(tmp_path: Path, data: Path, cfg: dict, name: str = "out", **kw):
    path = tmp_path / f"{name}.toml"
    path.write_text(tomli_w.dumps(cfg), encoding="utf-8")
    return build_bundle(
        path, tmp_path / name, data_dir=data, progress=False, token_cache_dir=tmp_path / "tok", **kw
    )


def folds_of(bundle) -> list[int]:
    fold_map = bundle.get("cross_fit")
    return [fold_map.fold(s, m) for s, m in zip(SRC, MT, strict=True)]


def test_a_training_pair_never_sees_its_own_sentence(tmp_path, data):
    bundle = build(tmp_path, data, config())
    folds = folds_of(bundle)
    assert sorted(folds) == [0, 0, 1, 1]
    full = bundle.get("ngrams.src")
    for i, fold in enumerate(folds):
        view = bundle.fold_view(fold)
        table = view.get("ngrams.src")
        assert table is not full
        assert (table.count(OWN_SRC[i]), table.count(f"{OWN_SRC[i]} x"), table.count("x")) == (0, 0, 2)
        assert (full.count(OWN_SRC[i]), full.count(f"{OWN_SRC[i]} x"), full.count("x")) == (1, 1, 4)
        # The same fold's other pair is not visible either; the other fold's pairs are.
        for j, other in enumerate(folds):
            assert table.count(OWN_SRC[j]) == (0 if other == fold else 1)
        # IBM1 from the post-edits: the own pair's words have no entry in the fold's lexicon.
        s2t, t2s = view.get("ibm1.s2t"), view.get("ibm1.t2s")
        assert s2t.translations(OWN_SRC[i]) == {} and t2s.translations(OWN_PE[i]) == {}
        assert (
            max(bundle.get("ibm1.s2t").translations(OWN_SRC[i]).items(), key=lambda kv: kv[1])[0] == OWN_PE[i]
        )
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["cross_fit"]["members"] == ["ibm1.s2t", "ibm1.t2s", "ngrams.src"]
    entry = manifest["members"]["ngrams.src"]
    assert [f["file"] for f in entry["folds"]] == ["ngrams.src.fold0.npz", "ngrams.src.fold1.npz"]
    assert [f["excluded_lines"] for f in entry["folds"]] == [{"qe": 2}, {"qe": 2}]
    # The same folds as [edits] with the same keys, folds and seed.
    keys = [pair_key(s, m) for s, m in zip(SRC, MT, strict=True)]
    tokens = [s.split() for s in SRC]
    edits = EditModel.build(tokens, tokens, tokens, np.zeros(4), keys, folds=2, seed=0)
    assert edits.fold_of == assign_folds(keys, 2, 0) == bundle.get("cross_fit").fold_of


class SeenShare(FeatureFamily):
    """Test family: share of the source tokens that the bundle's source n-gram table has seen."""

    name = "seen"
    needs_bundle = True

    def specs(self) -> list[FeatureSpec]:
        return [FeatureSpec("src_seen_share", "share of source tokens in ngrams.src", "ngrams.src")]

    def extract(self, batch: Pairs, resources=None) -> np.ndarray:
        table, tokens = resources.get("ngrams.src"), resources.text_processor("src").tokenize_many(batch.src)
        return np.array([[np.mean([table.count(w) > 0 for w in t])] for t in tokens])


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_extraction_scores_training_pairs_with_their_fold(tmp_path, data, n_jobs):
    bundle = build(tmp_path, data, config())
    src, mt = [*SRC, "alpha x ."], [*MT, "a new translation"]  # the last pair is not a training pair
    table = extract_features(
        [SeenShare()],
        Pairs.of(src, mt, ids=[str(i) for i in range(5)]),
        resources=bundle,
        batch_size=3,
        n_jobs=n_jobs,
        progress=False,
    )
    # By hand: a training pair's own word is unseen, "x" and "." are seen; the new pair sees all three.
    assert table["seen.src_seen_share"].tolist() == pytest.approx([2 / 3] * 4 + [1.0])


def test_external_corpus_lines_repeating_a_training_sentence(tmp_path, data):
    fitted = build(tmp_path, data, config(ext={"cross_fit": True}), name="fitted")
    alpha_fold = folds_of(fitted)[0]
    view = fitted.fold_view(alpha_fold).get("ngrams.src")
    assert (view.count("alpha"), view.count("omega")) == (0, 1)  # the repeat is masked, the rest kept
    assert fitted.get("ngrams.src").count("alpha") == 2
    entry = fitted.info("ngrams.src")["folds"][alpha_fold]
    assert entry["excluded_lines"] == {"ext": 1, "qe": 2}
    # Without cross_fit on the external corpus its copy of the training source leaks into the fold.
    leaky = build(tmp_path, data, config(ext={}), name="leaky")
    assert leaky.fold_view(alpha_fold).get("ngrams.src").count("alpha") == 1


def test_in_sample_tables_are_recorded_and_warned_about(tmp_path, data, capsys):
    path = tmp_path / "in-sample.toml"
    path.write_text(tomli_w.dumps(config(qe={"cross_fit": False})), encoding="utf-8")
    code = main(
        ["resources", "build", str(path), "--data-dir", str(data), "--output", str(tmp_path / "b"), "--quiet"]
    )
    assert code == 0
    out = capsys.readouterr().out
    assert (
        "warning: ibm1.s2t, ibm1.t2s, ngrams.src built from the QE training split qe without cross-fitting"
        in out
    )
    manifest = json.loads((tmp_path / "b" / "manifest.json").read_text())
    assert "cross_fit" not in manifest["members"]
    assert manifest["cross_fit"]["in_sample"] == {
        "corpora": ["qe"],
        "members": ["ibm1.s2t", "ibm1.t2s", "ngrams.src"],
    }
    assert all("folds" not in e for e in manifest["members"].values())


def test_a_changed_fold_file_is_refused(tmp_path, data):
    bundle = build(tmp_path, data, config())
    (tmp_path / "out" / "ngrams.src.fold1.npz").write_bytes(b"not the table")
    bundle.get("ngrams.src")  # the full table is intact
    with pytest.raises(QEInputError, match="does not match the sha256") as info:
        bundle.fold_view(1).get("ngrams.src")
    assert info.value.path.endswith("ngrams.src.fold1.npz")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"qe": {"tgt": "train.pe"}},
            r"corpora.qe.tgt = 'train.pe': expected nothing on a QE training split",
        ),
        ({"qe": {"cross_fit": 1}}, r"corpora.qe.cross_fit = 1: expected true or false or an integer from 2"),
        ({"qe": {"split": "train"}}, r"corpora.qe.split = 'train': expected nothing without dataset"),
        ({"qe": {"cross_fit": 3}}, "4 distinct training pairs are too few for cross_fit = 3"),
        ({"qe": {"dataset": "mlqe-pe/en-de"}}, r"corpora.qe.src = .*: expected nothing beside dataset"),
        ({"qe": {"target": "post-edits"}}, "target"),
        ({"ext": {"cross_fit": 5}}, r"corpora.ext.cross_fit = 5: expected true or false on a plain corpus"),
        ({"ext": {"seed": 1}}, r"corpora.ext.seed = 1: expected nothing on a plain corpus"),
    ],
)
def test_bad_cross_fitting_configs(tmp_path, data, change, message):
    cfg = config(ext={})
    for name, values in change.items():
        cfg["corpora"][name].update(values)
    with pytest.raises(QEInputError, match=message):
        build(tmp_path, data, cfg)


def test_cross_fit_on_a_plain_corpus_needs_a_qe_corpus(tmp_path, data):
    cfg = config(ext={"cross_fit": True})
    del cfg["corpora"]["qe"]
    with pytest.raises(
        QEInputError, match=r"corpora.ext.cross_fit = true: expected false without a QE training"
    ):
        build(tmp_path, data, cfg)


def test_the_test_split_of_a_dataset_is_refused(tmp_path, data):
    cfg = config()
    cfg["corpora"]["qe"] = {"dataset": "mlqe-pe/en-de", "split": "test"}
    with pytest.raises(
        QEInputError, match=r"corpora\.qe\.split = 'test': expected a split other than the dataset's test"
    ):
        build(tmp_path, data, cfg)


@pytest.mark.slow
@needs_kenlm
def test_language_models_per_fold(tmp_path, data):
    members = {"lm": {"tgt": {"side": "tgt", "order": 2}}}
    bundle = build(tmp_path, data, config(**members))
    for i, fold in enumerate(folds_of(bundle)):
        assert bundle.fold_view(fold).get("lm.tgt").is_oov(OWN_PE[i])
        assert not bundle.get("lm.tgt").is_oov(OWN_PE[i])


def test_a_foreign_fold_map_is_one_line(tmp_path):
    import gzip

    from qe.resources.crossfit import FoldMap

    path = tmp_path / "cross_fit.json.gz"
    path.write_bytes(gzip.compress(b'{"format": "qe-cross-fit/1", "folds": 2, "fold_of": {"k": 7}}'))
    with pytest.raises(QEInputError, match=r"not a readable fold map \(ValueError\)") as info:
        FoldMap.load(path)
    assert info.value.path == str(path)
    path.write_bytes(b"plain text")
    with pytest.raises(QEInputError, match="not a readable fold map"):
        FoldMap.load(path)


def test_a_cross_fitted_bundle_is_rebuilt_over_itself_with_overwrite(tmp_path, data):
    """Its fold files are qe's own (the manifest names them): --overwrite replaces the bundle, while a
    file the manifest does not name still stops it."""
    bundle = build(tmp_path, data, config())
    fold_files = sorted(p.name for p in bundle.path.glob("*.fold*"))
    assert fold_files  # ngrams.src.fold0.npz, ...
    with pytest.raises(QEInputError, match="--overwrite"):
        build(tmp_path, data, config())
    rebuilt = build(tmp_path, data, config(), overwrite=True)
    assert sorted(p.name for p in rebuilt.path.glob("*.fold*")) == fold_files
    (rebuilt.path / "notes.txt").write_text("mine", encoding="utf-8")
    with pytest.raises(QEInputError, match=r"notes\.txt, which qe did not write"):
        build(tmp_path, data, config(), overwrite=True)
    assert (rebuilt.path / "notes.txt").read_text(encoding="utf-8") == "mine"
