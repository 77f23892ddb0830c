"""A prompt field the documents do not have is a spec error naming it and the fields they have (superb.llm.text
ProductText), and a `local` data set of passages (documents with only docno and text) gets the passage defaults irds
and trec-dl have: text_kind "passage", prompt field `text` (superb/data/local.py). Before, its pointwise prompts all
showed an empty `title`, coalesced into one request per query, and the run "worked" on empty passages."""

from __future__ import annotations

import json

from superb.testing.fakeserver import FakeServer, yes
from superb.cli import main

PASSAGES = [("p1", "The Manhattan Project produced the first nuclear weapons."),
            ("p2", "Project management is the process of leading a team."),
            ("p3", "Los Alamos was the Manhattan Project's main laboratory."),
            ("p4", "A coffee mug holds hot drinks.")]


def write(folder, url: str, rerank: str, extra: str = "") -> str:
    (folder / "docs.jsonl").write_text("".join(json.dumps({"docno": d, "text": t}) + "\n" for d, t in PASSAGES))
    (folder / "queries.tsv").write_text("1\tmanhattan project\n2\tproject laboratory\n")
    (folder / "qrels.txt").write_text("1 0 p1 2\n1 0 p3 1\n2 0 p3 2\n")
    spec = folder / "spec.toml"
    spec.write_text(f"""
name = "passages"
[dataset]
name = "local"
docs = "{folder / 'docs.jsonl'}"
queries = "{folder / 'queries.tsv'}"
qrels = "{folder / 'qrels.txt'}"
{extra}
[evaluation]
measures = ["nDCG@10"]
[llm]
model = "fake-model"
base_urls = ["{url}"]
cache = "off"
max_retries = 0
[[pipelines]]
name = "BM25"
first_stage = {{ engine = "pisa", depth = 4 }}
[[pipelines]]
name = "pointwise"
input = "BM25"
rerank = {rerank}
""")
    return str(spec)


def test_a_field_the_documents_lack_is_a_spec_error_before_any_call(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SUPERB_HOME", str(tmp_path / "home"))
    with FakeServer(responder=yes) as srv:
        spec = write(tmp_path, srv.base_url, '{ type = "pointwise", variant = "yesno", fields = ["title"] }')
        code = main(["run", spec, "--out", str(tmp_path / "out")])
        requests = srv.requests
    err = capsys.readouterr().err
    assert code == 2 and requests == 0
    assert "unknown passage field(s) ['title']: the documents of data set 'local' have ['text']" in err


def test_a_product_data_set_without_a_title_refuses_the_default_field(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SUPERB_HOME", str(tmp_path / "home"))
    with FakeServer(responder=yes) as srv:
        spec = write(tmp_path, srv.base_url, '{ type = "pointwise", variant = "yesno" }', 'text_kind = "product"')
        code = main(["run", spec, "--out", str(tmp_path / "out")])
    assert code == 2 and "unknown product field(s) ['title']" in capsys.readouterr().err


def test_passages_get_the_passage_template_and_their_text(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SUPERB_HOME", str(tmp_path / "home"))
    seen: list[str] = []

    def answer(request):
        seen.append(json.dumps(request["messages"]))
        return yes(request)

    with FakeServer(responder=answer) as srv:
        spec = write(tmp_path, srv.base_url, '{ type = "pointwise", variant = "yesno" }')
        code = main(["run", spec, "--out", str(tmp_path / "out")])
        requests = srv.requests
    assert code == 0, capsys.readouterr().err
    # every candidate its own prompt (one request per BM25 candidate), not one empty prompt per query
    candidates = len((tmp_path / "out" / "runs" / "BM25.run").read_text().splitlines())
    assert requests == candidates and candidates > 2
    assert all("(no text)" not in m for m in seen) and any("Los Alamos" in m for m in seen)
    assert not any("product" in m.lower() for m in seen)  # the passage prompt, not the shop's
    usage = (tmp_path / "out" / "usage.csv").read_text()
    assert "text_empty" not in usage
