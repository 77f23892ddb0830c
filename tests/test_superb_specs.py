"""The shipped SUPERB specs (experiments/superb_table4.toml, superb_table5.toml) end to end on a tiny ESCI fixture.

Each spec is copied as shipped; only its [dataset] paths (to a fixture written here in the official ESCI column
layout), its [queries] (all three fixture queries) and its [llm] (the fake OpenAI-compatible server, cache off) are
rewritten. Real Terrier BM25/RM3, real rerankers; the fake model grades 3 a red product whose title holds a content
word of the query, 1 one of another colour, 0 the rest, and orders listwise windows by that grade (the first stage
cannot see colours, so reranking has to move products). Checked: exit 0, a table row per pipeline,
each reranker's baseline is its own first stage, docnos preserved, call counts per query (sliding windows:
ceil((k - w) / s) + 1 per query, k = min(100, retrieved)).
"""

from __future__ import annotations

import json
import math
import re
import tomllib
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

from superb.testing.fakeserver import FakeServer, Reply
from superb.cli import main

pytestmark = [pytest.mark.java, pytest.mark.slow]

EXPERIMENTS = Path(__file__).resolve().parents[1] / "experiments"
STOP = {"best", "for"}
QUERIES = {  # query -> (words of its relevant products, words of its other products)
    "best trail running shoes": ("Trail Running Shoes", "Sock Liners"),
    "best wireless earbuds": ("Wireless Earbuds", "Charging Case"),
    "best camping tent for family": ("Camping Tent", "Tarp Stakes"),
}
PER_QUERY = 40  # 120 products: every title holds "best", so each query retrieves more than the top 100


def content_words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z]+", text.lower()) if w not in STOP}


def write_fixture(folder: Path) -> tuple[Path, Path, dict[str, str]]:
    """ESCI-format products parquet + SUPERB-style triplets csv; returns the paths and docno -> title and colour text."""
    products, triplets = [], []
    for i, (query, (good, other)) in enumerate(QUERIES.items()):
        for j in range(PER_QUERY):
            relevant = j % 3 == 0
            title = f"Best {good if relevant else other} {['Pro', 'Lite', 'Max', 'Go'][j % 4]} {j}"
            pid = f"B0{i}TEST{j:03d}"
            products.append({"product_id": pid, "product_title": title,
                             "product_description": None if j % 5 else f"A {title.lower()} for everyday use.",
                             "product_bullet_point": f"Model {j}\nWarranty {1 + j % 3} years",
                             "product_brand": f"Brand{j % 7}", "product_color": ["black", "red", None, "red"][j % 4],
                             "product_locale": "us"})
            label = (3 if j % 2 == 0 else 2) if relevant else (1 if j % 2 == 0 else 0)
            triplets.append({"query": query, "product_id": pid, "label": label})
    folder.mkdir(parents=True, exist_ok=True)
    products_file, triplets_file = folder / "products.parquet", folder / "triplets.csv"
    pd.DataFrame(products).to_parquet(products_file, index=False)
    pd.DataFrame(triplets).to_csv(triplets_file, index=False)
    texts = {p["product_id"]: f"title: {p['product_title']} | color: {p['product_color']}" for p in products}
    return triplets_file, products_file, texts


def grade(query: str, product: str) -> str:
    """The fake model's grade: 3 a red product of the kind searched for, 1 another colour, 0 another kind.
    ``product`` is a product's prompt text, "title: ... | brand: ... | color: ..." (the specs' fields)."""
    parts = dict(part.split(": ", 1) for part in product.split(" | ") if ": " in part)
    if not content_words(query) & content_words(parts.get("title", "")):
        return "0"
    return "3" if parts.get("color") == "red" else "1"


def responder(request):
    """Deterministic answers to the pointwise, deliberated and listwise prompts."""
    prompt = request["messages"][-1]["content"]
    if "Rank the" in prompt:  # listwise window: matching products first, then the shown order
        query = re.search(r"^Search query: (.*)$", prompt, flags=re.M).group(1)
        items = re.findall(r"^\[(\d+)\] <<< (.*) >>>$", prompt, flags=re.M)
        order = sorted(items, key=lambda it: (-int(grade(query, it[1])), int(it[0])))
        return Reply(" > ".join(f"[{i}]" for i, _ in order))
    query = re.search(r"^Query: (.*)$", prompt, flags=re.M).group(1)
    if prompt.rstrip().endswith("Grade:"):
        g = grade(query, re.search(r"^Product: <<< (.*) >>>$", prompt, flags=re.M).group(1))
        other = "0" if g != "0" else "3"
        return Reply(g, ((g, -0.05, {g: -0.05, other: -3.0}),)) if request.get("logprobs") else Reply(g)
    return Reply("- durable materials\n- good value for money")  # deliberated: the ideal product's attributes


