"""`superb judge --fill results/NAME`: the unjudged products of every system's top ranks labelled by a dev-calibrated
judge on a real `superb run` folder of Chorus (PISA first stages, a pointwise reranker on the fake model); the view
"filled" recomputed independently; zero calls for the systems and cache hits where the reranker asked the same
prompt; the sentence on changed conclusions generated from the table; the real 0.5B end to end."""

from __future__ import annotations

import gzip
import json

import ir_measures
import pandas as pd
import pytest

from chorus_judge_helpers import MIRROR, GradeModel, chorus_grades
from superb.testing.fakeserver import FakeServer
from superb.cli import main
from superb.eval.view_verdicts import verdict_changes, views_sentence
from superb.run.results import read_table

TEST_QUERIES = ["q001", "q003", "q004", "q005", "q006"]


@pytest.fixture(scope="module")
def chorus():
    from superb.data import load_dataset

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SUPERB_DATA_MIRROR", str(MIRROR))
        ds = load_dataset({"name": "chorus"})
        ds.docs_iter()
        return ds


@pytest.fixture(scope="module")
def grades(chorus):
    return chorus_grades(chorus)


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("SUPERB_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SUPERB_DATA_MIRROR", str(MIRROR))
    monkeypatch.setenv("SUPERB_PROGRESS", "0")
    return tmp_path


def run_spec(llm: list[str], queries: list[str], rerank_top: int) -> str:
    return "\n".join([
        'name = "fill_me"', "[dataset]", 'name = "chorus"', "[queries]", f"subset = {json.dumps(queries)}",
        "[evaluation]", 'measures = ["nDCG@5", "P(rel=2)@5"]', 'views = ["full", "condensed"]', "[llm]", *llm,
        "[[pipelines]]", 'name = "BM25"', 'first_stage = { engine = "pisa", model = "bm25", depth = 20 }',
        "[[pipelines]]", 'name = "RM3"', 'first_stage = { engine = "pisa", model = "rm3", depth = 20 }',
        'baseline = "BM25"',
        "[[pipelines]]", 'name = "BM25 >> pointwise"', 'input = "BM25"',
        f'rerank = {{ type = "pointwise", variant = "yesno", template = "pointwise_yesno_product", '
        f'top_k = {rerank_top} }}', 'baseline = "BM25"']) + "\n"


