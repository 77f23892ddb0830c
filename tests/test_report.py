"""report.html's data and markdown (issue 25), without a browser (tests/test_report_browser.py loads the page in
Chromium): table.md rendered generically, whatever its cells hold; the payload gathered from a real results folder
(titles from the data set, human and LLM labels, each system's stages, first-stage scores); a data set that cannot be
loaded leaves docnos and says why; the committed pages are under 5 MB and show their folder's current table.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from folder_helpers import rerecord
from local_data import DOCS, QRELS
from report_helpers import tiny_folder  # noqa: F401 (a fixture)
from superb.report.markdown import split_row, to_html
from superb.report.page import render, sections, table_sections

ROOT = Path(__file__).resolve().parents[1]
COMMITTED = ["quickstart", "chorus_table4_full"]

TABLE = """# demo

A description with `code` and *emphasis*.

| System | nDCG@10 [full] | nDCG@10 [condensed] | note |
|:---|---:|---:|:---|
| BM25 | 0.5952 [0.55, 0.64] | 0.6787 | a \\| b |
| \u21b3 BM25 >> pointwise | 0.6119\u2020 [0.57, 0.66] | 0.6884 (MDE 0.03) | confirmatory |
| \u2003\u21b3 BM25 >> bi-encoder >> pointwise | 0.5783\u2021 | 0.7005 | exploratory |

\u2020 significantly better, \u2021 significantly worse <after> Holm.

## Views

- A >> B vs C, nDCG@10: better (full), n.s. (condensed)
  continued on the next line
