"""The report as a list of document blocks (headings, paragraphs, tables, images, code), rendered
by :mod:`qe.report.render` as Markdown or HTML."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Code:
    """Inline text taken from the run (names, parameters): code-formatted and always escaped."""

    text: str


Inline = str | Code


@dataclass
class Heading:
    """A section title (level 1-3)."""

    text: str
    level: int = 2


@dataclass
class Para:
    """A paragraph of plain text and code spans."""

    parts: list[Inline]


@dataclass
class Table:
    """A table of text cells; rows in ``bold_rows`` are ours (highlighted)."""

    header: list[str]
    rows: list[list[str]]
    bold_rows: set[int] = field(default_factory=set)


@dataclass
class Image:
    """A figure in ``report_files/``."""

    file: str  # relative to the run directory
    alt: str


@dataclass
class Pre:
    """Preformatted text (signature, model tree)."""

    text: str


Block = Heading | Para | Table | Image | Pre


@dataclass
class Report:
    """A report before writing: its blocks and its figures (file name -> PNG bytes)."""

    title: str
    blocks: list[Block]
    figures: dict[str, bytes]
    notes: list[str]
