"""spaCy with numpy's BLAS (qe's default) against thinc's bundled BLIS: same annotations, less time.

Tags ``--pairs`` distinct English-Spanish pairs (``benchmarks/extraction_scaling.py``'s corpus
pairs) with the tagger-only pipelines ``lm`` / ``ibm1`` use (pre-tokenized ``Doc``s, as
``qe.resources.pos`` hands them), and parses the first ``--parse-pairs`` of them with the full
pipelines ``linguistic`` uses, once with BLIS and once with numpy's BLAS, in this process.

Prints ``{"<pipeline>": {"sentences", "tokens", "blis_seconds", "numpy_seconds", "speedup",
"sentences_differing", "tokens_differing"}, ...}``: for the taggers a token differs when its UPOS
tag does; for the parsers when its tag, head or dependency label does.

Usage: python benchmarks/spacy_blas.py [--pairs 20000] [--parse-pairs 2000]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from extraction_scaling import distinct_pairs  # noqa: E402

from qe.resources.pos import pipeline_name  # noqa: E402
from qe.text import nlp  # noqa: E402

TAGGER_EXCLUDE = ["parser", "ner", "lemmatizer", "senter"]


def _load(name: str, exclude: list[str], blis: bool):
    import spacy

    pipeline = spacy.load(nlp.resolve_pipeline(name), exclude=exclude)
    return pipeline if blis else nlp.use_numpy_blas(pipeline)


def _annotate(pipeline, sentences: list[str], parse: bool) -> tuple[list[list[tuple]], float]:
    from spacy.tokens import Doc

    start = time.perf_counter()
    if parse:
        docs = pipeline.pipe(sentences, batch_size=256)
        out = [[(t.pos_, t.head.i, t.dep_) for t in doc] for doc in docs]
    else:
        docs = pipeline.pipe((Doc(pipeline.vocab, words=s.split()) for s in sentences), batch_size=1000)
        out = [[(t.pos_,) for t in doc] for doc in docs]
    return out, time.perf_counter() - start


def compare(name: str, sentences: list[str], parse: bool) -> dict:
    """Annotate ``sentences`` with BLIS and with numpy's BLAS; times and differences."""
    exclude = [] if parse else TAGGER_EXCLUDE
    theirs, blis_seconds = _annotate(_load(name, exclude, blis=True), sentences, parse)
    ours, numpy_seconds = _annotate(_load(name, exclude, blis=False), sentences, parse)
    return {
        "sentences": len(sentences),
        "tokens": sum(map(len, theirs)),
        "blis_seconds": round(blis_seconds, 1),
        "numpy_seconds": round(numpy_seconds, 1),
        "speedup": round(blis_seconds / numpy_seconds, 2),
        "sentences_differing": sum(a != b for a, b in zip(theirs, ours, strict=True)),
        "tokens_differing": sum(
            x != y for a, b in zip(theirs, ours, strict=True) for x, y in zip(a, b, strict=True)
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", type=int, default=20_000)
    parser.add_argument("--parse-pairs", type=int, default=2_000)
    args = parser.parse_args()
    src, mt = distinct_pairs(max(args.pairs, args.parse_pairs))
    report = {}
    for lang, sentences in (("en", src), ("es", mt)):
        name = pipeline_name(lang)
        report[f"{name} (tagger)"] = compare(name, sentences[: args.pairs], parse=False)
        print(json.dumps(report, indent=1), file=sys.stderr)
        report[f"{name} (full)"] = compare(name, sentences[: args.parse_pairs], parse=True)
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
