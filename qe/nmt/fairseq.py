"""``fairseq-generate`` output: the 1-best hypothesis (``H-``) and its positional scores (``P-``).

Layout, one block per sentence (in batch order, not id order)::

    S-12<TAB>source tokens
    H-12<TAB>-0.4377<TAB>hypothesis tokens          # score: sum of P / length (with lenpen 1)
    D-12<TAB>-0.4377<TAB>detokenized hypothesis
    P-12<TAB>-0.9152 -0.1101 ... -0.0963           # one per hypothesis token plus </s>

With ``--nbest N`` the H/D/P lines repeat per hypothesis, best first; only the first H of a
sentence and the first P after it are read. Other lines (S, T, D, A, logging) are skipped.
fairseq >= 0.10 prints H and P scores in base 2 (``log_base=2``, converted here to natural log);
older versions printed natural logs (``log_base="e"``). With ``--remove-bpe`` (or a
SentencePiece ``--post-process``) the H line is detokenized, so its words no longer match the P
values one to one.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from qe.decoder import iter_parsed_lines
from qe.infra.errors import QEInputError
from qe.nmt import LN2, NMTRecord, SeenIds, parse_logprobs, parse_number, parse_sentence_id

KIND = "fairseq-generate log"


def _parse_line(text: str, line: int) -> tuple[str, int, list[str]] | None:
    """``(tag, id, fields)`` of an H- or P- line, None for any other line."""
    if len(text) < 3 or text[0] not in "HP" or text[1] != "-":
        return None
    head, tab, rest = text.partition("\t")
    if not tab:
        raise ValueError(f"{head!r} line has no tab-separated fields")
    sent_id = parse_sentence_id(head[2:], KIND)
    return text[0], sent_id, rest.split("\t")


def iter_fairseq(path: str | Path, log_base: float | str = 2) -> Iterator[NMTRecord]:
    """Yield the 1-best of each sentence (natural-log scores) in file order, in one streaming pass.

    Errors name the file and line: a malformed H or P line, a P line without its H, a sentence
    whose H has no P line (fairseq was run with ``--quiet``?), an id that comes back later.
    """
    path = Path(path)
    scale = LN2 if str(log_base) == "2" else 1.0
    seen = SeenIds(KIND)
    pending: tuple[int, list[str], float, int] | None = None  # id, tokens, score, H line
    done: set[int] = set()
    for line, parsed in enumerate(iter_parsed_lines(path, KIND, _parse_line), 1):
        if parsed is None:
            continue
        tag, sent_id, fields = parsed
        try:
            if tag == "H":
                first = seen.visit(sent_id, line)
                if pending is not None and pending[0] != sent_id:
                    raise _no_positional(path, pending)
                if first:
                    if len(fields) != 2:
                        raise ValueError(f"H-{sent_id} line needs a score and a hypothesis (2 fields)")
                    score = parse_number(fields[0], "hypothesis score") * scale
                    pending = (sent_id, fields[1].split(), score, line)
                continue
            if pending is not None and pending[0] == sent_id:
                if len(fields) != 1:
                    raise ValueError(f"P-{sent_id} line needs one field of scores")
                _, tokens, score, _ = pending
                pending = None
                done.add(sent_id)
                yield NMTRecord(sent_id, tokens, parse_logprobs(fields[0], scale), score, line)
            elif sent_id not in done:
                raise ValueError(f"P-{sent_id} line comes before any H-{sent_id} hypothesis")
        except ValueError as exc:
            raise QEInputError(str(exc), path, line) from None
    if pending is not None:
        raise _no_positional(path, pending)


def _no_positional(path: Path, pending: tuple[int, list[str], float, int]) -> QEInputError:
    return QEInputError(
        f"hypothesis H-{pending[0]} has no P-{pending[0]} line of positional scores "
        "(was fairseq-generate run with --quiet?)",
        path,
        pending[3],
    )


__all__ = ["KIND", "iter_fairseq"]
