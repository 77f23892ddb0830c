"""table.tex of a paper's table (superb.eval.paper_table): one ``table`` float with one booktabs ``tabular``, to be
included with ``\\input{table.tex}`` (the preamble needs ``\\usepackage{booktabs}``).

The grid is table.md's (superb.eval.paper_table_markdown): the collections as column groups (their n in the header),
the measures under them, bold for the best value of each column, the folders' own marks as superscripts
(``$^{\\dagger}$`` better, ``$^{\\ddagger}$`` worse, ``$^{c}$`` confirmatory, ``$^{e}$`` exploratory, ``$^{=}$``
identical to the baseline), the quoted rows under a line of their own (each with a ``%`` comment naming its source,
to cite), and a caption that states each collection's test, correction, alpha and n. Every name (systems, models,
collections, measures) is escaped: ``& % $ # _ { } ~ ^ \\ < >`` print as themselves.

Its width is measured and stated on its second line (superb.eval.latex_width). The default layout is as wide as its
longest names (the TREC DL table: about 520pt, wider than a one-column article's 345pt text); ``superb table --narrow``
wraps system and model names in columns of fixed width (the same table: about 330pt), and ``--resize`` scales the
``tabular`` to ``\\linewidth`` whatever its width.
"""

from __future__ import annotations

import re

import pandas as pd

from superb.eval.paper_table import AVERAGE
from superb.eval.paper_table_markdown import caption, cell_text, grid
from superb.eval.latex_width import ARTICLE_TEXT, SUPERSCRIPT, TABCOLSEP, TWO_COLUMN, tabular_width, text_width
from superb.eval.table_markdown import BETTER, CONFIRMED, EXPLORED, WORSE

NARROW_SYSTEM, NARROW_MODEL = 0.34, 0.2  # the narrow layout's name columns, as shares of \\linewidth

SUPERSCRIPTS = {BETTER: "\\dagger", WORSE: "\\ddagger", CONFIRMED: "c", EXPLORED: "e", "=": "="}
TEX_SYMBOLS = {**{k: f"$^{{{v}}}$" for k, v in SUPERSCRIPTS.items()}, "alpha": "$\\alpha$", "ge": "$\\geq$"}
_SPECIAL = {"\\": "\\textbackslash{}", "&": "\\&", "%": "\\%", "$": "\\$", "#": "\\#", "_": "\\_", "{": "\\{",
            "}": "\\}", "~": "\\textasciitilde{}", "^": "\\textasciicircum{}", "<": "\\textless{}",
            ">": "\\textgreater{}"}


def escape(text: str) -> str:
    """``text`` as LaTeX prints it literally (its special characters escaped, one by one)."""
    return "".join(_SPECIAL.get(ch, ch) for ch in str(text))


