"""The markdown superb writes (table.md, views.md, label_study.md) as HTML, read generically: headings, paragraphs,
pipe tables (with their alignment row), bullet lists, ``code``, **bold** and *emphasis*. Whatever a table cell holds
(marks, intervals, notes) is kept as text, HTML-escaped. Not a general markdown parser: no nesting, links or HTML.
"""

from __future__ import annotations

import html
import re

_INLINE = re.compile(r"`([^`]+)`|\*\*([^*]+)\*\*|(?<![\w*])\*([^*\s][^*]*)\*(?![\w*])")
_ALIGN = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$")
_BULLET = re.compile(r"^\s*[-*] +")


def inline(text: str) -> str:
    """Escaped text with `code`, **bold** and *emphasis* as tags."""
    out, last = [], 0
    for m in _INLINE.finditer(text):
        out.append(html.escape(text[last:m.start()], quote=False))
        code, bold, em = m.groups()
        if code is not None:
            out.append(f"<code>{html.escape(code, quote=False)}</code>")
        elif bold is not None:
            out.append(f"<strong>{html.escape(bold, quote=False)}</strong>")
        else:
            out.append(f"<em>{html.escape(em, quote=False)}</em>")
        last = m.end()
    out.append(html.escape(text[last:], quote=False))
    return "".join(out)


def split_row(line: str) -> list[str]:
    """The cells of a pipe-table row; ``\\|`` is a literal bar inside a cell."""
    body = line.strip()
    body = body[1:] if body.startswith("|") else body
    body = body[:-1] if body.endswith("|") and not body.endswith("\\|") else body
    cells = re.split(r"(?<!\\)\|", body)
    return [c.replace("\\|", "|") for c in cells]


def _alignments(line: str) -> list[str]:
    out = []
    for cell in split_row(line):
        cell = cell.strip()
        out.append("right" if cell.endswith(":") and not cell.startswith(":") else
                   "center" if cell.startswith(":") and cell.endswith(":") else "left")
    return out


def _table(lines: list[str]) -> str:
    header = split_row(lines[0])
    align = _alignments(lines[1])
    parts = ['<div class="table-wrap"><table class="md">', "<thead><tr>"]
    for i, cell in enumerate(header):
        parts.append(f'<th class="{_a(align, i)}">{inline(cell.strip())}</th>')
    parts.append("</tr></thead><tbody>")
    for line in lines[2:]:
        cells = split_row(line)
        first = cells[0] if cells else ""
        depth = first.count("\u2003") + first.count("\u21b3")  # superb.eval.table_markdown indents with em spaces and an arrow
        system = re.sub(r"^[\s\u2003\u21b3]+", "", first).strip()
        parts.append(f'<tr data-system="{html.escape(system)}" data-depth="{depth}">')
        for i, cell in enumerate(cells):
            if i == 0:
                arrow = "\u21b3 " if depth else ""
                parts.append(f'<td class="{_a(align, i)} name" style="padding-left:{0.4 + 1.1 * depth:.1f}em">'
                             f'{arrow}{inline(system)}</td>')
            else:
                parts.append(f'<td class="{_a(align, i)}">{inline(cell.strip())}</td>')
        parts.append("</tr>")
    parts.append("</tbody></table></div>")
    return "".join(parts)


def _a(align: list[str], i: int) -> str:
    return align[i] if i < len(align) else "left"


def to_html(text: str) -> str:
    """HTML of a markdown text written by superb (see the module docstring)."""
    lines = text.splitlines()
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        heading = re.match(r"^(#{1,6})\s+(.*)$", line)
        if heading:
            level = len(heading.group(1))
            out.append(f"<h{level + 1}>{inline(heading.group(2).strip())}</h{level + 1}>")
            i += 1
        elif line.lstrip().startswith("|") and i + 1 < len(lines) and _ALIGN.match(lines[i + 1]):
            block = [line, lines[i + 1]]
            i += 2
            while i < len(lines) and lines[i].lstrip().startswith("|"):
                block.append(lines[i])
                i += 1
            out.append(_table(block))
        elif _BULLET.match(line):
            items = []
            while i < len(lines) and lines[i].strip():
                if _BULLET.match(lines[i]):
                    items.append(_BULLET.sub("", lines[i]).strip())
                elif items:  # a continuation line of the item above
                    items[-1] += " " + lines[i].strip()
                i += 1
            out.append("<ul>" + "".join(f"<li>{inline(t)}</li>" for t in items) + "</ul>")
        else:
            para = []
            while i < len(lines) and lines[i].strip() and not lines[i].lstrip().startswith(("|", "#")) \
                    and not _BULLET.match(lines[i]):
                para.append(lines[i].strip())
                i += 1
            out.append(f"<p>{inline(' '.join(para))}</p>")
    return "\n".join(out)