def copy_spec(name: str, folder: Path, triplets: Path, products: Path, base_url: str | None) -> tuple[Path, dict]:
    """The shipped spec on the fixture; its [llm] table is kept as shipped when ``base_url`` is None."""
    text = (EXPERIMENTS / name).read_text(encoding="utf-8")
    text, n1 = re.subn(r'^triplets = ".*"$', f'triplets = "{triplets}"', text, flags=re.M)
    text, n2 = re.subn(r'^products = ".*"$', f'products = "{products}"', text, flags=re.M)
    text, n3 = re.subn(r"^\[queries\]\n(?:\w.*\n)*", '[queries]\nsplit = "all"\n', text, flags=re.M)
    fake = f'[llm]\nmodel = "fake-grader"\nbase_urls = ["{base_url}"]\ncache = "off"\n'
    text, n4 = re.subn(r"^\[llm\]\n(?:\w.*\n)*", (lambda m: m.group(0)) if base_url is None else fake, text,
                       flags=re.M)
    assert (n1, n2, n3, n4) == (1, 1, 1, 1), f"{name}: the shipped layout changed, update copy_spec"
    spec = folder / name
    spec.write_text(text, encoding="utf-8")
    return spec, tomllib.loads(text)


def read_run(out: Path, file: str) -> pd.DataFrame:
    return pd.read_csv(out / file, sep=" ", header=None, names=["qid", "q0", "docno", "rank", "score", "tag"],
                       dtype={"qid": str, "docno": str})


def first_stage_of(name: str) -> str:
    return name.split(" >> ")[0]


def run_shipped(name: str, tmp_path: Path, monkeypatch):
    monkeypatch.setenv("SUPERB_HOME", str(tmp_path / "home"))
    triplets, products, titles = write_fixture(tmp_path / "data")
    out = tmp_path / "out"
    with FakeServer(responder=responder) as srv:
        spec, raw = copy_spec(name, tmp_path, triplets, products, srv.base_url)
        assert raw["dataset"] == {"name": "superb-triplets", "triplets": str(triplets), "products": str(products),
                                  "locale": "us"}
        assert main(["run", str(spec), "--out", str(out)]) == 0
        received = list(srv.received)
    for file in ["table.md", "table.csv", "usage.csv", "systems.json"]:
        assert (out / file).is_file(), file
    systems = json.loads((out / "systems.json").read_text())
    runs = {system: read_run(out, file) for system, file in systems.items()}
    return raw, out, runs, received, titles


def check_common(raw: dict, out: Path, runs: dict[str, pd.DataFrame]) -> pd.DataFrame:
    names = [p["name"] for p in raw["pipelines"]]
    table = pd.read_csv(out / "table.csv")
    assert set(table["system"]) == set(names)
    md = (out / "table.md").read_text()
    for name in names:
        assert name in md
    baselines = table.groupby("system")["baseline"].agg(lambda s: set(s.dropna()))
    for p in raw["pipelines"]:
        if "first_stage" in p or p.get("baseline") is False:
            assert baselines[p["name"]] == set(), p["name"]
        else:
            assert baselines[p["name"]] == {first_stage_of(p["name"])}, p["name"]
    assert set(runs) == set(names)
    for name, run in runs.items():
        base = runs[first_stage_of(name)]
        assert run["qid"].nunique() == len(QUERIES)
        for qid, group in base.groupby("qid"):
            assert sorted(run.loc[run["qid"] == qid, "docno"]) == sorted(group["docno"]), (name, qid)
    return pd.read_csv(out / "usage.csv").set_index("system")


def test_table4_spec_end_to_end(tmp_path, monkeypatch):
    raw, out, runs, received, titles = run_shipped("superb_table4.toml", tmp_path, monkeypatch)
    usage = check_common(raw, out, runs)
    qids = sorted(runs["BM25"]["qid"].unique())
    assert [p["first_stage"]["model"] for p in raw["pipelines"] if "first_stage" in p] == ["bm25", "rm3"]
    for fs in ("BM25", "RM3"):
        assert runs[fs].groupby("qid").size().tolist() == [20] * len(QUERIES)  # the top 20
        assert usage.loc[fs, "requests"] == 0
        assert usage.loc[f"{fs} >> pointwise", "requests"] == 20 * len(qids)
        assert usage.loc[f"{fs} >> deliberated", "requests"] == 21 * len(qids)  # + one attributes call per query
        assert usage.loc[f"{fs} >> listwise", "requests"] == len(qids)
    # pointwise used the four-level "best" prompt, with logprobs; every reranker put the matching titles first
    pointwise = [r for r in received if "excels on what a shopper would weigh" in r["messages"][-1]["content"]]
    assert len(pointwise) == 2 * 20 * len(qids) and all(r.get("logprobs") for r in pointwise)
    topics = dict(pd.read_csv(out / "topics.tsv", sep="\t", header=None, dtype=str).values)
    def grades(run: pd.DataFrame, qid: str) -> list[int]:
        return [int(grade(topics[qid], titles[d])) for d in run[run["qid"] == qid].sort_values("rank")["docno"]]

    for fs in ("BM25", "RM3"):  # the first stage does not see colours: the rerankers have something to fix
        assert any(grades(runs[fs], q) != sorted(grades(runs[fs], q), reverse=True) for q in qids)
    for name, run in runs.items():
        if " >> " in name:
            for qid in qids:
                assert grades(run, qid) == sorted(grades(run, qid), reverse=True), (name, qid)


