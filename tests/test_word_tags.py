"""Word-level tags: the shift-free TER alignment worked by hand, the 2N+1 gap convention, the source
rule on a hand-made alignment, the reader's refusals of hostile files, and real MLQE-PE lines."""

from __future__ import annotations

import pytest

from qe.data import DATASETS
from qe.data.sets.wmt20_mlqe import MLQE_PAIRS
from qe.infra.errors import QEInputError
from qe.words.align import align_to_post_edit, edit_distance_matrix
from qe.words.derive import derive_tags
from qe.words.files import load_word_level, read_word_level
from qe.words.tags import SentenceTags, split_interleaved

B, G = "BAD", "OK"  # G for good: ruff refuses a variable named O (E741)


def _tags(mt: str, pe: str, src: str = "", alignment=(), **kw) -> SentenceTags:
    return derive_tags(src.split(), mt.split(), pe.split(), alignment, **kw)


# --- the alignment, by hand -------------------------------------------------------------------------


def test_edit_distance_matrix_by_hand():
    # "a b" -> "a c b": row 0 is 0 1 2 3; D[1] = 1 0 1 2; D[2] ("a b" vs "a", "a c", "a c b") = 2 1 1 1
    assert edit_distance_matrix(["a", "b"], ["a", "c", "b"]).tolist() == [
        [0, 1, 2, 3],
        [1, 0, 1, 2],
        [2, 1, 1, 1],
    ]


def test_substitution_makes_the_word_bad_and_no_gap():
    tags = _tags("the cat sat", "the dog sat")
    assert tags.mt == (G, B, G)
    assert tags.gaps == (G, G, G, G)


def test_deletion_makes_the_word_bad():
    tags = _tags("the big cat sat", "the cat sat")
    assert tags.mt == (G, B, G, G)
    assert tags.gaps == (G,) * 5


@pytest.mark.parametrize(
    ("pe", "gaps"),
    [
        ("oh a b c", (B, G, G, G)),  # inserted before the first word: gap 0
        ("a b oh c", (G, G, B, G)),  # between b and c: gap 2
        ("a b c oh", (G, G, G, B)),  # after the last word: gap N
        ("a oh oh b c", (G, B, G, G)),  # two words inserted in one place: one BAD gap
    ],
)
def test_insertions_tag_the_gap_where_they_go(pe, gaps):
    tags = _tags("a b c", pe)
    assert tags.mt == (G, G, G)
    assert tags.gaps == gaps


def test_alignment_is_case_insensitive_but_a_case_change_is_a_substitution():
    # "The Cat sat" -> "the cat sat": aligned word for word case-insensitively (cost 0, no gap) ...
    edit = align_to_post_edit(["The", "Cat", "sat"], ["the", "cat", "sat"])
    assert (edit.mt_to_pe, edit.matched, edit.cost) == ((0, 1, 2), (True, True, True), 0)
    assert edit_distance_matrix(["The"], ["the"])[1, 1] == 1  # the matrix itself compares as given
    # ... but the corpus builder compares the aligned tokens as written: a case change is BAD, and a
    # source word aligned to it is BAD like any substitution's
    tags = _tags("The Cat sat", "the cat sat", "le chat", [(0, 0), (1, 1)])
    assert tags.mt == (B, B, G)
    assert tags.gaps == (G,) * 4
    assert tags.src == (B, B)
    # the case-insensitive alignment decides which word is the substitution: "Cat x" -> "cat" keeps Cat
    # on cat and deletes x (case-sensitively x would take cat and Cat be deleted), so s0 is BAD, s1 OK
    tags = _tags("Cat x", "cat", "s0 s1", [(0, 0), (1, 1)])
    assert (tags.mt, tags.src) == ((B, B), (B, G))


def test_empty_post_edit_and_empty_mt():
    everything_deleted = _tags("a b", "")
    assert everything_deleted.mt == (B, B)
    assert everything_deleted.gaps == (G, G, G)
    nothing_to_edit = _tags("", "x y")
    assert nothing_to_edit.mt == ()
    assert nothing_to_edit.gaps == (B,)
    assert align_to_post_edit([], []).cost == 0


