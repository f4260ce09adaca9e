"""Hostile word model files (``.qwords``, issue 32) and word-level training files. The format is new
on branch word-cli (main 0a37473 has no word model file to attack), so these cases are written with it:
what a stranger's file could do to ``qe predict --words`` had the reader trusted it. A tree whose child
index leaves its array or points back up (a walk out of bounds, or one that never ends), NaN or infinite
leaf values, a threshold outside [0, 1], a member missing, changed without its hash, named ``../x.npy``,
compressed or declared 1 TB, a manifest that is not JSON or nests 100,000 deep, arrays of the wrong
dtype or shape, an IBM1 entry outside its vocabulary; in a model whose kinds use the linear-chain CRF
(``qe.wordmodel.crf``, branch word-crf), transition, start or emission weights beyond 10,000 or NaN,
weights of the wrong shape or dtype, a zero column scale, a missing-indicator column outside the
features, a CRF member missing from a kind that declares it, a kind declaring an unknown learner: each
is refused with one line naming the model file, exit 2, before any pair is tagged. Tags files with a
wrong count on a line or an unknown tag stop ``qe run`` in one line naming the file and line
(``qe.words.files``; also tests/test_word_tags.py).
"""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from qe.cli import main
from qe.wordmodel.features import WordFeaturizer, tag_labels
from qe.wordmodel.modelfile import save_word_model
from qe.wordmodel.tagger import WordTagger
from tests.helpers import write_lines
from tests.helpers.bundles import has_kenlm_tools
from tests.helpers.words import predict_words_args, toy
from tests.helpers.zipmembers import read_members, write_zip


@pytest.fixture(scope="module")
def model_file(tmp_path_factory) -> Path:
    train = toy(200, 0)
    featurizer = WordFeaturizer()
    tagger = WordTagger(max_iter=5, min_samples_leaf=5).fit(
        featurizer.fit_transform(train), tag_labels(train)
    )
    path = tmp_path_factory.mktemp("hostile-words") / "model.qwords"
    save_word_model(path, featurizer, tagger, {})
    return path


@pytest.fixture(scope="module")
def crf_model_file(tmp_path_factory) -> Path:
    """The toy model with a linear-chain CRF for every kind."""
    train = toy(200, 0)
    featurizer = WordFeaturizer()
    tagger = WordTagger(learner="crf").fit(featurizer.fit_transform(train), tag_labels(train))
    path = tmp_path_factory.mktemp("hostile-words-crf") / "model.qwords"
    save_word_model(path, featurizer, tagger, {})
    return path


def npy(value: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, value, version=(1, 0), allow_pickle=False)
    return buffer.getvalue()


def array(data: bytes) -> np.ndarray:
    return np.lib.format.read_array(io.BytesIO(data), allow_pickle=False).copy()


Change = Callable[[dict[str, bytes], dict], None]


def tampered(model: Path, out: Path, change: Change, *, rehash: bool = True, compress: bool = False) -> Path:
    """``model`` with ``change(members, manifest)`` applied; with ``rehash`` the manifest is rewritten to
    match the changed members (an attacker who edits both), else it is left as it was."""
    members = read_members(model)
    manifest = json.loads(members.pop("manifest.json"))
    before = dict(members)
    change(members, manifest)
    if rehash:
        for name, data in members.items():
            if before.get(name) != data and name in manifest["members"]:
                value = array(data)
                manifest["members"][name] = {
                    "dtype": value.dtype.str,
                    "shape": list(value.shape),
                    "sha256": hashlib.sha256(data).hexdigest(),
                    "size": len(data),
                }
    text = members.pop("manifest.json", None) or json.dumps(manifest).encode()
    method = zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED
    return write_zip(out, {"manifest.json": text, **members}, method)


def edit(name: str, how: Callable[[np.ndarray], np.ndarray]) -> Change:
    def change(members: dict[str, bytes], manifest: dict) -> None:
        member = f"{name}.npy"
        members[member] = npy(how(array(members[member])))

    return change


def at(index: int, value, dtype=None) -> Callable[[np.ndarray], np.ndarray]:
    def how(values: np.ndarray) -> np.ndarray:
        values = values.astype(dtype or values.dtype)
        values[index] = value
        return values

    return how


def manifest_edit(how: Callable[[dict], None]) -> Change:
    return lambda members, manifest: how(manifest)


def refused(model: Path, tmp_path: Path, capsys, pattern: str) -> None:
    src = write_lines(tmp_path / "s.txt", ["the red cat runs .", "a dog ."])
    mt = write_lines(tmp_path / "m.txt", ["the red CAT runs .", "a dog ."])
    out = tmp_path / "tags.jsonl"
    code = main(predict_words_args(model, src, mt, out))
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert str(model) in err and pattern in err, err
    assert not out.exists()