def test_fill_labels_the_unjudged_adds_the_filled_view_and_reuses_the_rerankers_answers(home, chorus, grades,
                                                                                         capsys):
    from superb.judges.fill.label import dev_pairs

    model = GradeModel(grades)
    out = home / "results" / "fill_me"
    with FakeServer(responder=model) as srv:
        (home / "run.toml").write_text(run_spec(['model = "fake-model"', f'base_urls = ["{srv.base_url}"]'],
                                                TEST_QUERIES, rerank_top=5))
        assert main(["run", str(home / "run.toml"), "--out", str(out)]) == 0
        reranker_requests = srv.requests
        assert reranker_requests == 5 * len(TEST_QUERIES)
        reranked = set(model.asked)
        model.asked.clear()

        capsys.readouterr()
        assert main(["judge", "--fill", str(out), "--judge", "yesno_product", "--depth", "5", "--dev-sample", "4", "--dry-run"]) == 0
        printed = capsys.readouterr().out.strip().splitlines()
        dry = next(line for line in printed if line.startswith("dry run ("))
        assert printed[-1].startswith("time: about ")  # the fake server's pace, recorded by the run above
        assert srv.requests == reranker_requests and not (out / "llm_qrels.trec").exists()

        assert main(["judge", "--fill", str(out), "--judge", "yesno_product", "--depth", "5", "--dev-sample", "4"]) == 0
        fill_requests = srv.requests - reranker_requests
        capsys.readouterr()
        # zero calls for the systems; the judge's only: dev pairs, and top-5 pairs the reranker did not ask already
        labels = pd.read_csv(out / "llm_labels.tsv", sep="\t", dtype={"qid": str, "docno": str})
        fingerprint = json.loads((out / "llm_qrels.json").read_text())
        titles = {d["docno"]: d["title"] for d in chorus.docs_iter()}
        queries = chorus.topics().set_index("qid")["query"].to_dict()
        dev = dev_pairs(chorus, 4)
        assert fingerprint["dev_pairs"] == len(dev) and dev["qid"].nunique() == 4
        wanted = {(queries[q], titles[d]) for frame in (dev, labels) for q, d in frame[["qid", "docno"]]
                  .itertuples(index=False)}
        assert reranked <= wanted  # BM25's top 5 is a target
        # each prompt asked once; the reranker's prompts (BM25's top 5, same template) are cache hits
        assert sorted(model.asked) == sorted(wanted - reranked) and fill_requests == len(wanted - reranked)
        # the dry run counts every request the cache cannot serve once, as the live run asks it once (a prompt
        # repeated by two docnos with one title is served from the cache the second time): exact
        pairs = fingerprint["dev_pairs"] + len(labels) - 5 * len(TEST_QUERIES)
        assert f"): {fill_requests} calls a real run would make" in dry and pairs >= fill_requests, dry
        # once more: every answer is cached, the folder comes out the same
        before = (out / "table.csv").read_text() + (out / "table_filled.csv").read_text()
        assert main(["judge", "--fill", str(out), "--judge", "yesno_product", "--depth", "5", "--dev-sample", "4"]) == 0
        assert srv.requests - reranker_requests == fill_requests and (out / "table.csv").read_text() + (
            out / "table_filled.csv").read_text() == before
        # --out: the filled copy is written there and the folder itself is left byte for byte as it was
        snapshot = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
        copy = home / "results" / "fill_me_copy"
        capsys.readouterr()
        assert main(["judge", "--fill", str(out), "--judge", "yesno_product", "--depth", "5", "--dev-sample", "4", "--out", str(copy)]) == 0
        assert {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()} == snapshot
        for name in ("llm_qrels.trec", "table_filled.csv", "label_study.csv"):
            assert (copy / name).read_text() == (out / name).read_text(), name
        assert srv.requests - reranker_requests == fill_requests
        assert "Kendall's tau" in capsys.readouterr().out  # label_study.md printed from the copy

    assert fingerprint["judge"] == "yesno_product" and fingerprint["model"] == "fake-model"
    # the page is made again from the filled table
    assert "Circular evidence in the filled view" in (out / "report.html").read_text()
    # the judge is the rerankers' model and asks the pointwise reranker's own prompt: flagged as circular everywhere
    for name in ("views.md", "table.md", "README.md"):
        text = (out / name).read_text()
        assert "Circular evidence in the filled view" in text, name
        assert "it asks their own prompt (pointwise_yesno_product)" in text and "fake-model" in text, name
    assert len(fingerprint["cuts"]) == 3 and fingerprint["templates"]["yesno_product"]
    assert fingerprint["counts"]["targets"] == len(labels) and fingerprint["counts"]["labelled"] == len(labels)
    # targets: the union of the three systems' top 5
    runs = {n: pd.read_csv(out / p, sep=r"\s+", header=None, names=["qid", "q0", "docno", "rank", "score", "tag"],
                           dtype={"qid": str, "docno": str})
            for n, p in json.loads((out / "systems.json").read_text()).items()}
    tops = set()
    for run in runs.values():
        tops |= set(run[run["rank"] <= (run["rank"].min() + 4)][["qid", "docno"]].itertuples(index=False, name=None))
    assert set(labels[["qid", "docno"]].itertuples(index=False, name=None)) == tops
    # the filled view, recomputed here: human qrels plus the LLM labels of unjudged pairs
    human = pd.read_csv(out / "qrels.trec", sep=" ", header=None, names=["qid", "it", "docno", "label"],
                        dtype={"qid": str, "docno": str})
    llm = pd.read_csv(out / "llm_qrels.trec", sep=" ", header=None, names=["qid", "it", "docno", "label"],
                      dtype={"qid": str, "docno": str})
    assert len(llm) == len(labels)
    unjudged = llm.merge(human[["qid", "docno"]], how="left", indicator=True).query("_merge == 'left_only'")
    assert len(unjudged) == fingerprint["counts"]["unjudged"] > 0
    filled = pd.concat([human, unjudged[human.columns]]).rename(columns={"qid": "query_id", "docno": "doc_id",
                                                                        "label": "relevance"})
    filled["relevance"] = filled["relevance"].astype(int)
    table = read_table(out)
    assert set(table["view"]) == {"full", "condensed", "filled"}
    # table.csv holds what qrels.trec gives (condensed rows under ir_measures' judged_only names); filled apart
    on_disk = pd.read_csv(out / "table.csv")
    assert set(on_disk["view"]) == {"full", "condensed"} and set(pd.read_csv(out / "table_filled.csv")["view"]) == {
        "filled"}
    assert set(on_disk[on_disk["view"] == "condensed"]["measure"]) == {"nDCG(judged_only=True)@5",
                                                                         "P(rel=2,judged_only=True)@5"}
    for name, run in runs.items():
        r = run.rename(columns={"qid": "query_id", "docno": "doc_id"})[["query_id", "doc_id", "score"]]
        expected = ir_measures.calc_aggregate([ir_measures.nDCG @ 5], filled, r)[ir_measures.nDCG @ 5]
        row = table[(table["system"] == name) & (table["view"] == "filled") & (table["measure"] == "nDCG@5")]
        assert row["mean"].iloc[0] == pytest.approx(expected, abs=1e-9), name
    # the sentence on conclusions, generated from the table, in table.md, views.md and the folder's README
    sentence = views_sentence(table)
    assert sentence and sentence in (out / "views.md").read_text() and sentence in (out / "table.md").read_text()
    assert "<!-- views: superb judge --fill -->" in (out / "README.md").read_text()
    study = pd.read_csv(out / "label_study.csv")
    assert set(study["labels"]) == {"llm", "same pairs", "filled"} and set(study["measure"]) == {"nDCG@5",
                                                                                                 "P(rel=2)@5"}
    assert (study["n_queries"] == len(TEST_QUERIES)).all()
    # every pair of the three systems is tested under both label sets (superb.judges.pair_agreement)
    assert (study["system_pairs"] == 3).all() and (study["same_order"] <= study["significant_human"]).all()
    assert "significant pairs (human)" in (out / "label_study.md").read_text()
    pairs = pd.read_csv(out / "label_study_pairs.csv")
    assert len(pairs) == 3 * 2 * 3 and {"verdict_human", "verdict_judge", "delta_human", "delta_judge"} <= set(pairs)
    from superb.judges.fill.label import read_folder

    # self-preference: which systems the judge's own model ranked (the spec's LLM rows), and the one-sided pairs
    ranked = set(read_folder(out).spec.llm_ranked())
    assert ranked and (pairs["system_judge_ranked"] == pairs["system"].isin(ranked)).all()
    one_sided = pairs[pairs["system_judge_ranked"] != pairs["other_judge_ranked"]]
    only = one_sided[(one_sided["verdict_human"] == "n.s.") & (one_sided["verdict_judge"] != "n.s.")]
    for (labels, measure), g in only.groupby(["labels", "measure"]):
        row = study[(study["labels"] == labels) & (study["measure"] == measure)].iloc[0]
        own = (g["delta_judge"] > 0) == g["system_judge_ranked"]
        assert row["only_judge_mixed"] == len(g) and row["only_judge_self"] == int(own.sum())
    assert (study["only_judge_self"] <= study["only_judge_mixed"]).all()
    assert (study["only_judge_mixed"] <= study["only_judge"]).all()
    # a view without a pair for some query (same pairs, when no human-judged product reaches any top 5) compares the
    # other queries only, and says so
    from superb.eval.measures import parse_measure
    from superb.judges.fill.write import label_study_rows

    folder = read_folder(out)
    dropped = llm[llm["qid"] != TEST_QUERIES[0]].drop(columns="it")
    taus, _, _, sections = label_study_rows(folder, [parse_measure("nDCG@5")], {"same pairs": dropped}, 5, 50, 0)
    assert taus["n_queries"].tolist() == [len(TEST_QUERIES) - 1]
    assert f"{len(TEST_QUERIES) - 1} of the {len(TEST_QUERIES)} queries" in sections[0]
    # the spec's [evaluation] n_resamples reaches the fill's tests: 10 draws (5 queries have 32 sign patterns, so the
    # test draws rather than enumerates) give p = (count + 1) / 11 in the baseline and the pair tests alike
    from dataclasses import replace

    ev = replace(folder.spec.evaluation, test="randomization", n_resamples=10)
    drawn = replace(folder, spec=replace(folder.spec, evaluation=ev))
    _, verdicts10, pairs10, _ = label_study_rows(drawn, [parse_measure("nDCG@5")], {"llm": llm.drop(columns="it")},
                                                 5, 50, 0)
    p = pd.concat([pairs10["p_human"], pairs10["p_judge"]]).dropna()
    assert len(p) == 6 and ((p * 11).round(9) % 1 == 0).all() and (p < 1).any()
    # "same pairs": the LLM labels of the human-judged pairs only, recomputed here; the order is by mean nDCG@5
    same = llm.merge(human[["qid", "docno"]]).rename(columns={"qid": "query_id", "docno": "doc_id",
                                                              "label": "relevance"})
    assert 0 < len(same) < len(llm)
    means = {name: ir_measures.calc_aggregate([ir_measures.nDCG @ 5], same, run.rename(
        columns={"qid": "query_id", "docno": "doc_id"})[["query_id", "doc_id", "score"]])[ir_measures.nDCG @ 5]
        for name, run in runs.items()}
    row = study[(study["labels"] == "same pairs") & (study["measure"] == "nDCG@5")].iloc[0]
    assert row["order_judge"] == " > ".join(sorted(means, key=lambda n: -means[n]))
    prov = json.loads((out / "provenance.json").read_text())
    assert prov["fill"]["fingerprint"]["cuts"] == fingerprint["cuts"] and "llm_qrels.trec" in prov["files"]
    with gzip.open(out / "responses.jsonl.gz", "rt") as f:
        shipped = sum(1 for _ in f)
    assert shipped == prov["responses"]["rows"] == reranker_requests + fill_requests
    # the second fill: the run's own answers stay counted as the run's, the first fill's as already there
    assert prov["responses"]["run_rows"] == reranker_requests and prov["responses"]["fill_rows_added"] == 0
    assert prov["responses"]["rows_before_fill"] == reranker_requests + fill_requests


