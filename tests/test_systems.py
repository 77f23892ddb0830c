"""Systems as `>>` pipelines: a shared prefix runs once (Memo), rerankers are labelled with their pipeline's name, and
the tie rule gives strictly decreasing scores in trec_eval's order."""

import json

import numpy as np
import pandas as pd
import pyterrier as pt
import pytest

from superb.errors import DataError
from superb.trec.runs import is_strictly_decreasing, strictly_decreasing, trec_order
from superb.run.spec import PipelineSpec
from superb.pipelines.systems import Memo, _rerankers

TOPICS = pd.DataFrame({"qid": ["q1", "q2"], "query": ["usb cable", "laptop"]})


class Counting(pt.Transformer):
    def __init__(self):
        self.calls = 0

    def transform(self, inp):
        self.calls += len(inp) > 0
        rows = [(q, t, f"{q}-d{i}", 3.0 - i) for q, t in zip(inp["qid"], inp["query"]) for i in range(3)]
        return pd.DataFrame(rows, columns=["qid", "query", "docno", "score"])


class Reverse(pt.Transformer):
    def transform(self, inp):
        return inp.assign(score=-inp["score"])


def test_memo_runs_a_shared_prefix_once_per_input():
    inner = Counting()
    shared = Memo(inner, "BM25")
    a, b = shared >> Reverse(), shared >> pt.Transformer.identity()
    first, second = a(TOPICS), b(TOPICS)
    assert inner.calls == 1 and shared.runs == 1  # two pipelines, one retrieval
    assert second["score"].tolist() == [3.0, 2.0, 1.0] * 2 and first["score"].tolist() == [-3.0, -2.0, -1.0] * 2
    got = shared(TOPICS)
    got.loc[0, "score"] = 99  # callers get copies: the stored run cannot be changed from outside
    assert got.loc[0, "score"] == 99 and shared(TOPICS).loc[0, "score"] == 3.0
    shared(TOPICS.head(1))  # another input: computed
    assert inner.calls == 2
    assert shared(TOPICS.head(0)).empty and inner.calls == 2  # pt.Experiment's empty probe: no work counted


def test_rerankers_carry_the_pipeline_name_as_progress_label(tmp_path):
    from superb.data import load_dataset
    from superb.transformers.base import Reranker

    docs = tmp_path / "docs.jsonl"
    docs.write_text(json.dumps({"docno": "d1", "title": "usb cable"}) + "\n")
    (tmp_path / "q.tsv").write_text("q1\tusb cable\n")
    (tmp_path / "qrels.trec").write_text("q1 0 d1 1\n")
    dataset = load_dataset({"name": "local", "docs": str(docs), "queries": str(tmp_path / "q.tsv"),
                            "qrels": str(tmp_path / "qrels.trec")})
    one = PipelineSpec(name="BM25 >> pointwise", path="pipelines[1]", input="BM25",
                       rerank=({"type": "pointwise", "top_k": 5},))
    [r] = _rerankers(one, dataset, llm=object(), seed=0, progress=False)
    assert isinstance(r, Reranker) and r.progress_label == "BM25 >> pointwise" and r.progress is False
    assert r.tag == "pipelines[1].rerank[0]"  # the key path stays the usage tag
    assert r.progress_bar(5).disable  # progress=False reaches the bar
    two = PipelineSpec(name="BM25 >> shuffle >> listwise", path="pipelines[2]", input="BM25",
                       rerank=({"type": "shuffle", "top_k": 5}, {"type": "listwise", "top_k": 5}))
    assert _rerankers(two, dataset, llm=object(), seed=0, progress=True)[1].progress_label == \
        "BM25 >> shuffle >> listwise [listwise]"
    # a reranker option named like the bar's attribute once lost to it: deliberated's `question` (once `label`) survives
    three = PipelineSpec(name="BM25 >> deliberated", path="pipelines[3]", input="BM25",
                         rerank=({"type": "deliberated", "question": "yesno", "top_k": 5},))
    [d] = _rerankers(three, dataset, llm=object(), seed=0, progress=False)
    assert d.question == "yesno" and d.progress_label == "BM25 >> deliberated"


