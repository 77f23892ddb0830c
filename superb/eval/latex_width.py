"""How wide a table.tex prints, measured without a TeX engine: each cell's text set in Computer Modern (the fonts
LaTeX uses by default; matplotlib ships cmr10) at the table's size, summed per column as
``tabular`` lays it out (the widest cell of each column plus ``\\tabcolsep`` = 6pt on each side).

The measure is of the glyphs' advance widths, without kerning, with the few characters LaTeX sets from elsewhere
(``>``, ``_``, ``--``) at TeX's widths: on the TREC DL table TeX's own width (pdflatex) is 522pt to the measured 519pt, 330pt to 326pt narrow. A one-column article's text (LaTeX's ``article`` class at 10pt) is :data:`ARTICLE_TEXT` = 345pt
wide; a two-column paper's column (ACM, IEEE) about :data:`TWO_COLUMN` = 241pt.
"""

from __future__ import annotations

import os
from functools import lru_cache

ARTICLE_TEXT = 345.0  # pt: \textwidth of the article class, 10pt, one column
TWO_COLUMN = 241.0  # pt: \columnwidth of ACM's sigconf (and about IEEEtran's)
TABCOLSEP = 6.0  # pt, on each side of every column
SUPERSCRIPT = 7.0  # pt: a superscript mark at 10pt
BOLD = 1.15  # cmbx10's width over cmr10's (digits: 5.75pt and 5pt)
# at 10pt, characters LaTeX does not take from cmr10's text glyphs: \textgreater and \textless are math relations
# (7.78pt), \_ a rule (3.6pt), and the ligature -- an en dash (5pt)
TEX_WIDTHS = {">": 7.7778, "<": 7.7778, "_": 3.6, "\u2013": 5.0}


@lru_cache(maxsize=None)
def _font(name: str):
    from matplotlib import ft2font, get_data_path

    font = ft2font.FT2Font(os.path.join(get_data_path(), "fonts", "ttf", f"{name}.ttf"))
    font.set_size(10.0, 72)  # 10pt at 72 dpi: advances come out in points
    return font


def text_width(text: str, size: float = 10.0, bold: bool = False) -> float:
    """The width in points of ``text`` set in Computer Modern roman at ``size`` points. Bold (``\\textbf``, set in
    cmbx10, whose digits are 5.75pt to cmr10's 5pt) is 1.15 times as wide; a character the roman font lacks (a dagger,
    which LaTeX takes from cmsy10, 4.4pt at 10pt) counts as a digit."""
    from matplotlib import ft2font

    width = 0.0
    for ch in str(text).replace("--", "\u2013"):
        if ch in TEX_WIDTHS:
            width += TEX_WIDTHS[ch] * size / 10.0
            continue
        font = _font("cmr10")
        code = ord(ch) if font.get_char_index(ord(ch)) else ord("0")
        glyph = font.load_char(code, flags=ft2font.LoadFlags.NO_HINTING)
        width += glyph.linearHoriAdvance / 65536 * size / 10.0
    return width * (BOLD if bold else 1.0)


def tabular_width(columns: list[float]) -> float:
    """The width of a ``tabular`` whose columns are ``columns`` points wide (their widest cell, or a p{} width)."""
    return sum(columns) + 2 * TABCOLSEP * len(columns)
