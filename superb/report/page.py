"""report.html: one self-contained page (inline CSS, plain JavaScript, the data as inline JSON, the cost plot as a
data: URI), so it opens from file:// with no network. The template is templates/report.html.j2."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from superb.folder import layout
from superb.provenance import record_file
from superb.report.markdown import to_html


def _json_for_script(payload: dict[str, Any]) -> str:
    """JSON that cannot close its <script> element early (``</`` and ``<!--`` escaped as \\u003c)."""
    text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.replace("<", "\\u003c").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def sections(markdown: str) -> list[tuple[str | None, str]]:
    """The markdown split at its level-2 headings: (None, HTML of what comes first), then (heading, HTML of the
    section) for each "## " section (the page folds those: head-to-head tables, views, notes)."""
    parts: list[tuple[str | None, list[str]]] = [(None, [])]
    for line in markdown.splitlines():
        if line.startswith("## "):
            parts.append((line[3:].strip(), []))
        else:
            parts[-1][1].append(line)
    return [(heading, to_html("\n".join(lines))) for heading, lines in parts
            if heading or any(x.strip() for x in lines)]


def table_sections(table_md: str, name: str) -> list[tuple[str | None, str]]:
    """table.md as the page shows it: :func:`sections`, without the "# NAME" heading the page's header repeats."""
    if table_md.startswith(f"# {name}\n"):
        table_md = table_md.split("\n", 1)[1]
    return sections(table_md)


def render(payload: dict[str, Any]) -> str:
    """The page's HTML for a payload of superb.report.data.collect."""
    import jinja2

    env = jinja2.Environment(loader=jinja2.PackageLoader("superb.report", "templates"),
                             autoescape=jinja2.select_autoescape(["j2", "html"]), keep_trailing_newline=True)
    data = {k: v for k, v in payload.items() if k not in ("table_md", "cost_png")}
    return env.get_template("report.html.j2").render(
        name=payload["name"], table_sections=table_sections(payload["table_md"], payload["name"]),
        cost_png=payload["cost_png"],
        title_source=payload["title_source"], titles_missing=payload["titles_missing"],
        n_docs=len(payload["docs"]), data_json=_json_for_script(data))


def write_report(folder: str | Path, out: str | Path | None = None) -> Path:
    """Writes the page of the results folder ``folder`` to ``out`` (default: folder/report.html); returns its path."""
    from superb.report.data import collect

    folder = Path(folder)
    out = Path(out) if out is not None else folder / layout.REPORT
    html = render(collect(folder))
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.writing")
    try:
        tmp.write_text(html, encoding="utf-8")
        tmp.replace(out)
    except BaseException:  # a full disk, a folder made read-only: no half-written page is left behind
        tmp.unlink(missing_ok=True)
        raise
    if out.resolve() == (folder / layout.REPORT).resolve():  # the folder's own page: its sha256 in provenance.json
        record_file(folder, layout.REPORT)
    return out