def test_ties_follow_trec_eval_and_scores_strictly_decrease():
    run = pd.DataFrame({"qid": ["q2", "q2", "q2", "q1", "q1", "q1"], "docno": ["a", "c", "b", "x", "y", "z"],
                        "score": [1.0, 1.0, 1.0, 0.0, 0.0, -1.0]})
    ordered = trec_order(run)  # what the first stage ranks by: the scores themselves are kept (fusion sees them)
    assert ordered["docno"].tolist() == ["c", "b", "a", "y", "x", "z"] and ordered["score"].tolist()[:3] == [1.0] * 3
    out = strictly_decreasing(run)
    assert out["qid"].tolist() == ["q2"] * 3 + ["q1"] * 3  # queries keep their order
    assert out["docno"].tolist() == ["c", "b", "a", "y", "x", "z"]  # ties: docno descending, as trec_eval
    assert is_strictly_decreasing(out) and not is_strictly_decreasing(run)
    q2 = out["score"].to_numpy()[:3]
    step = np.nextafter(np.float32(1.0), np.float32(0.0))  # the next 32-bit float: trec_eval reads scores as floats
    assert q2[0] == 1.0 and q2[1] == step and q2[2] == np.nextafter(step, np.float32(0.0))
    assert np.allclose(out["score"], [1, 1, 1, 0, 0, -1], atol=1e-6)
    # a rank column (a reranker's decision) is kept; only its tied scores are separated
    ranked = run.assign(rank=[2, 0, 1, 0, 1, 2])
    kept = strictly_decreasing(ranked)
    assert kept["docno"].tolist() == ["c", "b", "a", "x", "y", "z"] and is_strictly_decreasing(kept)
    # a tie group squeezed against the next score, and two doubles one 32-bit float apart or closer, still end up
    # strictly decreasing as trec_eval reads them
    close = pd.DataFrame({"qid": ["q"] * 4, "docno": ["a", "b", "c", "d"],
                          "score": [1.0, 1.0, np.nextafter(1.0, -np.inf), 1.0 - 1e-9]})
    assert is_strictly_decreasing(strictly_decreasing(close)) and strictly_decreasing(close)["docno"].tolist() == \
        ["b", "a", "c", "d"]


def test_trec_eval_precision_is_why_scores_are_separated_as_32_bit_floats():
    import pytrec_eval

    labels = {"q": {"a": 1, "b": 0}}
    evaluator = pytrec_eval.RelevanceEvaluator(labels, {"P_1"})
    # "a" ranks first by a double one step higher; trec_eval sees a tie and puts "b" first (docno descending)
    assert evaluator.evaluate({"q": {"a": 1.0, "b": float(np.nextafter(1.0, 0.0))}})["q"]["P_1"] == 0.0
    run = pd.DataFrame({"qid": ["q", "q"], "docno": ["a", "b"], "score": [1.0, 1.0], "rank": [0, 1]})
    fixed = strictly_decreasing(run)
    assert evaluator.evaluate({"q": dict(zip(fixed["docno"], fixed["score"]))})["q"]["P_1"] == 1.0


def test_trec_files_keep_the_separated_scores(tmp_path):
    from superb.trec.runs import read_run, write_run

    tied = pt.model.add_ranks(trec_order(pd.DataFrame({"qid": ["q1"] * 3, "docno": ["a", "b", "c"],
                                                       "score": [2.5] * 3})))
    write_run(tied, tmp_path / "x.run", tag="x")
    back = read_run(tmp_path / "x.run")
    assert back["docno"].tolist() == ["c", "b", "a"]  # the rank order, which is trec_eval's
    assert back["score"].tolist() == strictly_decreasing(tied)["score"].tolist() and is_strictly_decreasing(back)
    (tmp_path / "bad.run").write_text("q1 Q0 a one 2.0 x\n")
    with pytest.raises(DataError, match="bad.run"):
        read_run(tmp_path / "bad.run")
