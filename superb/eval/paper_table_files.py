"""The folder of a paper's table (superb.eval.paper_table): table.csv (the long form, as :func:`paper_table`
returns it), table.md (superb.eval.paper_table_markdown) and table.tex (superb.eval.paper_table_latex)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from superb.eval.paper_table_latex import format_latex
from superb.eval.paper_table_markdown import format_markdown
from superb.folder.layout import TABLE, TABLE_MD, TABLE_TEX

FILES = (TABLE, TABLE_MD, TABLE_TEX)


def write_paper_table(frame: pd.DataFrame, out: Path, *, title: str = "", narrow: bool = False,
                      resize: bool = False) -> list[Path]:
    """table.csv, table.md and table.tex of :func:`superb.eval.paper_table.paper_table`'s frame into ``out``
    (``narrow``, ``resize``: table.tex's layout, superb.eval.paper_table_latex.format_latex)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / name for name in FILES]
    frame.to_csv(paths[0], index=False)
    paths[1].write_text(format_markdown(frame, title=title), encoding="utf-8")
    paths[2].write_text(format_latex(frame, narrow=narrow, resize=resize), encoding="utf-8")
    return paths