def expected_windows(k: int, window: int, step: int) -> int:
    return 1 if k <= window else math.ceil((k - window) / step) + 1


def test_table5_spec_end_to_end(tmp_path, monkeypatch):
    raw, out, runs, received, _ = run_shipped("superb_table5.toml", tmp_path, monkeypatch)
    usage = check_common(raw, out, runs)
    topics = dict(pd.read_csv(out / "topics.tsv", sep="\t", header=None, dtype=str).values)
    settings = {(20, 10), (10, 5), (30, 15), (50, 25)}
    expected: Counter = Counter()  # (query text, window size) -> listwise calls
    for p in raw["pipelines"]:
        rerank = p.get("rerank", [])
        slides = [r for r in ([rerank] if isinstance(rerank, dict) else rerank) if r["type"] == "sliding"]
        if not slides:
            continue
        w, s = slides[0]["window"], slides[0]["step"]
        assert (w, s) in settings and slides[0]["top_k"] == 100
        k_of = runs[first_stage_of(p["name"])].groupby("qid").size().clip(upper=100)
        assert (k_of == 100).all()  # the fixture gives every query a full top 100
        for qid, k in k_of.items():
            expected[(topics[qid], min(w, k))] += expected_windows(k, w, s)
        assert usage.loc[p["name"], "requests"] == sum(expected_windows(k, w, s) for k in k_of)
    seen = Counter()
    for r in received:
        prompt = r["messages"][-1]["content"]
        seen[(re.search(r"^Search query: (.*)$", prompt, flags=re.M).group(1),
              len(re.findall(r"^\[\d+\] ", prompt, flags=re.M)))] += 1
    assert seen == expected
    assert expected[("best wireless earbuds", 10)] == 2 * 19 and expected[("best wireless earbuds", 50)] == 2 * 3
    for fs in ("BM25", "RM3"):
        shuffled, base = runs[f"{fs} >> shuffle"], runs[fs]
        for qid, group in base.groupby("qid"):
            top = group.sort_values("rank")["docno"].tolist()[:100]
            mixed = shuffled[shuffled["qid"] == qid].sort_values("rank")["docno"].tolist()[:100]
            assert sorted(mixed) == sorted(top) and mixed != top
        assert usage.loc[f"{fs} >> shuffle", "requests"] == 0


@pytest.mark.parametrize("name, expected", [
    ("superb_table4.toml", {"BM25 >> pointwise": 60, "BM25 >> deliberated": 63, "RM3 >> listwise": 3}),
    # RM3's windows that repeat one of BM25's (the same products in the same order at the bottom of the fixture's
    # top 100) are counted once, as the real run serves them from the cache: 6 of RM3's 9 windows of 50 are new
    ("superb_table5.toml", {"BM25 >> sliding w=10 s=5": 57, "BM25 >> sliding w=50 s=25": 9,
                            "RM3 >> sliding w=50 s=25": 6, "RM3 >> shuffle": 0}),
])
def test_shipped_llm_table_dry_run(name, expected, tmp_path, monkeypatch, capsys):
    """The [llm] tables as committed (embedded model) parse; --dry-run counts calls without starting any model."""
    monkeypatch.setenv("SUPERB_HOME", str(tmp_path / "home"))
    triplets, products, _ = write_fixture(tmp_path / "data")
    spec, raw = copy_spec(name, tmp_path, triplets, products, None)
    assert "base_urls" not in raw["llm"] and raw["llm"]["embedded_model"] == "1.5b"
    assert main(["run", str(spec), "--dry-run"]) == 0
    printed = capsys.readouterr().out
    for system, calls in expected.items():  # 3 queries x (20 | 21 | 1 | 19 | 3 | 0) calls
        assert re.search(rf"^\s*{re.escape(system)}\s+{calls}\s", printed, flags=re.M), (system, printed)
    assert not (tmp_path / "home" / "llm-cache.sqlite").exists()
