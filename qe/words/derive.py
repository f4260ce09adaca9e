"""Word-level OK/BAD tags derived from a post-edit, as WMT made them for the QE word-level task
(WMT18-20, MLQE-PE): MT words and gaps from the shift-free TER alignment (``qe.words.align``),
source words through a source-MT word alignment.

- An MT word is BAD when it is substituted or deleted, OK when it is matched. The alignment matches
  words case-insensitively (tercom's default), but, as the corpus builder below compares the aligned
  tokens as written, a word whose post-edit differs only in case is BAD too (a substitution): on
  MLQE-PE this gives both the shipped gaps (case-insensitive structure) and the shipped MT tags.
- A gap (2N+1 tags: gap, word, gap, ..., word, gap) is BAD when one or more post-edit words are
  inserted there.
- A source word is BAD when it is aligned to an MT word that the post-editor substituted. This is the
  ``normal`` fluency rule of Unbabel's word-level-qe-corpus-builder
  (``corpus_generation/tools/generate_BAD_tags.py``; its ``get_tags_wmt2018.sh`` builds the WMT18
  tags with it and ``tercom -d 0``): a source word is BAD when it is aligned to a post-edit
  word that replaces an MT word (substitution) or that the MT lacks (insertion); an MT word the
  post-editor deleted does not make any source word BAD. That tool aligns the source to the
  *post-edit* (fast_align there; SimAlign for MLQE-PE). With a source-MT alignment (the data's
  ``.src-mt.alignments``, or IBM1 alignments from a resource bundle when a user has none) a
  substituted MT word leads to its post-edit word, but an inserted post-edit word has no MT word to
  be aligned through: source words whose translation is missing stay OK here, the main reason the
  derived source tags differ from the shipped ones (docs/word-level.md).
"""

from __future__ import annotations

from collections.abc import Iterable

from qe.words.align import align_to_post_edit
from qe.words.tags import BAD, OK, SentenceTags


def derive_tags(
    src: list[str], mt: list[str], pe: list[str], alignment: Iterable[tuple[int, int]]
) -> SentenceTags:
    """The MT-word, gap and source tags of one tokenised sentence triple; ``alignment`` holds
    0-based (source, MT) token index pairs (the data's, or any aligner's)."""
    edit = align_to_post_edit(mt, pe)
    same = [j >= 0 and mt[i] == pe[j] for i, j in enumerate(edit.mt_to_pe)]
    mt_tags = tuple(OK if ok else BAD for ok in same)
    gap_tags = tuple(BAD if count else OK for count in edit.insertions)
    substituted = {i for i, j in enumerate(edit.mt_to_pe) if j >= 0 and not same[i]}
    bad_src = {s for s, t in alignment if t in substituted}
    src_tags = tuple(BAD if s in bad_src else OK for s in range(len(src)))
    return SentenceTags(mt=mt_tags, gaps=gap_tags, src=src_tags)
