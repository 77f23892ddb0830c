"""report.html in a real browser (issue 25): a page written by `superb run` is loaded from file:// in headless
Chromium (Debian's package; `bash scripts/setup.sh --dev` installs it), and the DOM after the page's script ran holds
the table and one query's two top-10 lists side by side, with the products' titles, labels and moves; a screenshot is
taken. The address (#a=...&b=...&filter=...) sets the compared systems and the filter.
"""

from __future__ import annotations

import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
import pytest

from local_data import DOCS
from report_helpers import tiny_folder  # noqa: F401 (a fixture)

pytestmark = pytest.mark.slow  # a real browser, started once per page load (a few seconds each)

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


def chromium() -> str:
    for name in ("/usr/bin/chromium", "chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    pytest.skip("Chromium is not installed and could not be: `bash scripts/setup.sh --dev` installs Debian's chromium "
                "where it runs as root with apt-get; elsewhere install a chromium package by hand")


def browse(page: Path, tmp: Path, *, fragment: str = "", screenshot: Path | None = None) -> str:
    """The DOM of ``page`` after its scripts ran (or a screenshot of it), in headless Chromium without network."""
    args = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={tmp / 'profile'}",
            "--enable-logging=stderr", "--v=0"]  # the page's console messages on stderr
    args += [f"--screenshot={screenshot}", "--window-size=1400,1000"] if screenshot else ["--dump-dom"]
    done = subprocess.run([*args, page.resolve().as_uri() + fragment], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    errors = [line for line in done.stderr.splitlines() if "CONSOLE" in line and "Uncaught" in line]
    assert not errors, errors  # the page's script ran without an error
    return done.stdout


class Node:
    def __init__(self, tag: str, attrs: dict[str, str]):
        self.tag, self.attrs, self.children, self.parts = tag, attrs, [], []

    def text(self) -> str:
        return "".join(p if isinstance(p, str) else p.text() for p in self.parts)

    def find_all(self, tag: str | None = None, cls: str | None = None, **attrs: str) -> list["Node"]:
        out = []
        for child in self.children:
            if (tag is None or child.tag == tag) and (cls is None or cls in child.attrs.get("class", "").split()) \
                    and all(child.attrs.get(k.replace("_", "-")) == v for k, v in attrs.items()):
                out.append(child)
            out.extend(child.find_all(tag, cls, **attrs))
        return out

    def by_id(self, id_: str) -> "Node":
        found = self.find_all(id=id_)
        assert len(found) == 1, f"{len(found)} elements with id {id_!r}"
        return found[0]


class DomParser(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.root = Node("#root", {})
        self.stack = [self.root]

    def handle_starttag(self, tag, attrs):
        node = Node(tag, {k: v or "" for k, v in attrs})
        self.stack[-1].children.append(node)
        self.stack[-1].parts.append(node)
        if tag not in VOID:
            self.stack.append(node)

    def handle_endtag(self, tag):
        for i in range(len(self.stack) - 1, 0, -1):
            if self.stack[i].tag == tag:
                del self.stack[i:]
                return

    def handle_data(self, text):
        self.stack[-1].parts.append(text)


def parse(html: str) -> Node:
    parser = DomParser()
    parser.feed(html)
    return parser.root


def test_the_page_shows_the_table_and_two_rankings_side_by_side(tiny_folder, tmp_path):
    folder = tiny_folder
    page = folder / "report.html"
    dom = parse(browse(page, tmp_path))

    main_table = dom.by_id("table").find_all("table")[0]  # Table 4 itself; comparisons and MDE tables follow it
    rows = {tr.attrs["data-system"] for tr in main_table.find_all("tr") if "data-system" in tr.attrs}
    assert rows == {"BM25", "BM25 >> shuffle", "BM25 >> shuffle >> random"}  # table.md's rows, rendered
    comparisons = {tr.attrs.get("data-system") for tr in dom.by_id("table").find_all("tr")}
    assert "BM25 >> shuffle vs BM25" in comparisons  # the comparisons section (effect, interval, p) is on the page
    side = dom.by_id("side-by-side")
    lists = side.find_all("ol", "ranking")
    # default pair: the best row with a baseline (nDCG@10) against its baseline: BM25 >> shuffle (0.9826) vs BM25
    assert [ol.attrs["data-system"] for ol in lists] == ["BM25", "BM25 >> shuffle"]
    titles = dict(DOCS)
    query = dom.by_id("query-title").text()
    for ol in lists:
        items = ol.find_all("li")
        assert 1 <= len(items) <= 10
        shown = [li.find_all("span", "title")[0].text() for li in items]
        # each entry: the product's title from the data set, then its docno
        assert all(any(t == titles[d] + d for d in titles) for t in shown), shown
        assert all(li.find_all("span", "badge") for li in items)  # a label badge (human label, or ? unjudged)
    assert "running shoes" in query or "mug" in query
    # the reranked list names its stages: the product's rank in BM25 with BM25's score
    assert "BM25 #" in lists[1].find_all("span", "meta")[0].text()

    screenshot = tmp_path / "report.png"
    browse(page, tmp_path, screenshot=screenshot)
    assert screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and screenshot.stat().st_size > 20_000


def test_the_address_picks_the_systems_and_the_filter(tiny_folder, tmp_path):
    folder = tiny_folder
    a, b = "BM25", "BM25 >> shuffle >> random"
    perquery = pd.read_csv(folder / "perquery.csv", dtype={"qid": str})
    ndcg = perquery[(perquery["view"] == "full") & (perquery["measure"] == "nDCG@10")].pivot(
        index="qid", columns="system", values="value")
    losses = sorted(ndcg.index[ndcg[b] < ndcg[a] - 1e-9])
    assert losses  # the random reranker loses on at least one of the two queries

    fragment = "#" + "&".join(f"{k}={v}" for k, v in {"a": a.replace(" ", "%20").replace(">", "%3E"),
                                                         "b": b.replace(" ", "%20").replace(">", "%3E"),
                                                         "filter": "loss"}.items())
    dom = parse(browse(folder / "report.html", tmp_path, fragment=fragment))
    shown = [tr.attrs["title"].split(":")[0] for tr in dom.by_id("queries").find_all("tr") if "data-i" in tr.attrs]
    assert sorted(shown) == losses
    assert [ol.attrs["data-system"] for ol in dom.by_id("side-by-side").find_all("ol", "ranking")] == [a, b]
    assert "worse on %d" % len(losses) in dom.by_id("summary").text()

    # no query of the tiny data set lacks a relevant product: the filter leaves none, and says so
    dom = parse(browse(folder / "report.html", tmp_path, fragment="#filter=norel"))
    assert "no query matches this filter" in dom.by_id("queries").text()


def test_human_labels_first_then_the_llm_label_where_there_is_none(tiny_folder, tmp_path):
    import shutil

    from folder_helpers import rerecord
    from local_data import QRELS
    from superb.cli import main

    folder = shutil.copytree(tiny_folder, tmp_path / "copy")
    bm25 = [line.split() for line in (folder / "runs" / "BM25.run").read_text().splitlines()]
    (folder / "llm_qrels.trec").write_text("".join(f"{q} 0 {d} 0\n" for q, _, d, *_ in bm25))  # 0 for every product
    rerecord(folder)  # as `superb judge --fill` records the file it writes
    assert main(["report", str(folder)]) == 0
    dom = parse(browse(folder / "report.html", tmp_path, fragment="#a=BM25&b=BM25"))
    human = {d: label for _, d, label in QRELS}  # the tiny data set's docnos are unique across its two queries
    seen = {"human": 0, "llm": 0}
    for li in dom.by_id("side-by-side").find_all("li"):
        docno = li.find_all("span", "docno")[0].text()
        badge = li.find_all("span", "badge")[0]
        is_llm = "llm" in badge.attrs["class"].split()
        assert badge.text() == str(human.get(docno, 0)) and is_llm == (docno not in human), (docno, badge.attrs)
        seen["llm" if is_llm else "human"] += 1
    assert seen["human"] and seen["llm"]


def test_each_product_shows_its_score_at_each_stage(tiny_folder, tmp_path):
    import re
    import shutil

    from superb.cli import main
    from superb.stage_scores import read_stage_scores

    random = "BM25 >> shuffle >> random"
    scores = read_stage_scores(tiny_folder).set_index(["system", "docno"])  # docnos are unique across the 2 queries
    fragment = "#a=BM25%20%3E%3E%20shuffle&b=" + random.replace(" ", "%20").replace(">", "%3E")
    dom = parse(browse(tiny_folder / "report.html", tmp_path, fragment=fragment))
    lists = dom.by_id("side-by-side").find_all("ol", "ranking")
    assert [ol.attrs["data-system"] for ol in lists] == ["BM25 >> shuffle", random]
    checked = 0
    for ol in lists:
        for li in ol.find_all("li"):
            docno = li.find_all("span", "docno")[0].text()
            text = li.find_all("span", "scores")[0].text()  # e.g. "scores: first_stage 1.953e-06 · random 0.6962"
            row = scores.loc[(ol.attrs["data-system"], docno)]
            for column in ("first_stage_score", "random_score"):
                if pd.isna(row[column]):
                    continue
                found = re.search(rf"\b{column[:-6]} (\S+)", text)
                assert found and float(found.group(1)) == pytest.approx(row[column], rel=1e-3), (docno, text)
                checked += 1
            assert "llm " not in text  # each stage shows its own column only; no copy named llm
    assert checked >= 2 * len(lists[1].find_all("li"))
    assert "scores not stored" not in dom.by_id("side-by-side").text()

    old = shutil.copytree(tiny_folder, tmp_path / "old")  # a folder written before stage_scores.csv.gz existed
    (old / "stage_scores.csv.gz").unlink()
    assert main(["report", str(old)]) == 0
    dom = parse(browse(old / "report.html", tmp_path, fragment=fragment))
    side = dom.by_id("side-by-side")
    assert not side.find_all("span", "scores") and "(scores not stored in this folder)" in side.text()
    assert all(ol.find_all("li") for ol in side.find_all("ol", "ranking"))  # the lists themselves still render


def test_a_page_with_declared_hypotheses_opens_on_the_first_against_its_declared_baseline(tmp_path):
    """results/chorus_table4_full declares [[hypotheses]] (its first: BM25 >> pointwise against BM25): the committed
    page opens on that pair, and each row's baseline is its hypothesis's `against` or its input, never the baseline
    families of a table without hypotheses (the page used to open on BM25 vs RM3)."""
    import json
    import re

    folder = Path(__file__).resolve().parents[1] / "results" / "chorus_table4_full"
    page = folder / "report.html"
    dom = parse(browse(page, tmp_path))
    lists = dom.by_id("side-by-side").find_all("ol", "ranking")
    assert [ol.attrs["data-system"] for ol in lists] == ["BM25", "BM25 >> pointwise"]
    payload = json.loads(re.search(r'<script type="application/json" id="data">(.*?)</script>',
                                   page.read_text(), re.S).group(1))
    assert payload["hypotheses"][0] == ["BM25", "BM25 >> pointwise"]
    assert payload["baselines"]["fuse(BM25, bi-encoder, pointwise)"] == "BM25"  # its first declared against
    assert all(b in payload["systems"] for b in payload["baselines"].values())