def test_ties_put_insertions_before_the_substitution():
    # MT "x" against PE "p q": substitute and insert (cost 2) either way; reading the trace backwards
    # the substitution takes the later word (q), so p is inserted in gap 0, before x.
    edit = align_to_post_edit(["x"], ["p", "q"])
    assert (edit.mt_to_pe, edit.insertions, edit.cost) == ((1,), (1, 0), 2)
    # A deletion and a substitution tie too: "a x y" -> "a z". Backwards, y is substituted by z
    # first (diagonal preferred), then x is deleted.
    edit = align_to_post_edit(["a", "x", "y"], ["a", "z"])
    assert edit.mt_to_pe == (0, -1, 1)
    assert edit.matched == (True, False, False)


def test_the_alignment_has_no_shifts():
    # "b a" -> "a b": a shift would cost 1; without shifts it is two substitutions (or delete + insert)
    edit = align_to_post_edit(["b", "a"], ["a", "b"])
    assert edit.cost == 2
    assert _tags("b a", "a b").mt == (B, B)


# --- the 2N+1 convention ----------------------------------------------------------------------------


def test_interleaving_puts_gaps_first_and_last():
    tags = SentenceTags(mt=(B, G), gaps=(G, B, G))
    assert tags.interleaved() == (G, B, B, G, G)
    assert split_interleaved(["g0", "w0", "g1", "w1", "g2"]) == (("w0", "w1"), ("g0", "g1", "g2"))
    with pytest.raises(ValueError, match="2 MT tags need 3 gap tags"):
        SentenceTags(mt=(G, G), gaps=(G, G))


# --- the source rule --------------------------------------------------------------------------------


def test_source_words_bad_through_substituted_mt_words_only():
    # MT "w0 w1 w2 w3" -> PE "w0 X w3" costs 2 either way (w1 deleted and w2 -> X, or w1 -> X and w2
    # deleted); backwards from w3 = w3 the diagonal comes first, so w2 is substituted and w1 deleted.
    # Source s0-w0, s1-w1, s2-w2, s3-w2, s4 unaligned: s2 and s3 reach the substituted w2 and are BAD;
    # s1 reaches only the deleted w1, which does not make a source word BAD (WMT's rule).
    tags = _tags("w0 w1 w2 w3", "w0 X w3", "s0 s1 s2 s3 s4", [(0, 0), (1, 1), (2, 2), (3, 2)])
    assert tags.mt == (G, B, B, G)
    assert tags.gaps == (G,) * 5
    assert tags.src == (G, G, B, B, G)
    assert align_to_post_edit(["w0", "w1", "w2", "w3"], ["w0", "X", "w3"]).mt_to_pe == (0, -1, 1, 2)


# --- the reader and its refusals --------------------------------------------------------------------


@pytest.fixture
def files(tmp_path):
    """A valid two-sentence set: writes each file and returns the paths."""

    def write(name: str, text: str | bytes):
        path = tmp_path / name
        path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
        return path

    paths = {
        "src": write("x.src", "a b\nc\n"),
        "mt": write("x.mt", "A B\nC D\n"),
        "tags": write("x.tags", "OK OK OK BAD OK\nOK BAD OK OK OK\n"),
        "source_tags": write("x.source_tags", "OK BAD\nOK\n"),
        "alignments": write("x.al", "0-0 1-1\n0-1\n"),
        "post_edits": write("x.pe", "A Z\nC D\n"),
    }
    paths["write"] = write
    return paths


def _read(files, **override):
    args = {k: files[k] for k in ("tags", "source_tags", "alignments", "post_edits")}
    args.update(override)
    return read_word_level(files["src"], files["mt"], **args)


def test_reader_reads_a_valid_set(files):
    data = _read(files)
    assert data.mt_tags == [(G, B), (B, G)]
    assert data.gap_tags == [(G, G, G), (G, G, G)]
    assert data.src_tags == [(G, B), (G,)]
    assert data.alignments == [((0, 0), (1, 1)), ((0, 1),)]
    assert data.post_edits == [["A", "Z"], ["C", "D"]]
    only_post_edits = read_word_level(files["src"], files["mt"], post_edits=files["post_edits"])
    assert only_post_edits.mt_tags is None and only_post_edits.alignments is None


