"""`superb judge SPEC` with a [label_study]: the same systems under the human and the judge labels, in one command.
A hand-worked case on a reused results folder, and Chorus with PISA BM25 vs PISA RM3 run on the selected queries."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pandas as pd
import pytest

from superb.testing.fakeserver import FakeServer
from superb.cli import main
from superb.errors import SpecError
from superb.judges.commands.spec import parse_judge_spec

MIRROR = Path(os.environ.get("SUPERB_DATA_MIRROR") or Path(__file__).parents[2] / "shared" / "data")
QIDS = [f"q{i}" for i in range(1, 9)]


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("SUPERB_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def grade_responder(req: dict) -> str:
    """The judge reads the g-marker of the product title; an ideal-attributes request gets a fixed list."""
    prompt = "".join(m["content"] for m in req["messages"])
    if "Product:" not in prompt:
        return "- a product"
    return re.search(r"\bg([0-3])\b", prompt.rsplit("Product:", 1)[1]).group(1)


def write_inverted(folder: Path) -> dict:
    """8 queries, products a and b each. Humans: a is perfect (3) and b not relevant (0) in q1..q7, the other way
    round in q8. The judge (title markers) says exactly the opposite everywhere."""
    folder.mkdir()
    docs, qrels = [], []
    for q in QIDS:
        a_human = 0 if q == "q8" else 3
        docs += [{"docno": f"{q}a", "title": f"g{3 - a_human} item {q} a"},
                 {"docno": f"{q}b", "title": f"g{a_human} item {q} b"}]
        qrels += [f"{q} 0 {q}a {a_human}\n", f"{q} 0 {q}b {3 - a_human}\n"]
    (folder / "docs.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    (folder / "queries.tsv").write_text("".join(f"{q}\titem {q}\n" for q in QIDS))
    (folder / "qrels.trec").write_text("".join(qrels))
    return {"name": "local", "docs": str(folder / "docs.jsonl"), "queries": str(folder / "queries.tsv"),
            "qrels": str(folder / "qrels.trec"), "labels": [0, 1, 2, 3], "rel_threshold": 2}


def write_results_folder(folder: Path) -> None:
    """A `superb run` folder: A ranks a first, B ranks b first, C (not selected) ranks an unjudged product first."""
    (folder / "runs").mkdir(parents=True)
    first = {"A": "a", "B": "b", "C": "a"}
    for system, top in first.items():
        other = "b" if top == "a" else "a"
        unjudged = [f"{q} Q0 zz{q} 1 3.0 C\n" for q in QIDS] if system == "C" else [""] * len(QIDS)
        shift = 1 if system == "C" else 0
        lines = [f"{u}{q} Q0 {q}{top} {1 + shift} 2.0 {system}\n{q} Q0 {q}{other} {2 + shift} 1.0 {system}\n"
                 for q, u in zip(QIDS, unjudged)]
        (folder / "runs" / f"{system}.run").write_text("".join(lines))
    (folder / "systems.json").write_text(json.dumps({s: f"runs/{s}.run" for s in first}))
    spec = {"dataset": {"name": "local"}, "pipelines": [{"name": "A"}, {"name": "B", "baseline": "A"},
                                                        {"name": "C", "baseline": "A"}]}
    (folder / "provenance.json").write_text(json.dumps({"spec": spec}))


def spec_lines(dataset: dict, base_url: str, judge: list[str], study: list[str]) -> str:
    values = [f"{k} = {json.dumps(v)}" for k, v in dataset.items()]
    return "\n".join(['name = "labels"', "[dataset]", *values, "[llm]", 'model = "fake-model"',
                      f'base_urls = ["{base_url}"]', 'cache = "off"', *judge, "[label_study]", *study]) + "\n"


def test_label_study_on_a_reused_results_folder(home, capsys):
    dataset = write_inverted(home / "data")
    write_results_folder(home / "results" / "first")
    with FakeServer(responder=grade_responder) as srv:
        (home / "spec.toml").write_text(spec_lines(
            dataset, srv.base_url, ["[judge]", 'type = "pointwise"', 'template = "pointwise_best_product"',
                                                                 'reading = "grade"'],
            ['runs = "results/first"', 'select = ["A", "B"]', 'measures = ["P@1"]']))
        assert main(["judge", str(home / "spec.toml"), "--out", str(home / "out")]) == 0
    out = home / "out"
    row = pd.read_csv(out / "label_study.csv").iloc[0]
    # P@1 (rel 2): humans A = 7/8, B = 1/8; judge A = 1/8, B = 7/8 -> two systems ordered the other way: tau -1
    assert row["judge"] == "pointwise" and row["measure"] == "P(rel=2)@1" and row["n_queries"] == 8
    assert row["tau"] == pytest.approx(-1.0) and row["discordant_pairs"] == 1
    assert row["order_human"] == "A > B" and row["order_judge"] == "B > A"
    # B - A per query: humans -1 x7, +1 x1: mean -0.75, sd sqrt(0.5), t = -3 (df 7, p = 0.020) -> worse;
    # judge the mirror image -> better: the one tested verdict flips
    verdicts = pd.read_csv(out / "label_study_verdicts.csv")
    assert verdicts[["system", "baseline", "verdict_human", "verdict_judge", "flipped"]].values.tolist() == [
        ["B", "A", "worse", "better", True]]
    assert row["tested_verdicts"] == 1 and row["flipped_verdicts"] == 1
    # the one pair of systems: significant under both label sets, in opposite directions -> reversed
    assert (row["system_pairs"], row["significant_human"], row["same_order"], row["confirmed"], row["reversed"],
            row["significant_judge"], row["only_judge"]) == (1, 1, 0, 0, 1, 1, 0)
    md = (out / "label_study.md").read_text()
    assert "B vs A, P(rel=2)@1: worse (human) -> better (judge)" in md and "condensed lists" in md
    prov = json.loads((out / "provenance.json").read_text())
    assert prov["variants"]["label_study"]["systems"] == ["A", "B"]
    assert prov["variants"]["label_study"]["variants"]["pointwise"] == {
        "pairs": 16, "queries": 8, "flipped_verdicts": 1, "tested_verdicts": 1}
    assert "do the labels change the conclusions?" in capsys.readouterr().out


def test_unjudged_documents_condensed_or_non_relevant(home):
    """C puts an unjudged product on top of every query: condensed lists remove it (C = A); counted as non-relevant
    it costs C every P@1."""
    dataset = write_inverted(home / "data")
    write_results_folder(home / "results" / "first")
    for condensed, expected in (("true", 7 / 8), ("false", 0.0)):
        with FakeServer(responder=grade_responder) as srv:
            (home / "spec.toml").write_text(spec_lines(
                dataset, srv.base_url, ["[judge]", 'type = "pointwise"', 'template = "pointwise_best_product"',
                                                                 'reading = "grade"'],
                ['runs = "results/first"', 'select = ["A", "C"]', 'measures = ["P@1"]', f"condensed = {condensed}"]))
            assert main(["judge", str(home / "spec.toml"), "--out", str(home / f"out_{condensed}")]) == 0
        md = (home / f"out_{condensed}" / "label_study.md").read_text()
        assert f"| P(rel=2)@1 | C | {expected:.3f} |" in md
    assert "count as non-relevant" in md


def test_runs_of_another_dataset_or_unknown_systems_are_refused(home, capsys):
    dataset = write_inverted(home / "data")
    write_results_folder(home / "results" / "first")
    with FakeServer(responder=grade_responder) as srv:
        (home / "spec.toml").write_text(spec_lines(dataset, srv.base_url, ["[judge]", 'type = "pointwise"', 'template = "pointwise_best_product"',
                                                                 'reading = "grade"'],
                                                   ['runs = "results/first"', 'select = ["A", "Z"]']))
        assert main(["judge", str(home / "spec.toml"), "--out", str(home / "out")]) != 0
        assert "label_study.select: systems ['Z'] are not in" in capsys.readouterr().err
        assert srv.requests == 0  # refused before any judge call
        prov = home / "results" / "first" / "provenance.json"
        prov.write_text(prov.read_text().replace('"local"', '"wands"'))
        (home / "spec.toml").write_text(spec_lines(dataset, srv.base_url, ["[judge]", 'type = "pointwise"', 'template = "pointwise_best_product"',
                                                                 'reading = "grade"'],
                                                   ['runs = "results/first"']))
        assert main(["judge", str(home / "spec.toml"), "--out", str(home / "out")]) != 0
        assert "holds runs on data set 'wands'" in capsys.readouterr().err


def test_label_study_spec_errors_name_key_paths():
    base = {"name": "x", "dataset": {"name": "chorus"}, "judge": {"preset": "superb"}}
    stage = {"engine": "pisa", "model": "bm25"}
    cases = [
        ({"runs": "r", "colour": 1}, r"^label_study\.colour: unknown key"),
        ({}, r"^label_study\.runs: give runs .*, systems .*, or both"),
        ({"runs": "r", "systems": []}, r"^label_study\.systems: expected an array of at least two tables .*or one "
                                       r"beside runs"),
        ({"runs": "r", "depth": 0}, r"^label_study\.depth"),
        ({"systems": [{"name": "a", "first_stage": stage}]}, r"^label_study\.systems: expected an array of at least"),
        ({"systems": [{"name": "a", "first_stage": stage}, {"name": "b", "first_stage": stage, "baseline": "c"}]},
         r"^label_study\.systems\[1\]\.baseline: 'c' is not one of"),
        ({"systems": [{"name": "a"}, {"name": "b", "first_stage": stage}]}, r"^label_study\.systems\[0\]\.first_stage"),
        ({"runs": "r", "test": "z"}, r"^label_study\.test: 'z' is not one of"),
        ({"runs": "r", "alpha": 2}, r"^label_study\.alpha"),
        ({"runs": "r", "measures": "P@1"}, r"^label_study\.measures: expected a non-empty list"),
        ({"systems": [{"name": "a", "first_stage": stage}] * 2, "select": ["a"]}, r"^label_study\.select"),
    ]
    for table, pattern in cases:
        with pytest.raises(SpecError, match=pattern):
            parse_judge_spec({**base, "label_study": table})
    with pytest.raises(SpecError, match=r"^label_study: .*add a \[judge\]"):
        parse_judge_spec({"name": "x", "dataset": {"name": "chorus"}, "label_study": {"runs": "r"}})
    spec = parse_judge_spec({**base, "label_study": {"runs": "r", "condensed": False}})
    assert spec.label_study.measures == ("nDCG@10", "P@10") and spec.label_study.condensed is False


@pytest.mark.slow
def test_chorus_pisa_bm25_vs_rm3_under_a_copying_and_a_constant_judge(home, monkeypatch):
    """The pointwise judge answers the human label (looked up by query and title): same means, no flips. The
    deliberated judge answers 0 for everything: every judge-side mean is 0, every judge verdict "identical", so
    exactly the significant human verdicts (better or worse) flip."""
    from superb.data import load_dataset

    monkeypatch.setenv("SUPERB_DATA_MIRROR", str(MIRROR))
    chorus = load_dataset({"name": "chorus"})
    titles = {d["docno"]: d["title"] for d in chorus.docs_iter()}
    queries = chorus.topics().set_index("qid")["query"].to_dict()
    human = {(queries[q], titles[d]): int(label) for q, d, label in chorus.qrels()[["qid", "docno", "label"]]
             .itertuples(index=False)}

    def responder(req: dict) -> str:
        prompt = "".join(m["content"] for m in req["messages"])
        if "Product:" not in prompt:
            return "- a product"
        if "Ideal product attributes" in prompt:
            return "0"
        query = prompt.split("Query:", 1)[1].split("\n", 1)[0].strip()
        product = prompt.rsplit("Product:", 1)[1].split("\n", 1)[0].strip().removeprefix("<<<").removesuffix(">>>").strip()
        return str(human[(query, product)])

    with FakeServer(responder=responder) as srv:
        (home / "spec.toml").write_text("\n".join([
            'name = "chorus_labels"', "[dataset]", 'name = "chorus"', "[queries]", "sample = 6", "seed = 3",
            "[pool]", 'source = "qrels"', "per_query = 8", "[llm]", 'model = "fake-model"',
            f'base_urls = ["{srv.base_url}"]', 'cache = "off"',
            "[judge]", 'fields = ["title"]', "text_tokens = 400",
            'reading = "grade"', "[[judge.variants]]", 'type = "pointwise"', 'template = "pointwise_best_product"',
            "[[judge.variants]]", 'type = "deliberated"',
            "[label_study]", 'measures = ["nDCG@5", "P@5"]',
            'systems = [{ name = "PISA BM25", first_stage = { engine = "pisa", model = "bm25", depth = 100 } },',
            '  { name = "PISA RM3", first_stage = { engine = "pisa", model = "rm3", depth = 100 }, '
            'baseline = "PISA BM25" }]',
        ]) + "\n")
        assert main(["judge", str(home / "spec.toml"), "--out", str(home / "out")]) == 0
    out = home / "out"
    table = pd.read_csv(out / "label_study.csv").set_index(["judge", "measure"])
    assert set(table.index) == {(j, m) for j in ("pointwise", "deliberated") for m in ("nDCG@5", "P(rel=2)@5")}
    assert (table["n_systems"] == 2).all() and (table["n_queries"] == 6).all()
    verdicts = pd.read_csv(out / "label_study_verdicts.csv")
    copy = verdicts[verdicts["judge"] == "pointwise"]
    assert len(copy) == 2 and (copy["verdict_human"] == copy["verdict_judge"]).all() and not copy["flipped"].any()
    assert (table.loc["pointwise", "flipped_verdicts"] == 0).all()
    zero = verdicts[verdicts["judge"] == "deliberated"]
    assert (zero["verdict_judge"] == "identical").all()
    assert zero["flipped"].tolist() == zero["verdict_human"].isin(["better", "worse"]).tolist()
    assert table.loc["deliberated", "tau"].isna().all()  # all judge-side means tie at 0
    md = (out / "label_study.md").read_text()
    assert md.count("| 0.000 |\n") >= 4  # judge column of the deliberated means table: four rows of zeros
    prov = json.loads((out / "provenance.json").read_text())
    pool = pd.read_csv(out / "pool.tsv", sep="\t")
    assert pool["qid"].nunique() == 6 and len(pool) <= 6 * 8
    # every pool pair has a human label (pool.source = "qrels"), so the study uses all of them
    assert prov["variants"]["label_study"]["variants"]["pointwise"]["pairs"] == len(pool)
