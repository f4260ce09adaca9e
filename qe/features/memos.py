"""Emptying the per-sentence memos features build (tokenized sentences, tagged ones), so that a
long-running process's memory does not grow with the sentences it has seen."""

from __future__ import annotations

from typing import Any


def clear_text_memos(*roots: Any, depth: int = 4) -> None:
    """Empty the per-sentence tokenization memos of ``qe.text.processing.TextProcessor`` objects under
    ``roots`` and the POS taggers' per-sentence memos.

    Feature families and resource bundles memoise tokenized sentences (up to 200,000 per
    processor), the taggers tagged ones; a streamed run clears them after every chunk (a service
    after every request) so memory does not depend on how many distinct sentences went through a
    worker. Small containers and objects are searched, ``depth`` levels down.
    """
    from qe.resources.pos import clear_tag_memos
    from qe.text.processing import TextProcessor

    clear_tag_memos()

    seen: set[int] = set()

    def visit(obj: Any, level: int) -> None:
        if level > depth or id(obj) in seen:
            return
        seen.add(id(obj))
        if isinstance(obj, TextProcessor):
            memo = getattr(obj, "_memo", None)
            if isinstance(memo, dict):
                memo.clear()
            return
        if isinstance(obj, dict):
            values = list(obj.values()) if len(obj) <= 64 else []
        elif isinstance(obj, list | tuple):
            values = list(obj) if len(obj) <= 64 else []
        elif hasattr(obj, "__dict__") and not isinstance(obj, type):
            values = list(vars(obj).values())
        else:
            return
        for value in values:
            visit(value, level + 1)

    for root in roots:
        visit(root, 0)
