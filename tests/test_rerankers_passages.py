"""On a passage data set (TREC DL: ``text_kind = "passage"``) every reranker defaults to the papers' passage prompts
and shows the passage text; product prompts are never put to passages unasked; Chorus keeps its product prompts.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from superb.errors import SpecError
from superb.transformers import BuildContext, build_reranker

MIRROR = os.environ.get("SUPERB_DATA_MIRROR")
pytestmark = pytest.mark.skipif(not MIRROR or not (Path(MIRROR) / "trec-dl").is_dir(),
                                reason="needs SUPERB_DATA_MIRROR with trec-dl/ and chorus-icecat/")


@pytest.fixture(scope="module")
def dl19(tmp_path_factory):
    from superb.data import load_dataset

    os.environ.setdefault("SUPERB_HOME", str(tmp_path_factory.mktemp("home")))
    return load_dataset({"name": "trec-dl", "year": 2019})


CASES = {  # spec table -> (the template the request names, what the prompt must say)
    "pointwise": ({"type": "pointwise", "variant": "yesno"}, "pointwise_yesno_passage", "Does the passage answer"),
    "listwise": ({"type": "listwise", "top_k": 3}, "listwise_rankgpt_passage", "You are RankGPT"),
    "likelihood": ({"type": "sliding", "method": "likelihood", "window": 3, "step": 2}, "listwise_first_passage",
                   "letter identifier"),
    "setwise": ({"type": "setwise"}, "setwise_best_passage", "which of the following passages is the most relevant"),
    "prp": ({"type": "pairwise_prob"}, "pairwise_ab_passage", "which of the following two passages is more relevant"),
}


def request_of(reranker, query: str, texts: list[str]):
    kind = type(reranker).__name__
    if kind == "PointwiseReranker":
        return reranker.request(query, texts[0])
    if kind == "SetwiseReranker":
        return reranker.request(query, texts[:3])
    if kind == "PairwiseProbReranker":
        return reranker.preference.request(query, texts[0], texts[1])
    return reranker.ranker.request(query, texts[:3])


@pytest.mark.parametrize("case", list(CASES))
def test_passage_data_sets_get_the_papers_prompts_and_the_passage_text(dl19, case):
    table, template, says = CASES[case]
    reranker = build_reranker(table, context=BuildContext(dataset=dl19, llm=object()), path="r")
    docno = next(iter(dl19.docs_store()))
    text = reranker.text.render(docno) if hasattr(reranker.text, "render") else None
    passage = dl19.doc(docno)["text"]
    assert reranker.text.fields == ("text",)
    request = request_of(reranker, "what is a passage", [passage[:200], "second passage", "third passage"])
    assert request.template.split("@")[0] == template
    prompt = request.messages[-1][1]
    assert says in prompt and passage[:200] in prompt
    assert "product" not in prompt.lower() and "shop" not in prompt.lower()
    del text


def test_a_product_only_default_is_refused_on_passages(dl19):
    with pytest.raises(SpecError, match=r"r\.template: the data set holds passages and the default template "
                                        r"'pointwise_best' is written for products"):
        build_reranker({"type": "pointwise", "variant": "best"}, context=BuildContext(dataset=dl19, llm=object()),
                       path="r")


def test_a_named_template_wins_and_products_keep_theirs(dl19):
    named = build_reranker({"type": "listwise", "template": "listwise_rankgpt"},
                           context=BuildContext(dataset=dl19, llm=object()), path="r")
    assert named.ranker.template.id.startswith("listwise_rankgpt") and "passage" not in named.ranker.template.id
    from superb.data import load_dataset

    chorus = load_dataset("chorus")
    for table, template in (({"type": "pointwise", "variant": "yesno"}, "pointwise_yesno"),
                            ({"type": "setwise"}, "setwise_best"), ({"type": "listwise"}, "listwise_rankgpt")):
        reranker = build_reranker(table, context=BuildContext(dataset=chorus, llm=object()), path="r")
        assert request_of(reranker, "q", ["a", "b", "c"]).template.split("@")[0] == template
        assert reranker.text.fields == ("title",)