def _deep(members: dict[str, bytes], manifest: dict) -> None:
    members["manifest.json"] = b"[" * 100_000 + b"]" * 100_000


def _not_json(members: dict[str, bytes], manifest: dict) -> None:
    members["manifest.json"] = b"{'format': 'qe-word-model',"


def _missing(members: dict[str, bytes], manifest: dict) -> None:
    del members["gaps_value.npy"]


def _dotdot(members: dict[str, bytes], manifest: dict) -> None:
    members["../evil.npy"] = members["gaps_value.npy"]
    manifest["members"]["../evil.npy"] = manifest["members"]["gaps_value.npy"]


def _huge(members: dict[str, bytes], manifest: dict) -> None:
    manifest["members"]["target_value.npy"]["size"] = 10**12
    manifest["members"]["target_value.npy"]["shape"] = [10**11]


def _threshold(value: float) -> Change:
    return manifest_edit(lambda m: m["kinds"]["source"].__setitem__("threshold", value))


CASES = {
    "child index out of range": (edit("target_left", at(0, 10**6)), {}, "outside the nodes after its parent"),
    "negative child index": (edit("target_right", at(0, -5)), {}, "outside the nodes after its parent"),
    "a tree with a cycle": (edit("target_left", at(0, 0)), {}, "(a cycle?)"),  # the root its own child
    "split on a feature outside": (edit("gaps_feature", at(0, 999)), {}, "splits on a feature outside"),
    "NaN leaf value": (edit("source_value", at(-1, np.nan)), {}, "NaN or infinite leaf value"),
    "infinite leaf value": (edit("source_value", at(-1, np.inf)), {}, "NaN or infinite leaf value"),
    "threshold above 1": (_threshold(1.5), {}, "kinds.source.threshold = 1.5 is out of range"),
    "threshold below 0": (_threshold(-0.1), {}, "kinds.source.threshold = -0.1 is out of range"),
    "threshold NaN": (_threshold(float("nan")), {}, "kinds.source.threshold"),
    "member missing": (_missing, {}, "missing: gaps_value.npy"),
    "member changed, hash not": (
        edit("gaps_value", at(0, 5.0)),
        {"rehash": False},
        "does not match its sha256",
    ),
    "member named ../evil.npy": (_dotdot, {}, "is not a plain .npy name"),
    "declared 1 TB": (_huge, {}, "is not a size of at most"),
    "compressed member": (lambda members, manifest: None, {"compress": True}, "is compressed"),
    "manifest not JSON": (_not_json, {}, "manifest.json is not JSON"),
    "manifest 100,000 deep": (_deep, {}, "manifest.json is not JSON"),
    "wrong dtype": (edit("target_feature", lambda v: v.astype("<f8")), {}, "is an array of <f8, not <i8"),
    "float32 array": (edit("target_value", lambda v: v.astype("<f4")), {}, "dtype is not one of"),
    "wrong shape": (edit("target_threshold", lambda v: v[:-1]), {}, "has shape"),
    "tree sizes that do not add up": (edit("gaps_sizes", at(0, 10**6)), {}, "has shape"),
    "IBM1 entry outside its vocabulary": (edit("s2t_cols", at(0, 10**6)), {}, "outside its vocabularies"),
    "IBM1 probability above 1": (edit("t2s_probs", at(0, 2.0)), {}, "outside [0, 1]"),
    "rate counts bad > seen": (edit("rate_mt_word_bad", at(0, 10**6)), {}, "0 <= bad <= seen"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_hostile_word_model_is_refused_in_one_line(case, model_file, tmp_path, capsys):
    change, options, pattern = CASES[case]
    bad = tampered(model_file, tmp_path / "bad.qwords", change, **options)
    refused(bad, tmp_path, capsys, pattern)


def _drop_crf_member(members: dict[str, bytes], manifest: dict) -> None:
    """Both the member and its manifest entry gone: the archive is consistent, the model is not."""
    del members["target_crf_transition.npy"]
    del manifest["members"]["target_crf_transition.npy"]


def _learner(value: object) -> Change:
    return manifest_edit(lambda m: m["kinds"]["target"].__setitem__("learner", value))


CRF_CASES = {
    "CRF transition weight out of range": (
        edit("target_crf_transition", at((0, 1), 1e5)),
        "target_crf_transition: out-of-range transition weights",
    ),
    "CRF start weight out of range": (
        edit("gaps_crf_start", at(1, -2e4)),
        "gaps_crf_start: out-of-range start weights",
    ),
    "CRF emission weight out of range": (
        edit("source_crf_emission", at(0, 1e300)),
        "source_crf_emission: out-of-range emission weights",
    ),
    "CRF NaN transition weight": (
        edit("target_crf_transition", at((1, 1), np.nan)),
        "target_crf_transition holds NaN or infinite values",
    ),
    "CRF infinite bias": (edit("gaps_crf_bias", at(0, -np.inf)), "gaps_crf_bias holds NaN or infinite"),
    "CRF transitions of the wrong shape": (
        edit("target_crf_transition", lambda v: np.zeros((3, 3))),
        "target_crf_transition has shape (3, 3), not (2, 2)",
    ),
    "CRF emission one weight short": (
        edit("source_crf_emission", lambda v: v[:-1]),
        "source_crf_emission has shape",
    ),
    "CRF transitions as integers": (
        edit("target_crf_transition", lambda v: v.astype("<i8")),
        "target_crf_transition is an array of <i8, not <f8",
    ),
    "CRF transitions as float32": (
        edit("target_crf_transition", lambda v: v.astype("<f4")),
        "dtype is not one of",
    ),
    "CRF transitions big-endian": (
        edit("target_crf_transition", lambda v: v.astype(">f8")),
        "dtype is not one of",
    ),
    "CRF column scale 0": (edit("gaps_crf_scale", at(0, 0.0)), "gaps_crf_scale: out-of-range column scales"),
    "CRF missing-indicator column outside": (
        edit("gaps_crf_missing", at(-1, 10**6)),
        "gaps_crf_missing is not increasing column indices",
    ),
    "CRF member missing for a kind declaring crf": (_drop_crf_member, "lacks 'target_crf_transition'"),
    "a kind declaring an unknown learner": (
        _learner("svm"),
        "kinds.target.learner = 'svm' is not one of hgb, crf",
    ),
    "a kind declaring no learner but CRF keys": (
        manifest_edit(lambda m: m["kinds"]["target"].pop("learner")),
        "kinds.target is not a baseline, threshold, iterations, columns",
    ),
    "a kind declaring hgb over CRF arrays": (_learner("hgb"), "kinds.target is not baseline"),
}


@pytest.mark.parametrize("case", sorted(CRF_CASES))
def test_a_hostile_crf_word_model_is_refused_in_one_line(case, crf_model_file, tmp_path, capsys):
    change, pattern = CRF_CASES[case]
    bad = tampered(crf_model_file, tmp_path / "bad.qwords", change)
    refused(bad, tmp_path, capsys, pattern)


def test_the_untouched_crf_model_tags(crf_model_file, tmp_path):
    """The CRF cases' model itself loads and tags: each refusal comes from its one change."""
    src = write_lines(tmp_path / "s.txt", ["the red cat runs ."])
    mt = write_lines(tmp_path / "m.txt", ["the red CAT runs ."])
    out = tmp_path / "tags.jsonl"
    assert main(predict_words_args(crf_model_file, src, mt, out)) == 0
    probability = json.loads(out.read_text())["mt_bad_probability"]
    assert probability[1] > probability[0]  # "red" is BAD in training


def test_a_file_that_is_no_zip_is_refused(tmp_path, capsys):
    bad = tmp_path / "bad.qwords"
    bad.write_bytes(b"\x80\x04 not a zip" * 100)
    refused(bad, tmp_path, capsys, "cannot read the word model")


def test_the_untouched_model_tags(model_file, tmp_path):
    """The cases' model itself loads and tags: each refusal comes from its one change."""
    src = write_lines(tmp_path / "s.txt", ["the red cat runs ."])
    mt = write_lines(tmp_path / "m.txt", ["the red CAT runs ."])
    out = tmp_path / "tags.jsonl"
    assert main(predict_words_args(model_file, src, mt, out)) == 0
    row = json.loads(out.read_text())
    probability = row["mt_bad_probability"]
    assert probability[1] > probability[0] and len(row["gap_tags"]) == 6  # "red" is BAD in training


@pytest.mark.parametrize(
    ("tags", "line", "pattern"),
    [
        ("OK OK OK OK OK OK OK\nOK OK OK OK OK\n", 2, "5 tags where 2N+1 = 7"),
        ("OK OK OK OK OK OK OK\nOK OK OK ok OK OK OK\n", 2, "unknown tag 'ok'"),
    ],
)
def test_training_tags_with_a_wrong_count_or_an_unknown_tag(tmp_path, capsys, tags, line, pattern):
    for split in ("train", "dev"):
        write_lines(tmp_path / f"{split}.src", ["a b c", "d e f"])
        write_lines(tmp_path / f"{split}.mt", ["x y z", "u v w"])
        write_lines(tmp_path / f"{split}.source_tags", ["OK OK OK", "OK BAD OK"])
        (tmp_path / f"{split}.tags").write_text(tags)
    config = tmp_path / "words.toml"
    config.write_text(
        "".join(
            f'[words.{s}]\nsrc = "{s}.src"\nmt = "{s}.mt"\ntags = "{s}.tags"\n'
            f'source_tags = "{s}.source_tags"\n'
            for s in ("train", "dev")
        )
    )
    assert main(["run", str(config), "--output-dir", str(tmp_path / "run"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"train.tags:{line}" in err and pattern in err
    assert not (tmp_path / "run").exists()


# ---- the further word feature families' members (qe.wordmodel.familystate): n-gram arrays of the lm
# family (a KenLM model as checked arrays, never a binary), the edits family's pair rates, the sentence
# family's ridges, and the manifest's families / languages tables.


@pytest.fixture(scope="module")
def family_model_file(tmp_path_factory) -> Path:
    from qe.wordmodel.families import resolve

    if not has_kenlm_tools("lmplz"):
        pytest.skip("KenLM's lmplz is not built (scripts/install_kenlm.sh)")
    train = toy(200, 0)
    featurizer = WordFeaturizer(
        families=resolve(["core", "lm", "edits", "sentence"], False), languages=("en", "en")
    )
    tagger = WordTagger(max_iter=5, min_samples_leaf=5).fit(
        featurizer.fit_transform(train), tag_labels(train)
    )
    path = tmp_path_factory.mktemp("hostile-word-families") / "model.qwords"
    save_word_model(path, featurizer, tagger, {})
    return path


def _family_numbers(name: str, value) -> Change:
    return manifest_edit(lambda m: m["families"].__setitem__(name, value))


def _unlisted_member(members: dict[str, bytes], manifest: dict) -> None:
    members["fam_spelling_x.npy"] = members["fam_sentence_mean.npy"]
    manifest["members"]["fam_spelling_x.npy"] = manifest["members"]["fam_sentence_mean.npy"]


def _lm_member_dropped(members: dict[str, bytes], manifest: dict) -> None:
    del members["fam_lm_mt_3_probs.npy"]
    del manifest["members"]["fam_lm_mt_3_probs.npy"]


FAMILY_CASES = {
    "lm n-gram word index outside the vocabulary": (
        edit("fam_lm_mt_2_grams", at(0, 10**6)),
        {},
        "outside the vocabulary",
    ),
    "lm log10 probability above 0": (edit("fam_lm_src_1_probs", at(0, 5.0)), {}, "above 0"),
    "lm NaN back-off weight": (edit("fam_lm_mt_1_backoffs", at(0, np.nan)), {}, "NaN or infinite"),
    "lm n-grams of the wrong width": (
        edit("fam_lm_mt_3_grams", lambda v: v[:, :2].copy()),
        {},
        "has shape",
    ),
    "lm n-gram twice": (
        edit("fam_lm_mt_2_grams", lambda v: np.vstack([v[:1], v[:1], v[2:]])),
        {},
        "twice",
    ),
    "lm member dropped from zip and manifest": (_lm_member_dropped, {}, "not the arrays of an order-3"),
    "lm order 40": (_family_numbers("lm", {"order": 40}), {}, "families.lm.order = 40 is out of range"),
    "unknown family in the manifest": (
        _family_numbers("kenlm_binary", {"path": "/tmp/x.bin"}),
        {},
        "which this qe does not know",
    ),
    "spelling dictionary named as a path": (
        _family_numbers("spelling", {"src": "../../etc/passwd", "mt": "de_DE"}),
        {},
        "families.spelling.src is not a dictionary name",
    ),
    "pseudoref pair with a shell word": (
        _family_numbers("pseudoref", {"pair": "eng-spa; rm -rf /"}),
        {},
        "not an Apertium pair name",
    ),
    "languages not codes": (
        manifest_edit(lambda m: m.__setitem__("languages", ["en", "$(x)"])),
        {},
        "languages is not two language codes",
    ),
    "edits counts bad > seen": (edit("fam_edits_mt_pair_bad", at(0, 10**6)), {}, "0 <= bad <= seen"),
    "sentence scale of 0": (edit("fam_sentence_scale", at(0, 0.0)), {}, "not positive"),
    "sentence weights NaN": (edit("fam_sentence_weights", at(0, np.nan)), {}, "NaN or infinite"),
    "member of a family not listed": (_unlisted_member, {}, "holds arrays a word model does not"),
}


@pytest.mark.parametrize("case", sorted(FAMILY_CASES))
def test_a_hostile_family_member_is_refused_in_one_line(case, family_model_file, tmp_path, capsys):
    change, options, pattern = FAMILY_CASES[case]
    bad = tampered(family_model_file, tmp_path / "bad.qwords", change, **options)
    refused(bad, tmp_path, capsys, pattern)


def test_the_untouched_family_model_tags(family_model_file, tmp_path):
    src = write_lines(tmp_path / "s.txt", ["the red cat runs ."])
    mt = write_lines(tmp_path / "m.txt", ["the red CAT runs ."])
    out = tmp_path / "tags.jsonl"
    assert main(predict_words_args(family_model_file, src, mt, out)) == 0
    assert len(json.loads(out.read_text())["gap_tags"]) == 6