- second item
"""


def test_markdown_tables_keep_every_mark_interval_and_note():
    html = to_html(TABLE)
    assert "<h2>demo</h2>" in html and "<code>code</code>" in html and "<em>emphasis</em>" in html
    assert "0.6119\u2020 [0.57, 0.66]" in html and "0.6884 (MDE 0.03)" in html and "0.5783\u2021" in html
    assert "a | b" in html  # an escaped bar stays inside its cell
    assert "&lt;after&gt;" in html  # text is escaped
    rows = re.findall(r'<tr data-system="([^"]*)" data-depth="(\d)">', html)
    assert rows == [("BM25", "0"), ("BM25 &gt;&gt; pointwise", "1"),
                    ("BM25 &gt;&gt; bi-encoder &gt;&gt; pointwise", "2")]
    assert html.count('class="right"') == 2 * 4  # header and data cells of the two right-aligned columns
    assert "<li>A &gt;&gt; B vs C, nDCG@10: better (full), n.s. (condensed) continued on the next line</li>" in html


def test_sections_fold_what_follows_the_main_table():
    parts = sections(TABLE)
    assert [h for h, _ in parts] == [None, "Views"]
    assert "<table" in parts[0][1] and "<ul>" in parts[1][1]


def test_split_row():
    assert split_row("| a | b \\| c |") == [" a ", " b | c "]


def test_the_payload_of_a_real_folder(tiny_folder, tmp_path):
    from superb.report.data import collect

    folder = shutil.copytree(tiny_folder, tmp_path / "copy")
    # an LLM judge's labels (the format `superb judge --fill` writes): for every product of BM25's run
    bm25 = [line.split() for line in (folder / "runs" / "BM25.run").read_text().splitlines()]
    (folder / "llm_qrels.trec").write_text("".join(f"{q} 0 {d} 0\n" for q, _, d, *_ in bm25))
    rerecord(folder)  # as `superb judge --fill` records the file it writes

    payload = collect(folder)
    assert payload["systems"] == ["BM25", "BM25 >> shuffle", "BM25 >> shuffle >> random"]
    assert payload["baselines"] == {"BM25 >> shuffle": "BM25", "BM25 >> shuffle >> random": "BM25 >> shuffle"}
    assert payload["chains"]["BM25 >> shuffle >> random"] == ["BM25", "BM25 >> shuffle", "BM25 >> shuffle >> random"]
    assert payload["first_stages"] == ["BM25"]  # reranked runs hold rank-derived scores: not shown
    titles = dict(zip(payload["docs"], payload["titles"]))
    assert titles == {d: t for d, t in DOCS if d in titles} and payload["titles_missing"] == 0
    qids = [q["qid"] for q in payload["queries"]]
    for qid, docno, label in QRELS:
        assert payload["qrels"][qids.index(qid)][str(payload["docs"].index(docno))] == label
    assert sum(len(q) for q in payload["llm_qrels"]) == len(bm25) and payload["has_llm_qrels"]
    # first-stage scores as in the run file, one per listed product
    first = payload["runs"]["BM25"][0]
    assert [payload["docs"][i] for i in first] == [d for q, _, d, *_ in bm25 if q == qids[0]]
    assert payload["scores"]["BM25"][0] == [round(float(r[4]), 4) for r in bm25 if r[0] == qids[0]]
    ndcg = payload["values"]["full|nDCG@10"]
    assert set(ndcg) == set(payload["systems"]) and all(len(v) == len(qids) for v in ndcg.values())
    assert json.loads(render(payload).split('id="data">')[1].split("</script>")[0])["systems"] == payload["systems"]


def test_a_data_set_that_cannot_be_loaded_leaves_docnos_and_says_why(tiny_folder, tmp_path):
    from superb.report.data import collect

    folder = shutil.copytree(tiny_folder, tmp_path / "copy")
    provenance = json.loads((folder / "provenance.json").read_text())
    provenance["spec"]["dataset"]["docs"] = str(tmp_path / "gone" / "docs.jsonl")
    (folder / "provenance.json").write_text(json.dumps(provenance))
    payload = collect(folder)
    assert payload["titles"] == [""] * len(payload["docs"]) and payload["titles_missing"] == len(payload["docs"])
    assert "could not be loaded" in payload["title_source"] and "docs.jsonl" in payload["title_source"]


def test_superb_report_writes_the_page_and_names_a_wrong_folder(tiny_folder, tmp_path, capsys):
    from superb.cli import main

    folder = tiny_folder
    assert (folder / "report.html").is_file()  # written by `superb run`
    out = tmp_path / "elsewhere.html"
    assert main(["report", str(folder), "--out", str(out)]) == 0
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert main(["report", str(tmp_path / "nothing")]) == 2
    assert "nothing does not exist" in capsys.readouterr().err


def test_a_script_end_inside_the_data_cannot_end_the_page(tiny_folder):
    from superb.report.data import collect

    payload = collect(tiny_folder)
    payload["titles"][0] = "</script><script>alert(1)</script>"
    html = render(payload)
    assert html.count("</script>") == 2 and "alert(1)" in html  # kept, as \u003c-escaped JSON


@pytest.mark.parametrize("name", COMMITTED)
def test_committed_pages_are_small_and_show_their_folders_table(name):
    folder = ROOT / "results" / name
    page = folder / "report.html"
    assert page.is_file(), f"{page} is missing: `superb report results/{name}` writes it"
    html = page.read_text(encoding="utf-8")
    assert len(html.encode("utf-8")) < 5_000_000
    payload = json.loads(html.split('<script type="application/json" id="data">')[1].split("</script>")[0])
    assert payload["systems"] == list(json.loads((folder / "systems.json").read_text(encoding="utf-8")))
    current = "".join(h for _, h in table_sections((folder / "table.md").read_text(encoding="utf-8"), payload["name"]))
    shown = re.sub(r"</?details[^>]*>|<summary>.*?</summary>|\s+", "", html)
    assert re.sub(r"\s+", "", current) in shown, (
        f"{page} shows an older table.md: regenerate it with `superb report results/{name}`")


def test_the_page_needs_no_network():
    html = (ROOT / "superb" / "report" / "templates" / "report.html.j2").read_text(encoding="utf-8")
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", html) and "@import" not in html


def test_a_folder_copy_without_provenance_still_renders(tiny_folder, tmp_path):
    from superb.report.data import collect

    folder = shutil.copytree(tiny_folder, tmp_path / "copy")
    (folder / "provenance.json").unlink()
    payload = collect(folder)
    assert payload["chains"]["BM25 >> shuffle"] == ["BM25 >> shuffle"]  # stages unknown without the spec
    assert payload["title_source"].startswith("no data set in provenance.json")


def test_a_failed_page_does_not_fail_the_run(tiny_folder, tmp_path, monkeypatch, capsys):
    import superb.report
    from superb.cli import main
    from superb.errors import DataError

    def broken(folder, out=None):
        raise DataError("a page that cannot be written")

    monkeypatch.setattr(superb.report, "write_report", broken)
    monkeypatch.setattr("superb.cli.write_report", broken)  # where `superb run` calls it
    spec = tiny_folder.parent.parent / "tiny_report.toml"
    out = tmp_path / "again"
    assert main(["run", str(spec), "--out", str(out)]) == 0  # the results are written all the same
    assert (out / "table.md").is_file() and not (out / "report.html").exists()
    err = capsys.readouterr().err
    assert "report.html not written (a page that cannot be written)" in err and f"superb report {out}" in err
