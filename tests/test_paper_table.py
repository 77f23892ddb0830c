"""`superb table` (superb/eval/paper_table*.py): the table a paper prints, from the committed TREC DL folders.

Every cell is its folder's own table.csv (mean, verdict, mark): nothing re-tested; the refusals (a measure a folder
lacks, a measure with another rel threshold, two folders of one collection) exit 2 naming the folder and measure;
table.tex is one booktabs tabular with its caption, braces balanced, LaTeX's special characters in names escaped.
All offline and fast: the folders' CSV files only.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

from folder_helpers import rerecord, rerun_recorded_table
from superb.cli import main
from superb.eval.paper_table import SPEC_DEFAULTS, paper_table
from superb.eval.paper_table_latex import escape, format_latex
from superb.eval.paper_table_markdown import format_markdown
from superb.eval.table_markdown import BETTER, CONFIRMED, EXPLORED, SAME, WORSE

ROOT = Path(__file__).resolve().parents[1]
DL19, DL20 = ROOT / "results" / "trec_dl19", ROOT / "results" / "trec_dl20"
ANCHORS = ROOT / "experiments" / "anchors_trec_dl.csv"
FOLDER_FILES = ("table.csv", "provenance.json", "qrels.trec", "topics.tsv", "usage.csv")


def copy_folder(source: Path, to: Path) -> Path:
    """The files `superb table` reads of a results folder."""
    to.mkdir(parents=True)
    for name in FOLDER_FILES:
        shutil.copy(source / name, to / name)
    return to


def test_every_cell_is_the_folders_own_mean_verdict_and_mark(tmp_path):
    out = tmp_path / "table"
    assert main(["table", str(DL19), str(DL20), "--names", "DL19,DL20", "--measures", "nDCG@10", "P@10",
                 "--out", str(out)]) == 0
    written = pd.read_csv(out / "table.csv")
    written[["verdict", "mark", "role"]] = written[["verdict", "mark", "role"]].fillna("")
    assert set(written["kind"]) == {"run"}
    checked = 0
    for name, folder in (("DL19", DL19), ("DL20", DL20)):
        own = pd.read_csv(folder / "table.csv")
        own[["verdict", "role"]] = own[["verdict", "role"]].fillna("")
        own = own[(own["view"] == "full") & own["measure"].isin(["nDCG@10", "P(rel=2)@10"])]
        mine = written[written["collection"] == name]
        assert len(mine) == len(own) == 20
        for r in own.to_dict("records"):
            (cell,) = mine[(mine["system"] == r["system"]) & (mine["measure"] == r["measure"])].to_dict("records")
            assert cell["mean"] == r["mean"] and cell["verdict"] == r["verdict"], (name, r["system"])
            for column in ("delta", "p", "p_corrected"):
                assert (pd.isna(cell[column]) and pd.isna(r[column])) or cell[column] == r[column]
            mark = {"better": BETTER, "worse": WORSE}.get(r["verdict"], "")
            role = {"confirmatory": CONFIRMED, "exploratory": EXPLORED}.get(r["role"], "")
            expected = SAME if r["verdict"] in ("identical", "by construction") else role + mark
            assert cell["mark"].strip() == expected.strip(), (name, r["system"], r["measure"])
            checked += 1
    assert checked == 40
    md = (out / "table.md").read_text(encoding="utf-8")
    assert ("| BM25 >> bi-encoder top100 | all-MiniLM-L6-v2 | **0.6464**\u2020 | **0.5581**\u2020 | "
            "**0.6114**\u1d9c\u2020 | **0.4481**\u1d49 |") in md  # bold: the best of each column
    assert "DL19 nDCG@10 (n = 43)" in md and "DL20 nDCG@10 (n = 54)" in md
    assert (out / "provenance.json").is_file() and (out / "table.tex").is_file()


def test_a_system_absent_from_a_collection_is_a_dash_and_the_average_only_when_asked(tmp_path):
    dl20 = copy_folder(DL20, tmp_path / "dl20")
    table = pd.read_csv(dl20 / "table.csv")
    table[table["system"] != "BM25 >> PRP heapsort top10"].to_csv(dl20 / "table.csv", index=False)
    rerecord(dl20)
    frame = paper_table([DL19, dl20], names=["DL19", "DL20"])
    assert "average" not in set(frame["collection"])
    md = format_markdown(frame)
    assert "| BM25 >> PRP heapsort top10 | qwen2.5-coder-1.5b-instruct-q4_k_m | 0.5286 | \u2013 |" in md
    averaged = paper_table([DL19, dl20], names=["DL19", "DL20"], average=True)
    means = averaged[averaged["collection"] == "average"].set_index("system")["mean"]
    assert "BM25 >> PRP heapsort top10" not in means  # a mean of means needs every collection
    assert means["BM25"] == pytest.approx((0.5058310024399073 + 0.479637) / 2, abs=1e-6)
    assert averaged.loc[averaged["collection"] == "average", "verdict"].eq("").all()
    assert "mean of the collections' means" in format_markdown(averaged)


def test_the_anchors_are_quoted_with_their_model_and_never_marked():
    frame = paper_table([DL19, DL20], names=["DL19", "DL20"], anchors=ANCHORS)
    quoted = frame[frame["kind"] == "quoted"]
    anchors = pd.read_csv(ANCHORS, dtype=str, keep_default_na=False)
    assert len(quoted) == (anchors["dl19_ndcg10"] != "").sum() + (anchors["dl20_ndcg10"] != "").sum()
    assert quoted["mark"].eq("").all() and quoted["verdict"].eq("").all() and quoted["p"].isna().all()
    zephyr = quoted[(quoted["model"] == "RankZephyr-7B") & (quoted["collection"] == "DL20")]
    assert zephyr["mean"].tolist() == [0.7080] and zephyr["source"].str.contains("rank_llm").all()
    md = format_markdown(frame)
    assert "*quoted from their sources, not run here*" in md
    assert "| RankGPT listwise (sliding windows) | gpt-4o-mini | 0.7345 | 0.6841 |" in md
    assert "| pointwise yes/no | Flan-T5-large | 0.6544 | \u2013 |" in md  # no DL20 value published: a dash
    assert "Quoted rows: other systems' published numbers" in md and "ielab/llm-rankers README.md" in md


def test_the_defaults_are_the_specs():
    from superb.run.spec import EvaluationSpec

    spec = EvaluationSpec()
    assert SPEC_DEFAULTS == {"test": spec.test, "correction": spec.correction, "alpha": spec.alpha}


def refused(capsys, *argv: str) -> str:
    assert main(["table", *map(str, argv)]) == 2
    return capsys.readouterr().err


def test_a_measure_a_folder_lacks_is_refused_naming_the_folder(capsys, tmp_path):
    dl20 = copy_folder(DL20, tmp_path / "dl20")
    table = pd.read_csv(dl20 / "table.csv")
    table[table["measure"] != "nDCG@5"].to_csv(dl20 / "table.csv", index=False)
    rerecord(dl20)
    err = refused(capsys, DL19, dl20, "--measures", "nDCG@10", "nDCG@5")
    assert f"superb: error: {dl20}: measure 'nDCG@5': it is not in its table.csv" in err
    assert "Traceback" not in err


def test_a_measure_with_another_rel_threshold_is_refused(capsys, tmp_path):
    dl20 = copy_folder(DL20, tmp_path / "dl20")
    table = pd.read_csv(dl20 / "table.csv")
    table["measure"] = table["measure"].str.replace("P(rel=2)@10", "P@10", regex=False)  # as if rel = 1
    table.to_csv(dl20 / "table.csv", index=False)
    rerecord(dl20)
    err = refused(capsys, DL19, dl20, "--measures", "nDCG@10", "P@10")
    assert "measure 'P@10' is not the same measure in every folder" in err
    assert f"{DL19} computes P(rel=2)@10" in err and f"{dl20} computes P@10" in err and "rel threshold" in err
    err = refused(capsys, DL19, dl20, "--measures", "P(rel=2)@10")
    assert f"{dl20}: measure 'P(rel=2)@10': the folder computes P@10 (a different rel threshold" in err
    assert main(["table", str(DL19), str(dl20), "--measures", "nDCG@10"]) == 0  # nDCG alone is the same measure


def test_two_folders_of_one_collection_are_refused(capsys, tmp_path):
    again = copy_folder(DL19, tmp_path / "dl19_again")
    err = refused(capsys, DL19, again, "--names", "A,B")
    assert f"{DL19} and {again} are two folders of the same collection" in err
    err = refused(capsys, DL19, DL19)
    assert "is given twice" in err


def test_other_bad_inputs_exit_2_with_the_fix(capsys, tmp_path):
    assert "--names gives 1 names" in refused(capsys, DL19, DL20, "--names", "DL19")
    assert "no such file" in refused(capsys, DL19, DL20, "--anchors", tmp_path / "none.csv")
    bad = tmp_path / "anchors.csv"
    bad.write_text("method,model,source,dl21_ndcg10\nx,y,z,0.5\n")
    assert "no column holds a collection and measure of the table (DL19_nDCG@10" in refused(
        capsys, DL19, DL20, "--names", "DL19,DL20", "--anchors", bad)
    assert "does not exist" in refused(capsys, DL19, tmp_path)


def braces_balance(text: str) -> bool:
    depth = 0
    for ch in re.sub(r"\\[{}]", "", text.replace("\\\\", "")):
        depth += {"{": 1, "}": -1}.get(ch, 0)
        if depth < 0:
            return False
    return depth == 0


def test_the_tex_is_one_booktabs_tabular_with_its_caption():
    frame = paper_table([DL19, DL20], names=["DL19", "DL20"], anchors=ANCHORS, average=True)
    tex = format_latex(frame)
    assert braces_balance(tex)
    assert tex.count("\\begin{tabular}") == tex.count("\\end{tabular}") == 1
    assert tex.count("\\begin{table}") == 1 and tex.count("\\caption{") == 1
    for rule in ("\\toprule", "\\midrule", "\\bottomrule", "\\cmidrule(lr){3-3}"):
        assert rule in tex
    caption = tex[tex.index("\\caption{"):tex.index("\\label")]
    assert "paired t-test" in caption and "Holm-Bonferroni" in caption and "$\\alpha$ = 0.05" in caption
    assert "DL19: n = 43 queries; DL20: n = 54 queries" in caption
    assert "DL19 ($n=43$)" in tex and "\\multicolumn{1}{c}{Average}" in tex
    assert "0.6114$^{c\\dagger}$" in tex and "0.4126$^{\\ddagger}$" in tex and "0.5058$^{=}$" in tex
    assert "\\textbf{0.7365}" in tex  # the best of the DL19 column, a quoted row
    assert "BM25 \\textgreater{}\\textgreater{} bi-encoder top100" in tex and "q4\\_k\\_m" in tex
    body = tex[tex.index("\\begin{tabular}"):tex.index("\\end{tabular}")]
    columns = 2 + 3
    for line in body.splitlines():
        if line.endswith("\\\\") and "multicolumn" not in line:
            assert line.count(" & ") == columns - 1, line


def test_special_characters_in_names_are_escaped(tmp_path):
    dl19 = copy_folder(DL19, tmp_path / "dl19")
    table = pd.read_csv(dl19 / "table.csv")
    nasty = "A&B 100% $x #1 my_run {v} ~t ^2 back\\slash"
    table["system"] = table["system"].replace({"BM25 >> PRP heapsort top10": nasty})
    table.to_csv(dl19 / "table.csv", index=False)
    rerecord(dl19)
    tex = format_latex(paper_table([dl19, DL20], names=["DL_19", "DL20"]))
    assert braces_balance(tex)
    expected = ("A\\&B 100\\% \\$x \\#1 my\\_run \\{v\\} \\textasciitilde{}t \\textasciicircum{}2 "
                "back\\textbackslash{}slash")
    assert escape(nasty) == expected and expected + " & -- & 0.5286" in tex
    assert "DL\\_19 ($n=43$)" in tex
    unescaped = re.sub(r"\\[&%$#_{}]|\\text\w+\{\}|\$\^\{[^}]*\}\$|\$\\alpha\$|\$n=\d+\$|\$\\geq\$", "", tex)
    unescaped = "\n".join(line.split("  % source:")[0] for line in unescaped.splitlines()
                          if not line.startswith("%"))
    assert not re.search(r"(?<!\\)[%$#_~^]", unescaped), "an unescaped special character"


def test_the_committed_table_and_the_readme_block_are_what_the_command_writes(tmp_path, monkeypatch):
    """results/trec_dl_table is `superb table`'s output as its provenance.json records the command, file for file, and
    README.md shows it (scripts/paper_table_readme.py: the same table, each number linked to table.csv)."""
    import importlib.util

    monkeypatch.chdir(ROOT)  # the command names the folders relative to the project
    committed = Path("results") / "trec_dl_table"
    command = rerun_recorded_table(committed, tmp_path / "trec_dl_table")
    assert "--anchors" in command
    spec = importlib.util.spec_from_file_location("paper_table_readme", ROOT / "scripts" / "paper_table_readme.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert module.block(committed, ROOT / "README.md") in readme
