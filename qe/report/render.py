"""Document blocks rendered as Markdown or as one self-contained HTML page (text escaped)."""

from __future__ import annotations

import html

from qe.report.blocks import Block, Code, Heading, Image, Inline, Para, Pre, Table


def _md_inline(parts: list[Inline]) -> str:
    out = []
    for part in parts:
        if isinstance(part, Code):
            ticks = "`"
            while ticks in part.text:
                ticks += "`"
            pad = " " if part.text.startswith("`") or part.text.endswith("`") else ""
            out.append(f"{ticks}{pad}{part.text}{pad}{ticks}")
        else:
            out.append(_md_text(part))
    return "".join(out)


MD_SPECIAL = str.maketrans({c: "\\" + c for c in "\\|<>*`"})


def _escape(text: object) -> str:
    """Text for HTML (a value read from an edited run file may be a number: shown as text)."""
    return html.escape(str(text))


def _md_text(text: str) -> str:
    """Plain text for Markdown: characters that would start markup or HTML are backslash-escaped
    (a value read from an edited run file may be a number: it is shown as text)."""
    return str(text).translate(MD_SPECIAL)


def _md_cell(text: str) -> str:
    return _md_text(text).replace("\n", " ")


def render_markdown(blocks: list[Block]) -> str:
    """The report as GitHub-flavoured Markdown."""
    chunks = []
    for block in blocks:
        if isinstance(block, Heading):
            chunks.append(f"{'#' * block.level} {_md_text(block.text)}")
        elif isinstance(block, Para):
            chunks.append(_md_inline(block.parts))
        elif isinstance(block, Table):
            lines = ["| " + " | ".join(_md_cell(h) for h in block.header) + " |"]
            lines.append("|" + "---|" * len(block.header))
            for index, row in enumerate(block.rows):
                cells = [_md_cell(c) for c in row]
                if index in block.bold_rows:
                    cells[0] = f"**{cells[0]}**"
                lines.append("| " + " | ".join(cells) + " |")
            chunks.append("\n".join(lines))
        elif isinstance(block, Image):
            chunks.append(f"![{_md_cell(block.alt)}]({block.file})")
        elif isinstance(block, Pre):
            fence = "```"
            while fence in block.text:
                fence += "`"
            chunks.append(f"{fence}\n{block.text}\n{fence}")
    return "\n\n".join(chunks) + "\n"


STYLE = """
body { font-family: system-ui, sans-serif; max-width: 60em; margin: 2em auto; padding: 0 1em; color: #222; }
table { border-collapse: collapse; margin: 1em 0; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; }
td { text-align: right; font-variant-numeric: tabular-nums; }
td:first-child, th:first-child { text-align: left; }
tr.ours td { font-weight: bold; }
pre { background: #f6f6f6; padding: 0.8em; overflow-x: auto; font-size: 0.85em; }
img { max-width: 100%; }
"""


def _html_inline(parts: list[Inline]) -> str:
    return "".join(f"<code>{_escape(p.text)}</code>" if isinstance(p, Code) else _escape(p) for p in parts)


def render_html(blocks: list[Block], title: str) -> str:
    """The report as one HTML page (also well-formed XML); figures are linked relatively."""
    body = []
    for block in blocks:
        if isinstance(block, Heading):
            body.append(f"<h{block.level}>{_escape(block.text)}</h{block.level}>")
        elif isinstance(block, Para):
            body.append(f"<p>{_html_inline(block.parts)}</p>")
        elif isinstance(block, Table):
            lines = ["<table>", "<thead><tr>" + "".join(f"<th>{_escape(h)}</th>" for h in block.header)]
            lines.append("</tr></thead>")
            lines.append("<tbody>")
            for index, row in enumerate(block.rows):
                attribute = ' class="ours"' if index in block.bold_rows else ""
                cells = "".join(f"<td>{_escape(c)}</td>" for c in row)
                lines.append(f"<tr{attribute}>{cells}</tr>")
            lines.append("</tbody></table>")
            body.append("\n".join(lines))
        elif isinstance(block, Image):
            src, alt = _escape(block.file), _escape(block.alt)
            body.append(f'<figure><img src="{src}" alt="{alt}" /></figure>')
        elif isinstance(block, Pre):
            body.append(f"<pre>{_escape(block.text)}</pre>")
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8" />\n'
        f"<title>{_escape(title)}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n"
        + "\n".join(body)
        + "\n</body>\n</html>\n"
    )
