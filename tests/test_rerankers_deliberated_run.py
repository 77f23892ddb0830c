"""Deliberated reranking inside `superb run`, not only called by hand: the runner sets every reranker's progress-bar
``label`` to the pipeline's name, which once overwrote the deliberated reranker's ``label`` option (the question it
asks), so that in every run the yes/no question fell back on all products and the grade question was read as an
expected grade. Checked here on the real Chorus data, PISA BM25, and the fake server."""

import json
import re
import zlib

import pandas as pd
import pytest

from chorus_specs import QUERIES, chorus_spec
from superb.testing.fakeserver import FakeServer, Reply
from reranker_helpers import lp
from superb.cli import main
from superb.data import load_dataset

RERANKERS = """
[[pipelines]]
name = "PISA BM25 >> deliberated grade"
input = "PISA BM25"
rerank = { type = "deliberated", top_k = 10 }
[[pipelines]]
name = "PISA BM25 >> deliberated yesno"
input = "PISA BM25"
rerank = { type = "deliberated", question = "yesno", top_k = 10 }
"""


def kind(product: str) -> str:
    """Half of the products are "x", half "y", by a hash of their text."""
    return "x" if zlib.crc32(product.encode()) % 2 else "y"


def model(request):
    """Attributes for the first step; then, per product kind: x is grade 0 (0.6) or 3 (0.4), and yes (0.9); y is
    grade 1 (1.0), and yes (0.1). By grade then confidence y ranks above x (1.5 against 0.3); by the expected grade
    x would rank above y (1.2 against 1.0)."""
    prompt = "".join(m["content"] for m in request["messages"])
    product = re.search(r"^Product: <<< (.*) >>>$", prompt, re.M)
    if product is None:
        return Reply("- the kind of product searched for\n- good value")
    x = kind(product.group(1)) == "x"
    if prompt.rstrip().endswith("Answer:") and "yes or no" in prompt:
        return lp({"yes": 0.9, "no": 0.1} if x else {"yes": 0.1, "no": 0.9})
    return lp({"0": 0.6, "3": 0.4} if x else {"1": 1.0})


@pytest.fixture()
def home(chorus_run_home):
    return chorus_run_home


@pytest.mark.slow
def test_deliberated_label_option_survives_the_runner(home):
    out = home / "out"
    with FakeServer(responder=model) as srv:
        spec = home / "delib.toml"
        spec.write_text(chorus_spec("delib", srv.base_url, home / "cache.sqlite", RERANKERS, first_stage="PISA BM25"))
        assert main(["run", str(spec), "--out", str(out)]) == 0
    usage = pd.read_csv(out / "usage.csv").set_index("system")
    for name in ("PISA BM25 >> deliberated grade", "PISA BM25 >> deliberated yesno"):
        assert usage.loc[name, "fallbacks"] == 0 and usage.loc[name, "failures"] == 0, name
    systems = json.loads((out / "systems.json").read_text())
    chorus = load_dataset({"name": "chorus"})  # the prompts show the titles: each product's kind
    titles = {d["docno"]: d["title"] for d in chorus.docs_iter()}
    checked = 0
    for name, first in (("PISA BM25 >> deliberated grade", "y"), ("PISA BM25 >> deliberated yesno", "x")):
        run = pd.read_csv(out / systems[name], sep=" ", header=None, names=["qid", "q0", "docno", "rank", "score", "tag"],
                          dtype={"qid": str, "docno": str})
        for qid, group in run.groupby("qid"):
            kinds = [kind(titles[d]) for d in group.sort_values("rank")["docno"][:10]]
            assert kinds == sorted(kinds, key=lambda k: k != first), (name, qid, kinds)
            checked += len(set(kinds)) == 2
    assert checked >= len(QUERIES)  # most queries show both kinds, so the order is a real check
