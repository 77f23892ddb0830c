"""report.html: a results folder as one self-contained page to compare rerankers side by side, per query.

``superb report results/NAME [--out FILE]`` (and the end of ``superb run``) calls :func:`write_report`. The page holds
the folder's table.md, its cost plot and a per-query view of two systems (superb.report.data gathers the files,
superb.report.page renders templates/report.html.j2).
"""

from superb.report.page import write_report

__all__ = ["write_report"]
