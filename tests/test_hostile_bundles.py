"""Hostile resource bundles: member paths stay inside the bundle, member files match their sha256,
and no loader echoes file content in an error."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import pytest

import qe.bundle.runtime as bundle_runtime
from qe.bundle import ResourceBundle, clear_loaded_members
from qe.cli import main
from qe.infra.errors import QEInputError
from qe.resources.edits import EditModel
from qe.resources.ngrams import NgramCounts, load_truecase_counts
from qe.words.ibm1 import IBM1Table
from tests.helpers import write_lines
from tests.helpers.bundles import build, needs_kenlm, small_config

SECRET = "SECRET-TOKEN-1234"
# A file outside the bundle whose first line an IBM1 loader that echoes its input would print.
SECRET_LINE = f"house casa {SECRET}"


@pytest.fixture(autouse=True)
def _fresh_process_caches():
    clear_loaded_members()
    bundle_runtime.clear_verified_members()
    yield
    clear_loaded_members()
    bundle_runtime.clear_verified_members()


@pytest.fixture()
def bundle_dir(tmp_path, small_data):
    config = small_config(ibm1={"iterations": 3, "directions": ["s2t", "t2s"], "min_prob": 0.0})
    build(tmp_path, small_data, config)
    return tmp_path / "out"


def _set_member_file(bundle: Path, member: str, value: str) -> None:
    manifest_path = bundle / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["members"][member]["file"] = value
    manifest_path.write_text(json.dumps(manifest))


def _features(tmp_path: Path, bundle: Path, capsys) -> tuple[int, str]:
    src = write_lines(tmp_path / "in.en", ["The house is small ."])
    mt = write_lines(tmp_path / "in.es", ["La casa es pequeña ."])
    argv = ["features", "--src", str(src), "--mt", str(mt), "--resources", str(bundle)]
    capsys.readouterr()
    code = main([*argv, "--families", "ibm1", "--out", str(tmp_path / "f.tsv"), "--quiet"])
    return code, capsys.readouterr().err.strip()


# ---------------------------------------------------------------------------------- 2. member paths


@pytest.mark.parametrize("kind", ["absolute", "dotdot", "symlink"])
def test_member_paths_leading_out_of_the_bundle_are_refused(tmp_path, bundle_dir, capsys, kind):
    secret = write_lines(tmp_path / "secret.txt", [SECRET_LINE])
    if kind == "absolute":
        _set_member_file(bundle_dir, "ibm1.s2t", str(secret))
    elif kind == "dotdot":
        _set_member_file(bundle_dir, "ibm1.s2t", os.path.relpath(secret, bundle_dir))
    else:
        (bundle_dir / "ibm1.s2t.npz").unlink()
        (bundle_dir / "ibm1.s2t.npz").symlink_to(secret)
    code, err = _features(tmp_path, bundle_dir, capsys)
    assert code == 2
    assert len(err.splitlines()) == 1 and "'ibm1.s2t'" in err and "inside the bundle" in err
    assert SECRET not in err
    with pytest.raises(QEInputError, match=r"ibm1\.s2t") as info:
        ResourceBundle(bundle_dir).get("ibm1.s2t")
    assert SECRET not in str(info.value)


def test_etc_passwd_as_a_member_file_is_refused_without_reading_it(bundle_dir, tmp_path, capsys):
    for value in ("/etc/passwd", "../../../../../../../../etc/passwd"):
        _set_member_file(bundle_dir, "ibm1.t2s", value)
        code, err = _features(tmp_path, bundle_dir, capsys)
        assert code == 2 and "'ibm1.t2s'" in err and "root:" not in err


def _link(member: Path, target: Path) -> None:
    """Replace a member file by a symbolic link to ``target`` holding the same bytes."""
    target.write_bytes(member.read_bytes())
    member.unlink()
    member.symlink_to(target)


def test_a_link_to_the_same_table_loads_inside_the_bundle_and_is_refused_outside(tmp_path, bundle_dir):
    """Same bytes (the sha256 matches): only where the link leads decides."""
    member = bundle_dir / "ibm1.s2t.npz"
    _link(member, bundle_dir / "copy.txt")
    assert ResourceBundle(bundle_dir)["ibm1.s2t"].translations("cat")
    clear_loaded_members()
    _link(member, tmp_path / "outside.txt")
    with pytest.raises(QEInputError, match=r"'ibm1\.s2t'.*inside the bundle"):
        ResourceBundle(bundle_dir).get("ibm1.s2t")


def test_loaders_never_echo_file_content(tmp_path):
    """Errors name the file and line, never the bytes found there (a bundle may name any file)."""
    cases = []
    ibm1 = write_lines(tmp_path / "ibm1.txt", [SECRET_LINE])
    cases.append(lambda: IBM1Table.load(ibm1))
    outside = write_lines(tmp_path / "ibm1-range.txt", ["house casa 1234567.5"])
    cases.append(lambda: IBM1Table.load(outside))
    plain = write_lines(tmp_path / "plain.gz", [SECRET_LINE])
    cases.append(lambda: NgramCounts.load(plain))
    header = json.dumps({"format": "qe-ngram-counts/1"})
    for body in ([f"\\{SECRET}-grams:"], ["\\1-grams:", f"house\t{SECRET}"]):
        table = tmp_path / f"ngrams{len(cases)}.tsv.gz"
        table.write_bytes(gzip.compress(("\n".join([header, *body]) + "\n").encode()))
        cases.append(lambda table=table: NgramCounts.load(table))
    truecase = write_lines(tmp_path / "truecase.en", [f"the ({SECRET})"])
    cases.append(lambda: load_truecase_counts(truecase))
    edits = tmp_path / "edits.json.gz"
    edits.write_bytes(gzip.compress(json.dumps({"format": SECRET}).encode()))
    cases.append(lambda: EditModel.load(edits))
    for case in cases:
        with pytest.raises(QEInputError) as info:
            case()
        assert SECRET not in str(info.value) and "1234567" not in str(info.value)


@needs_kenlm
def test_kenlm_loader_never_echoes_file_content(tmp_path):
    from qe.resources.lm import LanguageModel

    text = write_lines(tmp_path / "not-a-model.arpa", [SECRET_LINE, "more"])
    with pytest.raises(QEInputError, match="not a valid KenLM model") as info:
        LanguageModel(text).log10_prob(["house"])
    assert SECRET not in str(info.value) and info.value.path == str(text)


# ---------------------------------------------------------------------------------- 3. member sha256


def test_a_swapped_member_is_refused(tmp_path, bundle_dir, capsys):
    """Two valid IBM1 tables: swapping them gave silently different scores."""
    s2t, t2s = bundle_dir / "ibm1.s2t.npz", bundle_dir / "ibm1.t2s.npz"
    data_s2t, data_t2s = s2t.read_bytes(), t2s.read_bytes()
    s2t.write_bytes(data_t2s)
    t2s.write_bytes(data_s2t)
    code, err = _features(tmp_path, bundle_dir, capsys)
    assert code == 2 and len(err.splitlines()) == 1
    assert "sha256" in err and ("'ibm1.s2t'" in err or "'ibm1.t2s'" in err)
    with pytest.raises(QEInputError, match=r"'ibm1\.s2t'.*sha256"):
        ResourceBundle(bundle_dir).get("ibm1.s2t")


def test_a_truncated_member_is_refused(tmp_path, bundle_dir, capsys):
    table = bundle_dir / "ibm1.s2t.npz"
    data = table.read_bytes()
    table.write_bytes(data[: len(data) // 2])
    code, err = _features(tmp_path, bundle_dir, capsys)
    assert code == 2 and len(err.splitlines()) == 1 and "'ibm1.s2t'" in err and "sha256" in err


def test_a_swapped_ngram_table_is_refused(bundle_dir):
    ngrams, unigrams = bundle_dir / "ngrams.src.npz", bundle_dir / "unigrams.src.npz"
    ngrams.write_bytes(unigrams.read_bytes())
    with pytest.raises(QEInputError, match=r"'ngrams\.src'.*sha256") as info:
        ResourceBundle(bundle_dir).get("ngrams.src")
    assert info.value.path.endswith("ngrams.src.npz")


def test_each_member_is_hashed_once_per_process_and_file_version(bundle_dir, monkeypatch):
    calls = []
    real = bundle_runtime.sha256_file
    monkeypatch.setattr(bundle_runtime, "sha256_file", lambda path: calls.append(path) or real(path))
    for _ in range(3):  # new bundle objects (as a worker gets per batch) and options: hashed once
        bundle = ResourceBundle(bundle_dir)
        bundle.get("ngrams.src")
        bundle.get("ngrams.src", min_count=2)
    assert len(calls) == 1
    member = bundle_dir / "ngrams.src.npz"
    stat = member.stat()
    os.utime(member, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))  # a new file version
    ResourceBundle(bundle_dir).get("ngrams.src")
    assert len(calls) == 2


def test_a_manifest_without_a_member_sha256_is_refused(bundle_dir):
    manifest = json.loads((bundle_dir / "manifest.json").read_text())
    del manifest["members"]["ibm1.s2t"]["sha256"]
    (bundle_dir / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(QEInputError, match=r"'ibm1\.s2t'.*sha256"):
        ResourceBundle(bundle_dir).get("ibm1.s2t")


@pytest.mark.parametrize(
    ("field", "value", "problem"),
    [
        ("members", ["ibm1.s2t"], "members = ['ibm1.s2t']: expected a table"),
        ("members", {"ibm1.s2t": "ibm1.s2t.npz"}, "members.ibm1.s2t = 'ibm1.s2t.npz': expected a table"),
        ("members", {"lm.src": {"kind": 3}}, "members.lm.src.kind = 3: expected a string"),
        ("text", 7, "text = 7: expected a table"),
        ("languages", "en-es", "languages = 'en-es': expected a table"),
        (
            "format",
            "qe-resource-bundle/0",
            "format = 'qe-resource-bundle/0': expected 'qe-resource-bundle/1'",
        ),
    ],
)
def test_a_manifest_of_the_wrong_shape_is_one_line(tmp_path, bundle_dir, capsys, field, value, problem):
    """These ended in an AttributeError / TypeError traceback."""
    manifest_path = bundle_dir / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest[field] = value
    manifest_path.write_text(json.dumps(manifest))
    code, err = _features(tmp_path, bundle_dir, capsys)
    assert code == 2 and len(err.splitlines()) == 1
    assert err == f"qe: error: {manifest_path}: {problem}"  # file: key.path = value: expected ...


def test_a_member_that_is_not_a_regular_file_says_so(tmp_path, bundle_dir, capsys):
    (bundle_dir / "ibm1.s2t.npz").unlink()
    (bundle_dir / "ibm1.s2t.npz").mkdir()
    code, err = _features(tmp_path, bundle_dir, capsys)
    assert code == 2 and "is not a regular file" in err


def test_cross_fitting_folds_without_their_map_or_sharing_a_file_are_refused(tmp_path, bundle_dir, capsys):
    """Deleting the cross_fit map scored training pairs in-sample; a fold pointing at another fold's
    file scored them with tables that saw them. Both ran with exit 0."""
    manifest_path = bundle_dir / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    entry = manifest["members"]["ibm1.s2t"]
    entry["folds"] = [{"file": entry["file"], "sha256": entry["sha256"]}] * 2
    manifest_path.write_text(json.dumps(manifest))
    code, err = _features(tmp_path, bundle_dir, capsys)
    assert code == 2 and err.endswith(
        "manifest.json: members.cross_fit = null: expected the cross-fitting map of the members' folds"
    )
    manifest["members"]["cross_fit"] = {"kind": "cross_fit", "file": "cross_fit.json.gz"}
    manifest_path.write_text(json.dumps(manifest))
    code, err = _features(tmp_path, bundle_dir, capsys)
    shared = f"members.ibm1.s2t.folds[1].file = {entry['file']!r}: expected a file no other fold of ibm1.s2t"
    assert code == 2 and err.endswith(f"manifest.json: {shared} uses")


def test_a_bundle_config_naming_a_dataset_of_another_pair_is_refused(tmp_path):
    """An 'es' LM trained on the English post-edits of mlqe-pe/et-en built with exit 0."""
    from qe.bundle import read_bundle_config

    config = tmp_path / "b.toml"
    config.write_text(
        '[languages]\nsrc = "en"\ntgt = "es"\n[corpora.qe]\ndataset = "mlqe-pe/et-en"\n'
        '[lm.tgt]\nside = "tgt"\norder = 3\n'
    )
    with pytest.raises(
        QEInputError,
        match=r"corpora\.qe\.dataset = 'mlqe-pe/et-en': expected a dataset of the bundle's languages en-es",
    ) as info:
        read_bundle_config(config)
    assert info.value.path == str(config)


def test_a_bundle_name_never_leads_out_of_the_bundle_folder(tmp_path, capsys):
    config = tmp_path / "b.toml"
    config.write_text(
        'name = "../../escaped"\n[languages]\nsrc = "en"\ntgt = "es"\n[mt2]\npair = "eng-spa"\n'
    )
    assert main(["resources", "build", str(config), "--quiet"]) == 2
    assert "cannot name a folder under models/resources" in capsys.readouterr().err
    assert not (tmp_path.parent.parent / "escaped").exists()


def test_edit_statistics_learned_from_the_evaluation_data_are_refused(tmp_path, capsys):
    """[edits] files equal to the test set built with exit 0: the statistics saw the test labels."""
    data = tmp_path / "data"
    data.mkdir()
    src = ["The house is small .", "The cat is big .", "A small dog .", "The dog is old ."] * 3
    write_lines(data / "t.en", src)
    write_lines(data / "t.es", [f"traducción {i} ." for i in range(12)])
    write_lines(data / "t.pe", [f"traducción {i} buena ." for i in range(12)])
    write_lines(data / "t.lab", [str(i % 5 / 4) for i in range(12)])
    config = tmp_path / "b.toml"
    config.write_text(
        '[languages]\nsrc = "en"\ntgt = "es"\n[leakage]\neval_files = ["t.en"]\n'
        '[edits]\nsrc = "t.en"\nmt = "t.es"\npost_edits = "t.pe"\nlabels = "t.lab"\nfolds = 2\n'
    )
    argv = ["resources", "build", str(config), "--output", str(tmp_path / "b"), "--data-dir", str(data)]
    assert main([*argv, "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert (
        "[edits] src: corpus shares" in err and f"{data / 't.en'}:1" in err and not (tmp_path / "b").exists()
    )


def test_a_corpus_with_the_same_file_on_both_sides_is_refused(tmp_path):
    """It built an en -> en IBM1 with exit 0."""
    from qe.bundle import read_bundle_config

    config = tmp_path / "b.toml"
    config.write_text(
        '[languages]\nsrc = "en"\ntgt = "es"\n[corpora.c]\nsrc = "c.txt"\ntgt = "c.txt"\n[ibm1]\n'
    )
    with pytest.raises(QEInputError, match=r"corpora.c.tgt = 'c.txt': expected another file than src"):
        read_bundle_config(config)


def test_corpus_lines_with_nothing_visible_are_blank(tmp_path):
    from qe.infra.io import read_text_lines

    path = tmp_path / "c.txt"
    path.write_text("una casa\n\u200b\u200b\n\x00\nel gato\n", encoding="utf-8")
    assert read_text_lines(path) == ["una casa", "", "", "el gato"]
