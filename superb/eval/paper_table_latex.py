"""table.tex of a paper's table (superb.eval.paper_table): one ``table`` float with one booktabs ``tabular``, to be
included with ``\\input{table.tex}`` (the preamble needs ``\\usepackage{booktabs}``).

The grid is table.md's (superb.eval.paper_table_markdown): the collections as column groups (their n in the header),
the measures under them, bold for the best value of each column, the folders' own marks as superscripts
(``$^{\\dagger}$`` better, ``$^{\\ddagger}$`` worse, ``$^{c}$`` confirmatory, ``$^{e}$`` exploratory, ``$^{=}$``
identical to the baseline), the quoted rows under a line of their own (each with a ``%`` comment naming its source,
to cite), and a caption that states each collection's test, correction, alpha and n. Every name (systems, models,
collections, measures) is escaped: ``& % $ # _ { } ~ ^ \\ < >`` print as themselves.
"""

from __future__ import annotations

import pandas as pd

from superb.eval.paper_table import AVERAGE
from superb.eval.paper_table_markdown import caption, cell_text, grid
from superb.eval.table_markdown import BETTER, CONFIRMED, EXPLORED, WORSE

SUPERSCRIPTS = {BETTER: "\\dagger", WORSE: "\\ddagger", CONFIRMED: "c", EXPLORED: "e", "=": "="}
TEX_SYMBOLS = {**{k: f"$^{{{v}}}$" for k, v in SUPERSCRIPTS.items()}, "alpha": "$\\alpha$", "ge": "$\\geq$"}
_SPECIAL = {"\\": "\\textbackslash{}", "&": "\\&", "%": "\\%", "$": "\\$", "#": "\\#", "_": "\\_", "{": "\\{",
            "}": "\\}", "~": "\\textasciitilde{}", "^": "\\textasciicircum{}", "<": "\\textless{}",
            ">": "\\textgreater{}"}


def escape(text: str) -> str:
    """``text`` as LaTeX prints it literally (its special characters escaped, one by one)."""
    return "".join(_SPECIAL.get(ch, ch) for ch in str(text))


def format_latex(frame: pd.DataFrame, *, label: str = "tab:superb") -> str:
    """The ``table`` float (see the module docstring)."""
    g = grid(frame)
    collections = {c["name"]: c for c in frame.attrs["collections"]}
    groups = list(dict.fromkeys(c for c, _ in g.columns))
    width = 2 + len(g.columns)
    head, rules, start = ["", ""], [], 3
    for group in groups:
        span = sum(1 for c, _ in g.columns if c == group)
        name = "Average" if group == AVERAGE else f"{escape(group)} ($n={collections[group]['n_queries']}$)"
        head.append(f"\\multicolumn{{{span}}}{{c}}{{{name}}}")
        rules.append(f"\\cmidrule(lr){{{start}-{start + span - 1}}}")
        start += span
    lines = [
        "% superb table: " + ", ".join(c["folder"] for c in frame.attrs["collections"]) + " (generated; "
        "\\usepackage{booktabs})",
        "\\begin{table}[t]",
        "\\centering",
        f"\\caption{{{caption(frame, TEX_SYMBOLS, escape)}}}",
        f"\\label{{{label}}}",
        f"\\begin{{tabular}}{{ll{'r' * len(g.columns)}}}",
        "\\toprule",
        " & ".join(head) + " \\\\",
        "".join(rules),
        " & ".join(["System", "Model", *[escape(m) for _, m in g.columns]]) + " \\\\",
        "\\midrule",
    ]
    quoted_started = False
    for row in g.rows:
        if row[0] == "quoted" and not quoted_started:
            quoted_started = True
            lines += ["\\midrule", f"\\multicolumn{{{width}}}{{l}}{{\\emph{{Quoted from their sources, not run "
                                   f"here}}}} \\\\"]
        cells = [escape(row[1]), escape(g.models(row, frame)) or "--"]
        for column in g.columns:
            number, marks, bold = cell_text(g, row, column)
            mark = f"$^{{{''.join(SUPERSCRIPTS.get(m, escape(m)) for m in marks)}}}$" if marks else ""
            cells.append("--" if not number else (f"\\textbf{{{number}}}" if bold else number) + mark)
        line = " & ".join(cells) + " \\\\"
        if row[0] == "quoted":
            sources = frame[(frame["kind"] == "quoted") & (frame["system"] == row[1]) & (frame["model"] == row[2])
                            & (frame["collection"] != AVERAGE)]
            line += "  % source: " + "; ".join(dict.fromkeys(sources["source"].astype(str))).replace("\n", " ")
        lines.append(line)
    lines += ["\\bottomrule", "\\end{tabular}", "\\end{table}"]
    return "\n".join(lines) + "\n"
