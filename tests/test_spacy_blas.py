"""spaCy's tok2vec and taggers run on numpy's BLAS (faster here) with the same annotations as BLIS."""

from __future__ import annotations

import pytest

from qe.resources.pos import pipeline_name
from qe.text import nlp

spacy = pytest.importorskip("spacy")
TAGGER_ONLY = ["parser", "ner", "lemmatizer", "senter"]


def _pipelines_installed() -> bool:
    return all(nlp.pipeline_available(pipeline_name(lang)) for lang in ("en", "es"))


pytestmark = pytest.mark.skipif(not _pipelines_installed(), reason="spaCy pipelines not installed")


def _uses_blis(pipeline, component: str) -> bool:
    return all(getattr(node.ops, "use_blis", True) for node in pipeline.get_pipe(component).model.walk())


def _annotations(pipeline, sentences: list[str], pretokenized: bool) -> list[list[tuple]]:
    from spacy.tokens import Doc

    if pretokenized:
        docs = pipeline.pipe(Doc(pipeline.vocab, words=s.split()) for s in sentences)
        return [[t.pos_ for t in doc] for doc in docs]
    return [[(t.pos_, t.head.i, t.dep_, t.ent_type_) for t in doc] for doc in pipeline.pipe(sentences)]


@pytest.mark.parametrize(("lang", "side"), [("en", "source.eng"), ("es", "target_system.spa")])
@pytest.mark.parametrize("pretokenized", [True, False], ids=["tagger", "full"])
def test_numpy_blas_gives_blis_annotations(data_dir, lang, side, pretokenized):
    sentences = (data_dir / "wmt12-qe" / "test_set" / side).read_text(encoding="utf-8").splitlines()[:150]
    exclude = TAGGER_ONLY if pretokenized else []
    resolved = nlp.resolve_pipeline(pipeline_name(lang))
    reference = spacy.load(resolved, exclude=exclude)  # thinc's default ops: BLIS
    ours = nlp.use_numpy_blas(spacy.load(resolved, exclude=exclude))
    assert _uses_blis(reference, "tok2vec") and not _uses_blis(ours, "tok2vec")
    if not pretokenized:
        assert _uses_blis(ours, "parser")  # many small products: BLIS is faster there
    assert _annotations(ours, sentences, pretokenized) == _annotations(reference, sentences, pretokenized)


def test_qe_spacy_blis_keeps_blis(monkeypatch):
    resolved = nlp.resolve_pipeline(pipeline_name("es"))
    monkeypatch.setenv("QE_SPACY_BLIS", "1")
    kept = nlp.use_numpy_blas(spacy.load(resolved, exclude=TAGGER_ONLY))
    assert _uses_blis(kept, "tok2vec")
    monkeypatch.delenv("QE_SPACY_BLIS")
    assert not _uses_blis(nlp.load_pipeline(resolved, exclude=tuple(TAGGER_ONLY)), "tok2vec")