def verdict_table(rows):
    return pd.DataFrame(rows, columns=["family", "system", "measure", "view", "verdict"])


def test_views_sentence_names_each_changed_conclusion_and_nothing_else():
    rows = [("baseline:BM25", "RM3", "nDCG@10", "full", "better"),
            ("baseline:BM25", "RM3", "nDCG@10", "filled", "n.s."),
            ("baseline:BM25", "RM3", "P@10", "full", "n.s."),
            ("baseline:BM25", "RM3", "P@10", "filled", "untested"),  # same conclusion: no significant difference
            ("baseline:BM25", "LLM", "nDCG@10", "full", "worse"),
            ("baseline:BM25", "LLM", "nDCG@10", "filled", "worse"),
            ("", "BM25", "nDCG@10", "full", ""), ("", "BM25", "nDCG@10", "filled", "")]
    table = verdict_table(rows)
    changes = verdict_changes(table)
    assert len(changes) == 3 and changes["changed"].tolist() == [True, False, False]
    text = views_sentence(table)
    assert text.startswith("1 of the 3 tested comparisons change their conclusion between the views full and filled")
    assert "- RM3 vs BM25, nDCG@10: better (full), n.s. (filled)" in text and "P@10" not in text
    same = verdict_table([r for r in rows if r[1] != "RM3" or r[2] != "nDCG@10"])
    assert views_sentence(same).startswith("No conclusion changes between the views full and filled: each of the 2")
    assert views_sentence(table[table["view"] == "full"]) == ""


