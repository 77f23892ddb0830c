"""Bring your own prompt: a reranker's ``template`` may be a .j2 file of the user's (transformers/templates.py).

Each LLM reranker type asks with the file's text and names its requests by the file's stem and fingerprint, so an
edited file is asked again rather than served the old file's answers; a missing file, a broken one, or one that reads
a variable the stage does not fill is refused before any request (the fake OpenAI server counts 0): a missing or
broken file when the spec is read, an unfilled variable when the stage is built.
"""

from __future__ import annotations

import hashlib
import json

import pytest

from superb.testing.fakeserver import FakeServer, yes
from local_data import data  # noqa: F401 (a fixture)
from spec_helpers import pointwise, write_spec
from superb.cli import main
from superb.errors import SpecError
from superb.llm.prompts import fingerprint, load_template
from superb.transformers import BuildContext, build_reranker

# type -> (spec table, the package template the type asks with on products)
TYPES = {
    "pointwise": ({"type": "pointwise", "variant": "yesno"}, "pointwise_yesno"),
    "listwise": ({"type": "listwise", "top_k": 3}, "listwise_rankgpt"),
    "sliding": ({"type": "sliding", "method": "likelihood", "window": 3, "step": 2}, "listwise_first"),
    "setwise": ({"type": "setwise"}, "setwise_best"),
    "pairwise_prob": ({"type": "pairwise_prob"}, "pairwise_ab"),
}


def request_of(reranker, texts: list[str]):
    kind = type(reranker).__name__
    if kind == "PointwiseReranker":
        return reranker.request("running shoes", texts[0])
    if kind == "SetwiseReranker":
        return reranker.request("running shoes", texts[:3])
    if kind == "PairwiseProbReranker":
        return reranker.preference.request("running shoes", texts[0], texts[1])
    return reranker.ranker.request("running shoes", texts[:3])


@pytest.fixture()
def local(data):  # noqa: F811 (the fixture)
    from superb.data import load_dataset

    return load_dataset({"name": "local", "docs": str(data / "docs.jsonl"), "queries": str(data / "queries.tsv"),
                         "qrels": str(data / "qrels.txt")})


@pytest.mark.parametrize("kind", list(TYPES))
def test_every_llm_reranker_asks_with_the_users_file(local, tmp_path, monkeypatch, kind):
    table, package = TYPES[kind]
    source = "MY OWN PROMPT\n" + load_template(package).source
    (tmp_path / "mine.j2").write_text(source, encoding="utf-8")
    monkeypatch.chdir(tmp_path)  # a relative path is read from the current folder
    reranker = build_reranker({**table, "template": "mine.j2"}, context=BuildContext(dataset=local, llm=object()),
                              path="r")
    request = request_of(reranker, ["trail running shoes", "road running shoes", "running socks"])
    assert request.template == f"mine@{fingerprint(source)}"
    prompt = request.messages[-1][1]
    assert prompt.startswith("MY OWN PROMPT") and "trail running shoes" in prompt


@pytest.mark.parametrize("kind", list(TYPES))
def test_a_variable_the_stage_does_not_fill_is_refused_naming_it(local, tmp_path, kind):
    table, package = TYPES[kind]
    mine = tmp_path / "mine.j2"
    mine.write_text(load_template(package).source + "\nShop: {{ shop_name }}", encoding="utf-8")
    with pytest.raises(SpecError) as err:
        build_reranker({**table, "template": str(mine)}, context=BuildContext(dataset=local, llm=object()), path="r")
    message = str(err.value)
    assert message.startswith("r.template: ") and "['shop_name']" in message and str(mine) in message
    assert str(sorted(load_template(package).variables)) in message  # what the stage fills


def spec_file(folder, url: str, template: str) -> str:
    """A given run of the local data set, and pointwise yes/no over its top 3 asking with ``template``."""
    (folder / "given.run").write_text("1 Q0 d1 1 3 x\n1 Q0 d3 2 2 x\n1 Q0 d4 3 1 x\n2 Q0 d6 1 2 x\n2 Q0 d5 2 1 x\n")
    given = {"name": "given", "first_stage": {"run": str(folder / "given.run"), "depth": 10}}
    llm = {"model": "fake-model", "base_urls": [url], "cache_path": str(folder / "cache.sqlite"), "max_retries": 0}
    reranked = {**pointwise("given >> pointwise", 3, template=template), "input": "given"}
    return str(write_spec(folder, name="own_prompt", llm=llm, pipelines=[given, reranked]))


def run(folder, capsys, template: str) -> tuple[int, str, FakeServer]:
    with FakeServer(responder=yes) as srv:
        code = main(["run", spec_file(folder, srv.base_url, template), "--out", str(folder / "out")])
    return code, capsys.readouterr().err, srv


def test_a_run_asks_the_files_prompt_and_an_edit_is_asked_again(data, capsys):  # noqa: F811 (the fixture)
    mine = data / "yesno.j2"
    mine.write_text("Shopper asks: {{ query }}\nItem: {{ product }}\nAnswer yes or no.", encoding="utf-8")
    code, err, srv = run(data, capsys, str(mine))
    assert code == 0, err
    assert srv.requests == 5  # top 3 of query 1, both of query 2
    prompts = [m["content"] for body in srv.received for m in body["messages"]]
    assert all(p.startswith("Shopper asks: ") for p in prompts) and any("trail running shoes" in p for p in prompts)
    recorded = json.loads((data / "out" / "provenance.json").read_text())["prompt_files"]
    assert recorded == {"pipelines[1].rerank[0].template": {
        "file": str(mine), "sha256": hashlib.sha256(mine.read_bytes()).hexdigest(),
        "id": f"yesno@{fingerprint(mine.read_text(encoding='utf-8'))}"}}
    code, err, srv = run(data, capsys, str(mine))
    assert code == 0 and srv.requests == 0  # the same file: every answer from the cache
    mine.write_text("Shopper asks: {{ query }}\nItem: {{ product }}\nReply yes or no.", encoding="utf-8")
    code, err, srv = run(data, capsys, str(mine))
    assert code == 0 and srv.requests == 5  # an edited file is a new prompt: none of the old answers is reused


BAD_FILES = {
    "missing": (None, "not found (relative paths are read from the current folder"),
    "broken jinja": ("Query: {{ query }\n{{ product }}", "yesno.j2:1: not a valid jinja2 template"),
    "unfilled variable": ("Query: {{ query }} {{ product }} {{ price }}", "reads ['price'], which a pointwise stage "
                                                                           "does not fill"),
    "not UTF-8": ("latin1", "is not UTF-8 text"),
}


@pytest.mark.parametrize("case", list(BAD_FILES))
def test_a_bad_file_is_refused_with_the_spec_before_any_call(data, capsys, case):  # noqa: F811 (the fixture)
    text, message = BAD_FILES[case]
    mine = data / "yesno.j2"
    if text == "latin1":
        mine.write_bytes("Requête: {{ query }} {{ product }}".encode("latin-1"))
    elif text is not None:
        mine.write_text(text, encoding="utf-8")
    code, err, srv = run(data, capsys, str(mine))
    assert code == 2 and srv.requests == 0
    assert "pipelines[1].rerank" in err and "template" in err and message in err
    assert "Traceback" not in err
