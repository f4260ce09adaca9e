"""Speed of qe.evaluation.textmetrics' TER, the pseudoref family and qe.text.fastmoses on the 2,254 WMT12
pairs, one run.

- TER: the MT output against the reference translation (the stand-in for a pseudo-reference),
  whitespace collapsed as the pseudoref family does, with ``qe.evaluation.textmetrics.ter.sentence_ter`` and
  with sacreBLEU's ``TER().sentence_score``; ``ter_identical`` counts the pairs whose scores are
  equal (as floats), case-insensitive and case-sensitive, out of 2 x 2,254;
- tokenization: every WMT12 sentence (source in English; MT, post-edit, reference in Spanish) with
  ``FastMosesTokenizer.tokenize`` and sacremoses' ``MosesTokenizer.tokenize(escape=False)``, each
  tokenizer built and warmed up beforehand, no memoisation;
- pseudoref: ``PseudoRefFamily().extract`` on all pairs with the references as pseudo-references.

Usage: python benchmarks/text_speed.py [--data-dir DIR]
Prints ``{"ter_pairs_per_second", "ter_identical", "sacrebleu_ter_pairs_per_second",
"tokenize_sentences_per_second": {"ours", "sacremoses"}, "pseudoref_pairs_per_second"}``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from sacrebleu.metrics import TER  # noqa: E402
from sacremoses import MosesTokenizer  # noqa: E402

from qe.data import load_registered, resolve_data_dir  # noqa: E402
from qe.evaluation.textmetrics.ter import sentence_ter  # noqa: E402
from qe.features.base import Pairs  # noqa: E402
from qe.features.pseudoref import PseudoRefFamily  # noqa: E402
from qe.text.fastmoses import FastMosesTokenizer  # noqa: E402


def _rate(count: int, seconds: float) -> float:
    return round(count / seconds, 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", default=None)
    args = parser.parse_args()
    root = resolve_data_dir(args.data_dir)
    splits = [load_registered("wmt12-en-es", split, root) for split in ("train", "test")]
    src = [s for d in splits for s in d.src]
    mt = [s for d in splits for s in d.mt]
    refs = [s for d in splits for s in d.references]
    post_edits = [s for d in splits for s in d.post_edits]
    pairs = [(" ".join(h.split()), " ".join(r.split())) for h, r in zip(mt, refs, strict=True)]

    identical = 0
    ours_seconds = theirs_seconds = 0.0
    for case_sensitive in (False, True):
        start = time.perf_counter()
        ours = [sentence_ter(h, r, case_sensitive) for h, r in pairs]
        ours_seconds += time.perf_counter() - start
        metric = TER(case_sensitive=case_sensitive)
        start = time.perf_counter()
        theirs = [metric.sentence_score(h, [r]).score for h, r in pairs]
        theirs_seconds += time.perf_counter() - start
        identical += sum(a == b for a, b in zip(ours, theirs, strict=True))

    sentences = [("en", s.strip()) for s in src] + [("es", s.strip()) for s in mt + post_edits + refs]
    tokenize = {}
    for name, build, call in (
        ("ours", FastMosesTokenizer, lambda tok, s: tok.tokenize(s)),
        ("sacremoses", lambda lang: MosesTokenizer(lang=lang), lambda tok, s: tok.tokenize(s, escape=False)),
    ):
        tokenizers = {lang: build(lang) for lang in ("en", "es")}
        for tokenizer in tokenizers.values():
            call(tokenizer, "Warm up, Mr. Smith.")
        start = time.perf_counter()
        for lang, sentence in sentences:
            call(tokenizers[lang], sentence)
        tokenize[name] = _rate(len(sentences), time.perf_counter() - start)

    family = PseudoRefFamily()
    batch = Pairs(ids=[str(i) for i in range(len(mt))], src=src, mt=mt, extra={"pseudo_ref": refs})
    family.extract(Pairs(ids=["w"], src=src[:1], mt=mt[:1], extra={"pseudo_ref": refs[:1]}))
    start = time.perf_counter()
    family.extract(batch)
    pseudoref_seconds = time.perf_counter() - start

    print(
        json.dumps(
            {
                "ter_pairs_per_second": _rate(2 * len(pairs), ours_seconds),
                "ter_identical": f"{identical}/{2 * len(pairs)}",
                "sacrebleu_ter_pairs_per_second": _rate(2 * len(pairs), theirs_seconds),
                "tokenize_sentences_per_second": tokenize,
                "pseudoref_pairs_per_second": _rate(len(pairs), pseudoref_seconds),
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
