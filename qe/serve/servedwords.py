"""One served word model (``.qwords``) in a worker process: it tags each pair's MT words, gaps and
source words OK / BAD (``POST /v1/words``), with the very objects ``qe predict --words`` writes
(``qe.wordmodel.tagging.tag_rows``), tokens split at whitespace."""

from __future__ import annotations

import re
from typing import Any

from qe.infra.errors import QEInputError
from qe.infra.io import sha256_file
from qe.serve.names import ModelEntry
from qe.serve.served import WARM_UP, Label
from qe.wordmodel.features import KINDS, column_names
from qe.wordmodel.modelfile import load_word_model
from qe.wordmodel.tagging import MAX_TOKENS, tag_rows
from qe.words.files import WordLevelData

LABEL = Label("OK/BAD word tags", None, None)
"""What a word model's answers are (no score, nothing clipped)."""
PAIR = re.compile(r"mlqe-pe/([a-z]{2,3})-([a-z]{2,3})")


class ServedWordModel:
    """A word model loaded in a worker: :meth:`describe` says what it is, :meth:`score` tags pairs.
    The file is checked whole on loading (``qe.wordmodel.modelfile.load_word_model``); a model trained
    with NMT log-probabilities or with the ``aligned`` family is refused, since a request carries
    neither NMT output nor alignments."""

    words = True

    def __init__(self, entry: ModelEntry) -> None:
        self.name = entry.name
        self.path = entry.path
        self.model = load_word_model(entry.path)
        if self.model.nmt:
            raise QEInputError(
                "a word model trained with NMT log-probabilities (nmt = true) cannot be served: requests "
                "carry no NMT output; serve one trained without them",
                entry.path,
            )
        if self.model.alignments:
            raise QEInputError(
                "a word model with the aligned family cannot be served: requests carry no source-MT "
                "alignments; serve one trained without it",
                entry.path,
            )
        self.label = LABEL
        self.sha256 = sha256_file(entry.path)
        self.signature = _signature_text(self.model.manifest.get("signature"))

    def describe(self) -> dict[str, Any]:
        """What ``GET /v1/models`` shows of the model (no file paths)."""
        found = PAIR.search(self.signature or "")
        return {
            "name": self.name,
            "kind": "words",
            "languages": {"src": found.group(1), "tgt": found.group(2)} if found else {},
            "label": self.label.as_json(),
            "signature": self.signature,
            "model_sha256": self.sha256,
            "bundle": None,
            "pair_inputs": [],
            "family_max_chars": None,
            "features": sum(len(column_names(kind, False, self.model.featurizer.families)) for kind in KINDS),
            "training_statistics": False,
            "thresholds": {kind: float(self.model.thresholds[kind]) for kind in KINDS},
            "max_tokens": MAX_TOKENS,
        }

    def warm_up(self) -> None:
        """Tag one pair, so that the first request is as fast as the next."""
        self.score([WARM_UP[0]], [WARM_UP[1]], {}, 0, "")

    def score(
        self, src: list[str], mt: list[str], extra: dict[str, list[str]], start: int, detail: str
    ) -> tuple[list[dict[str, Any]], int]:
        """One object per pair: the MT, gap and source tags and BAD probabilities (as ``qe predict
        --words`` writes them, without its ``id``), and 0 (a word model clips nothing). The HTTP
        process has checked the texts and their token counts."""
        data = WordLevelData([text.split() for text in src], [text.split() for text in mt])
        results = []
        for row in tag_rows(self.model, data, None, self.path):
            del row["id"]
            results.append(row)
        return results, 0


def _signature_text(signature: Any) -> str | None:
    """The signature line ``qe run`` wrote to signature.txt, or None when the manifest's record is not
    one (the file's checks do not read it)."""
    from qe.run.words import signature_text

    try:
        return signature_text(signature)
    except (KeyError, TypeError, AttributeError, ValueError):
        return None
