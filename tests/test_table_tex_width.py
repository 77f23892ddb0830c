"""table.tex fits a one-column article (issue 50.7): its width is measured (superb.eval.latex_width, Computer Modern
metrics) and stated on its second line; `superb table --narrow` wraps names in fixed columns and fits; `--resize`
scales any width to \\linewidth. Where a TeX engine exists (pdflatex), each layout is compiled in a one-column
article and TeX's own width checked against the measure; elsewhere the measure alone is the check."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from superb.cli import main
from superb.eval.latex_width import ARTICLE_TEXT, text_width
from superb.eval.paper_table import paper_table
from superb.eval.paper_table_latex import format_latex, latex_width

ROOT = Path(__file__).resolve().parents[1]
DL19, DL20 = ROOT / "results" / "trec_dl19", ROOT / "results" / "trec_dl20"
ANCHORS = ROOT / "experiments" / "anchors_trec_dl.csv"


@pytest.fixture(scope="module")
def frame():
    return paper_table([DL19, DL20], names=["DL19", "DL20"], anchors=ANCHORS)


def test_the_measure_is_computer_moderns():
    assert text_width("0123456789") == pytest.approx(50.0, abs=0.05)  # cmr10's digits are 5pt each
    assert text_width("0.5058", bold=True) == pytest.approx(1.15 * text_width("0.5058"))
    assert text_width("m") > text_width("i") and text_width("abc", 8.0) == pytest.approx(0.8 * text_width("abc"))


def test_the_wide_layout_says_it_does_not_fit_and_the_narrow_one_fits(frame):
    wide, narrow = format_latex(frame), format_latex(frame, narrow=True)
    assert latex_width(wide) > ARTICLE_TEXT  # the TREC DL table's names: about 500pt
    assert latex_width(narrow) <= ARTICLE_TEXT
    assert "\\usepackage{booktabs, array}" in narrow.splitlines()[0]
    assert "p{0.34\\linewidth}" in narrow and "qwen2.\\allowbreak{}5-\\allowbreak{}coder" in narrow
    resized = format_latex(frame, resize=True)
    assert "\\resizebox{\\linewidth}{!}{%" in resized and "\\end{tabular}}" in resized
    assert "graphicx" in resized.splitlines()[0] and "scaled to \\linewidth" in resized.splitlines()[1]


def test_superb_table_offers_both_and_records_them(tmp_path, capsys):
    assert main(["table", str(DL19), str(DL20), "--names", "DL19,DL20", "--out", str(tmp_path / "wide")]) == 0
    said = capsys.readouterr().out
    assert re.search(r"table.tex is about \d+pt wide, wider than a one-column article's 345pt text: --narrow", said)
    assert main(["table", str(DL19), str(DL20), "--names", "DL19,DL20", "--narrow", "--out",
                 str(tmp_path / "narrow")]) == 0
    said = capsys.readouterr().out
    assert "wider than" not in said and "\\usepackage{booktabs, array}" in said
    assert latex_width((tmp_path / "narrow" / "table.tex").read_text()) <= ARTICLE_TEXT
    record = json.loads((tmp_path / "narrow" / "provenance.json").read_text())
    assert "--narrow" in record["command"]


def test_a_judge_table_has_no_narrow_layout(tmp_path, capsys):
    judges = ROOT / "results" / "judges_chorus"
    assert main(["table", str(judges), "--narrow", "--out", str(tmp_path / "t")]) == 2
    assert "--narrow is a layout of the reranking table" in capsys.readouterr().err
    assert not (tmp_path / "t").exists()


@pytest.mark.skipif(shutil.which("pdflatex") is None, reason="no TeX engine here: the measure is the check")
@pytest.mark.parametrize("layout", ["wide", "narrow", "resize"])
def test_each_layout_compiles_in_a_one_column_article(frame, tmp_path, layout):
    tex = format_latex(frame, narrow=layout == "narrow", resize=layout == "resize")
    (tmp_path / "table.tex").write_text(tex)
    packages = re.search(r"\\usepackage\{([^}]*)\}", tex.splitlines()[0]).group(1)
    body = tex.replace("\\begin{table}[t]", "").replace("\\end{table}", "")
    body = body[body.index("\\begin{tabular}") if layout != "resize" else body.index("\\resizebox"):]
    (tmp_path / "paper.tex").write_text(
        f"\\documentclass{{article}}\\usepackage{{{packages}}}\\begin{{document}}\\input{{table.tex}}"
        f"\\newsavebox\\measured\\sbox\\measured{{{body.strip()}}}\\typeout{{WIDTH=\\the\\wd\\measured}}"
        "\\typeout{TEXT=\\the\\textwidth}\\end{document}\n")
    done = subprocess.run(["pdflatex", "-interaction=nonstopmode", "paper.tex"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)
    log = done.stdout
    assert done.returncode == 0, log[-2000:]
    width = float(re.search(r"WIDTH=([\d.]+)pt", log).group(1))
    assert float(re.search(r"TEXT=([\d.]+)pt", log).group(1)) == pytest.approx(ARTICLE_TEXT, abs=1)
    if layout == "resize":
        assert width == pytest.approx(ARTICLE_TEXT, abs=1)
    else:
        assert width == pytest.approx(latex_width(tex), rel=0.02)  # TeX's own width, within 2% of the measure
    overfull = "Overfull \\hbox" in log
    assert overfull == (layout == "wide"), log[-3000:]