@pytest.mark.slow
def test_fill_with_the_real_05b(home, monkeypatch):
    """The real 0.5B (embedded) labels two test queries' top 3 of two systems, cut points from 3 dev queries."""
    from reranker_helpers import _small_model_and_chorus

    _small_model_and_chorus(monkeypatch)
    out = home / "results" / "fill_real"
    (home / "run.toml").write_text(run_spec(['embedded_model = "0.5b"', "n_ctx = 2048"], ["q001", "q004"],
                                            rerank_top=3))
    assert main(["run", str(home / "run.toml"), "--out", str(out)]) == 0
    assert main(["judge", "--fill", str(out), "--judge", "yesno_product", "--depth", "3", "--dev-sample", "3"]) == 0
    fingerprint = json.loads((out / "llm_qrels.json").read_text())
    counts = fingerprint["counts"]
    assert fingerprint["model"] and counts["labelled"] == counts["targets"] > 0
    assert set(read_table(out)["view"]) == {"full", "condensed", "filled"}
    assert "llm_qrels.trec" in json.loads((out / "provenance.json").read_text())["files"]


def test_the_fill_writer_and_inputs_do_not_import_the_labeller_upward():
    """superb.judges.fill.label imports fill.write and fill.inputs; neither imports the labeller back, even inside a
    function."""
    import ast
    from pathlib import Path

    import superb.judges.fill

    for name in ("write", "inputs"):
        tree = ast.parse((Path(superb.judges.fill.__file__).parent / f"{name}.py").read_text())
        imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        assert "superb.judges.fill.inputs" in imported or name == "inputs"
        assert "superb.judges.fill.label" not in imported, name