@pytest.mark.parametrize(
    ("role", "text", "line", "message"),
    [
        ("tags", "OK OK OK BAD OK\nOK BAD OK OK\n", 2, "4 tags where 2N+1 = 5"),
        ("tags", "OK OK OK BAD OK\nOK BAD OK ok OK\n", 2, "unknown tag 'ok'"),
        ("tags", "OK OK OK BAD OK\n", 2, "has 1 lines but"),
        ("source_tags", "OK BAD OK\nOK\n", 1, "3 tags where N = 2"),
        ("source_tags", "OK BAD\nGOOD\n", 2, "unknown tag 'GOOD'"),
        ("alignments", "0-0 2-1\n0-1\n", 1, "alignment 2-1 out of range: the source has 2 tokens"),
        ("alignments", "0-0 1-1\n0-2\n", 2, "alignment 0-2 out of range"),
        ("alignments", "0-0 1-1\n0:1\n", 2, "malformed alignment '0:1'"),
        ("alignments", "0-0 -1-1\n0-1\n", 1, "malformed alignment '-1-1'"),
        ("alignments", "0-0 1-1\n0-1\n0-0\n", 3, "has 3 lines but"),
        ("post_edits", "A Z\n", 2, "has 1 lines but"),
        ("tags", b"OK OK OK BAD OK\nOK BAD OK \xff OK\n", 2, "invalid UTF-8"),
        ("source_tags", b"OK BAD\n\xc3\n", 2, "invalid UTF-8"),
    ],
)
def test_reader_refuses_a_hostile_file_in_one_line_naming_file_and_line(files, role, text, line, message):
    path = files["write"](f"bad.{role}", text)
    with pytest.raises(QEInputError) as caught:
        _read(files, **{role: path})
    error = caught.value
    assert message in error.message
    assert (error.path, error.line) == (str(path), line)
    assert "\n" not in str(error) and str(error).startswith(f"{path}:{line}: ")


def test_reader_refuses_mismatched_source_and_mt(files):
    mt = files["write"]("short.mt", "A B\n")
    with pytest.raises(QEInputError, match=r"short\.mt:2: has 1 lines but .*x\.src has 2"):
        read_word_level(files["src"], mt)


# --- registration and real lines --------------------------------------------------------------------


def test_the_word_level_files_are_registered_with_the_post_editing_sets():
    for pair in MLQE_PAIRS:
        for split, files in DATASETS[f"mlqe-pe/{pair}"].splits.items():
            assert files["word_tags"].path == f"post-editing/{pair}-{split}/{split}.tags"
            assert files["source_tags"].path == f"post-editing/{pair}-{split}/{split}.source_tags"
            assert files["src_mt_alignments"].path == f"post-editing/{pair}-{split}/{split}.src-mt.alignments"
        assert "word_tags" not in DATASETS[f"mlqe-da/{pair}"].splits["dev"]


@pytest.mark.data
def test_derived_tags_equal_the_shipped_ones_on_real_lines(data_dir):
    if not (data_dir / "mlqe-pe").is_dir():
        pytest.skip("the shared data directory has no mlqe-pe folder")
    data = load_word_level("en-de", "train", data_dir)
    assert len(data) == 7000
    # line 1: the post-edit is the MT reordered nowhere, so every tag is OK, as shipped
    assert data.post_edits[0] == data.mt[0]
    first = derive_tags(data.src[0], data.mt[0], data.post_edits[0], data.alignments[0])
    assert (
        set(first.interleaved())
        == {G}
        == set(data.mt_tags[0]) | set(data.gap_tags[0]) | set(data.src_tags[0])
    )
    # line 3: "Chase schrieb" -> "schrieb Chase" (two substitutions, no shift), '" war wie ... für mich .'
    # -> '" ... für mich wie ... war .': "..." and "für" inserted before "war", which becomes "mich";
    # "für mich" at the end become "war" and a deletion. Gaps: only the one before "war".
    third = derive_tags(data.src[2], data.mt[2], data.post_edits[2], data.alignments[2])
    bad_words = [w for w, t in zip(data.mt[2], third.mt, strict=True) if t == B]
    assert bad_words == ["Chase", "schrieb", "war", "für", "mich"]
    assert [k for k, t in enumerate(third.gaps) if t == B] == [data.mt[2].index("war")]
    assert (third.mt, third.gaps) == (data.mt_tags[2], data.gap_tags[2])
