"""The candidates data set (superb/data/candidates.py): any rank_llm candidates file as queries, passages and its own
first stage, on rank_llm's real DL19 file from the data mirror.

It must be the trec-dl 2019 data set by another road: BM25 from the file scores Anserini's nDCG@10 0.5058, and a
reranker replayed from results/trec_dl19's shipped answers (0 LLM calls: the cache is read-only and the model's URL
leads nowhere) writes byte for byte the run files results/trec_dl19 committed. A damaged file (truncated JSON, a hit
without its passage text) is refused with the file named, never a traceback.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pandas as pd
import pytest

from superb.cli import main
from superb.data import load_dataset
from superb.errors import DataError, SpecError

ROOT = Path(__file__).resolve().parents[1]
MIRROR = os.environ.get("SUPERB_DATA_MIRROR")
pytestmark = pytest.mark.skipif(not MIRROR or not (Path(MIRROR) / "trec-dl").is_dir(),
                                reason="needs SUPERB_DATA_MIRROR with trec-dl/ (SUPERB_DATA_MIRROR=../shared/data)")
REPLAYED = "BM25 >> pointwise yes-no top20"  # reorders BM25's top 20 (20 cached answers a query), as in trec_dl19


@pytest.fixture()
def files(tmp_path, monkeypatch):
    monkeypatch.setenv("SUPERB_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SUPERB_PROGRESS", "0")
    src = Path(MIRROR) / "trec-dl"
    for name in ("retrieve_results_dl19.json", "qrels.dl19-passage.txt", "topics.dl19-passage.txt"):
        shutil.copy(src / name, tmp_path / name)
        (tmp_path / name).chmod(0o644)
    return tmp_path


def dataset_table(files: Path, topics: bool = True) -> dict:
    table = {"name": "candidates", "file": str(files / "retrieve_results_dl19.json"),
             "qrels": str(files / "qrels.dl19-passage.txt"), "rel_threshold": 2}
    if topics:
        table["topics"] = str(files / "topics.dl19-passage.txt")
    return table


def test_the_dl19_file_is_trec_dl_2019s_queries_passages_and_labels(files):
    ds = load_dataset(dataset_table(files, topics=False))
    dl = load_dataset({"name": "trec-dl", "year": 2019})
    assert ds.text_kind == "passage" and ds.prompt_fields == ("text",) and ds.fields == ("text",)
    assert ds.topics().set_index("qid")["query"].to_dict() == dl.topics().set_index("qid")["query"].to_dict()
    assert len(ds.topics()) == 43
    assert dict(ds.docs_store()) == dict(dl.docs_store())  # the same passages, the same text (whitespace collapsed)
    assert ds.qrels().equals(dl.qrels()) and ds.labels == (0, 1, 2, 3)
    assert ds.run_file("candidates") == files / "retrieve_results_dl19.json"
    with pytest.raises(SpecError, match=r"first_stage\.run: data set 'candidates' provides the runs \['candidates'\]"):
        ds.run_file("bm25")


def test_bm25_from_the_file_scores_the_published_ndcg(files):
    spec = files / "c.toml"
    spec.write_text(f"""
name = "dl19_candidates"
[dataset]
{chr(10).join(f'{k} = {json.dumps(v)}' for k, v in dataset_table(files, topics=False).items())}
[evaluation]
measures = ["nDCG@10", "P@10"]
[[pipelines]]
name = "BM25"
first_stage = {{ run = "dataset:candidates", depth = 100 }}
""")
    assert main(["run", str(spec), "--out", str(files / "out")]) == 0
    table = pd.read_csv(files / "out" / "table.csv").set_index(["system", "measure"])["mean"]
    assert round(table[("BM25", "nDCG@10")], 4) == 0.5058
    assert round(table[("BM25", "P(rel=2)@10")], 4) == 0.4116


def test_a_replayed_reranker_writes_trec_dl_2019s_run_files_with_0_calls(files, monkeypatch):
    from superb.run.experiment import run_experiment
    from superb.llm.cache import ResponseCache
    from superb.llm.ship import replay
    from superb.run.results import write_results
    from superb.run.spec import parse_spec, read_toml

    committed = ROOT / "results" / "trec_dl19"
    cache_file = files / "cache.sqlite"
    with ResponseCache(cache_file) as cache:
        assert replay(committed, cache).invalid == 0
    monkeypatch.setenv("SUPERB_EMBEDDED_URL", "http://127.0.0.1:9/v1")  # were a call made, it would go nowhere
    raw = read_toml(ROOT / "experiments" / "trec_dl19.toml")
    raw["name"] = "dl19_candidates"
    raw["dataset"] = dataset_table(files)
    raw["pipelines"] = [{**p, **({"first_stage": {"run": "dataset:candidates", "depth": 100}} if p["name"] == "BM25"
                                 else {})} for p in raw["pipelines"] if p["name"] in ("BM25", REPLAYED)]
    raw["llm"] = {"cache": "read-only", "cache_path": str(cache_file)}
    result = run_experiment(parse_spec(raw), progress=False)
    out = write_results(result, files / "out")
    usage = pd.read_csv(out / "usage.csv").set_index("system")
    assert usage["calls"].sum() == 0 and usage.loc[REPLAYED, "cache_hits"] == 43 * 20
    systems = json.loads((out / "systems.json").read_text())
    assert systems == {name: path for name, path in json.loads((committed / "systems.json").read_text()).items()
                       if name in ("BM25", REPLAYED)}
    for path in systems.values():
        assert (out / path).read_bytes() == (committed / path).read_bytes(), path
    table = pd.read_csv(out / "table.csv").set_index(["system", "measure"])["mean"]
    assert round(table[("BM25", "nDCG@10")], 4) == 0.5058 and round(table[(REPLAYED, "nDCG@10")], 4) == 0.6034


def test_a_truncated_file_is_refused_naming_it(files, capsys):
    path = files / "retrieve_results_dl19.json"
    path.write_text(path.read_text(encoding="utf-8")[:100_000], encoding="utf-8")
    ds = load_dataset(dataset_table(files))
    with pytest.raises(DataError, match=rf"{path}:\d+: not valid JSON .*truncated"):
        ds.topics()
    spec = files / "c.toml"
    spec.write_text(f"""