def format_latex(frame: pd.DataFrame, *, label: str = "tab:superb", narrow: bool = False,
                 resize: bool = False) -> str:
    """The ``table`` float (see the module docstring). ``narrow``: the layout for one column (system and model names
    wrap in columns of fixed width, models in small type, the collections' n in the caption only); ``resize``: the
    ``tabular`` scaled to ``\\linewidth`` (``\\usepackage{graphicx}``). Its first line states the width it prints
    at, measured (superb.eval.latex_width)."""
    g = grid(frame)
    collections = {c["name"]: c for c in frame.attrs["collections"]}
    groups = list(dict.fromkeys(c for c, _ in g.columns))
    width = 2 + len(g.columns)
    head, rules, start, head_widths = ["", ""], [], 3, []
    for group in groups:
        span = sum(1 for c, _ in g.columns if c == group)
        shown = "Average" if group == AVERAGE else str(group)
        if group == AVERAGE or narrow:
            name, measured = escape(shown), shown
        else:
            name, measured = f"{escape(group)} ($n={collections[group]['n_queries']}$)", \
                f"{group} (n = {collections[group]['n_queries']})"  # math spacing around =
        head.append(f"\\multicolumn{{{span}}}{{c}}{{{name}}}")
        head_widths.append((span, text_width(measured)))
        rules.append(f"\\cmidrule(lr){{{start}-{start + span - 1}}}")
        start += span
    body, quoted_at = [], None
    widths = [text_width("System"), text_width("Model")] + [text_width(m) for _, m in g.columns]
    for row in g.rows:
        if row[0] == "quoted" and quoted_at is None:
            quoted_at = len(body)
        model = g.models(row, frame)
        widths[0] = max(widths[0], text_width(row[1]))
        widths[1] = max(widths[1], text_width(model or "--", 8.0 if narrow else 10.0))
        cells = [_breakable(row[1], narrow), _breakable(model, narrow) or "--"]
        for i, column in enumerate(g.columns):
            number, marks, bold = cell_text(g, row, column)
            mark = f"$^{{{''.join(SUPERSCRIPTS.get(m, escape(m)) for m in marks)}}}$" if marks else ""
            cells.append("--" if not number else (f"\\textbf{{{number}}}" if bold else number) + mark)
            widths[2 + i] = max(widths[2 + i], text_width(number or "--", bold=bold) +
                                text_width("0" * len(marks), SUPERSCRIPT))
        line = " & ".join(cells) + " \\\\"
        if row[0] == "quoted":
            sources = frame[(frame["kind"] == "quoted") & (frame["system"] == row[1]) & (frame["model"] == row[2])
                            & (frame["collection"] != AVERAGE)]
            line += "  % source: " + "; ".join(dict.fromkeys(sources["source"].astype(str))).replace("\n", " ")
        body.append(line)
    if quoted_at is not None:
        body[quoted_at:quoted_at] = ["\\midrule", f"\\multicolumn{{{width}}}{{l}}{{\\emph{{Quoted from their sources, "
                                                  f"not run here}}}} \\\\"]
    column = 2
    for span, needed in head_widths:  # a collection's name wider than its columns widens them
        have = sum(widths[column:column + span]) + 2 * TABCOLSEP * (span - 1)
        if needed > have:
            widths[column + span - 1] += needed - have
        column += span
    if narrow:
        widths[0], widths[1] = NARROW_SYSTEM * ARTICLE_TEXT, NARROW_MODEL * ARTICLE_TEXT
        spec = (f">{{\\raggedright\\arraybackslash}}p{{{NARROW_SYSTEM}\\linewidth}}"
                f">{{\\raggedright\\arraybackslash\\footnotesize}}p{{{NARROW_MODEL}\\linewidth}}")
    else:
        spec = "ll"
    measured = tabular_width(widths)
    packages = "booktabs" + (", array" if narrow else "") + (", graphicx" if resize else "")
    lines = [
        "% superb table: " + ", ".join(c["folder"] for c in frame.attrs["collections"]) + f" (generated; "
        f"\\usepackage{{{packages}}})",
        f"% width: about {measured:.0f}pt at 10pt (measured in Computer Modern; a one-column article's text is "
        f"{ARTICLE_TEXT:.0f}pt, a two-column paper's column {TWO_COLUMN:.0f}pt)"
        + ("; scaled to \\linewidth" if resize else ""),
        "\\begin{table}[t]",
        "\\centering",
        f"\\caption{{{caption(frame, TEX_SYMBOLS, escape)}}}",
        f"\\label{{{label}}}",
        *(["\\resizebox{\\linewidth}{!}{%"] if resize else []),
        f"\\begin{{tabular}}{{{spec}{'r' * len(g.columns)}}}",
        "\\toprule",
        " & ".join(head) + " \\\\",
        "".join(rules),
        " & ".join(["System", "Model", *[escape(m) for _, m in g.columns]]) + " \\\\",
        "\\midrule",
        *body,
        "\\bottomrule",
        "\\end{tabular}" + ("}" if resize else ""),
        "\\end{table}",
    ]
    return "\n".join(lines) + "\n"


def latex_width(text: str) -> float:
    """The width a table.tex written by :func:`format_latex` states on its second line, in points."""
    found = re.search(r"^% width: about (\d+)pt", text, re.M)
    if not found:
        raise ValueError("not a table.tex written by superb table: no '% width:' line")
    return float(found.group(1))


def _breakable(text: str, narrow: bool) -> str:
    """``text`` escaped; in the narrow layout a long name without spaces may break after - _ . / (a model's file
    name in a column of fixed width)."""
    escaped = escape(text)
    if not narrow:
        return escaped
    return re.sub(r"(-|\\_|\.|/)", r"\1\\allowbreak{}", escaped)