name = "broken"
[dataset]
{chr(10).join(f'{k} = {json.dumps(v)}' for k, v in dataset_table(files).items())}
[[pipelines]]
name = "BM25"
first_stage = {{ run = "dataset:candidates" }}
""")
    assert main(["run", str(spec), "--out", str(files / "out")]) == 2
    err = capsys.readouterr().err
    assert f"superb: error: {path}:" in err and "truncated" in err and "Traceback" not in err


def test_a_hit_without_its_passage_text_is_refused_naming_the_place(files):
    path = files / "retrieve_results_dl19.json"
    entries = json.loads(path.read_text(encoding="utf-8"))
    del entries[2]["hits"][5]["content"]
    path.write_text(json.dumps(entries), encoding="utf-8")
    with pytest.raises(DataError, match=rf"{path}: entry 2, hit 5: no passage text \(\"content\" must be a string"):
        load_dataset(dataset_table(files)).docs_store()


def test_other_defects_are_refused_with_their_fix(files):
    path = files / "retrieve_results_dl19.json"
    entries = json.loads(path.read_text(encoding="utf-8"))
    entries[0]["hits"][1]["content"] = "another text"
    entries[0]["hits"].append({**entries[0]["hits"][1], "content": "a third text", "docid": entries[1]["hits"][0]
                               ["docid"]})
    path.write_text(json.dumps(entries), encoding="utf-8")
    with pytest.raises(DataError, match=r"passage '\w+' has a text different from its earlier hit's"):
        load_dataset(dataset_table(files)).docs_store()
    topics = files / "topics.dl19-passage.txt"
    lines = topics.read_text(encoding="utf-8").splitlines()
    topics.write_text("\n".join(line.replace("\t", "\tWHAT IS ", 1) if i == 0 else line
                                for i, line in enumerate(lines)) + "\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"the query text differs from topics\.dl19-passage\.txt for qids"):
        load_dataset(dataset_table(files)).topics()
    with pytest.raises(DataError, match=r"data file not found: .*nowhere\.json \(from dataset\.file\)"):
        load_dataset({**dataset_table(files), "file": str(files / "nowhere.json")})
    run = files / "run.txt"
    run.write_text("1 Q0 d 1 1.0 x\n")
    with pytest.raises(SpecError, match=r"dataset\.file: .*does not end in \.json"):
        load_dataset({**dataset_table(files), "file": str(run)})
    with pytest.raises(SpecError, match=r"dataset\.year: unknown option"):
        load_dataset({**dataset_table(files), "year": 2019})


def test_an_entry_without_hits_scores_0_and_is_counted(tmp_path, monkeypatch):
    """rank_llm's qid sits on the hits, so an entry with "hits": [] has none: with a topics file its query is found by
    its text and stays a topic, scored 0 (as trec_eval -c scores a query a run misses), and counted (issue 50)."""
    import json

    from superb.cli import main

    monkeypatch.setenv("SUPERB_HOME", str(tmp_path / "home"))
    entries = [{"query": "alpha beta", "hits": [{"qid": "1", "docid": "d1", "rank": 1, "score": 3.0, "content": "a"},
                                                {"qid": "1", "docid": "d2", "rank": 2, "score": 2.0, "content": "b"}]},
               {"query": "gamma", "hits": []},
               {"query": "delta", "hits": [{"qid": "3", "docid": "d3", "rank": 1, "score": 1.0, "content": "d"}]},
               {"query": "epsilon", "hits": []}]  # no topic of this text: left out, counted
    (tmp_path / "c.json").write_text(json.dumps(entries))
    (tmp_path / "qrels.txt").write_text("1 0 d1 1\n1 0 d2 0\n2 0 d9 1\n3 0 d3 1\n")
    (tmp_path / "topics.tsv").write_text("1\talpha beta\n2\tgamma\n3\tdelta\n")
    spec = tmp_path / "spec.toml"
    spec.write_text(f'name = "c"\n[dataset]\nname = "candidates"\nfile = "{tmp_path / "c.json"}"\n'
                    f'qrels = "{tmp_path / "qrels.txt"}"\ntopics = "{tmp_path / "topics.tsv"}"\n'
                    '[evaluation]\nmeasures = ["nDCG@10"]\n[[pipelines]]\nname = "BM25"\n'
                    'first_stage = { run = "dataset:candidates" }\n')
    assert main(["run", str(spec), "--out", str(tmp_path / "out")]) == 0
    table = pd.read_csv(tmp_path / "out" / "table.csv")
    assert table.loc[0, "n_queries"] == 3 and table.loc[0, "mean"] == pytest.approx(2 / 3)  # 1, 0 (no hits), 1
    checks = json.loads((tmp_path / "out" / "provenance.json").read_text())["dataset"]["checks"]
    assert (checks["entries_without_hits"], checks["entries_without_hits_scored_0"],
            checks["entries_without_hits_left_out"]) == (2, 1, 1)
