"""`superb evaluate` (superb/run/evaluate_runs.py): run files + qrels -> superb's table with 0 LLM calls.

On real runs (rank_llm's BM25 over DL19 and a run made outside superb, experiments/runs/dl19_pyterrier_dph.run):
its numbers equal pytrec_eval + scipy's paired t-test (not superb's code), and equal a spec run over the same run
files (data set trec-dl 2019); bad inputs exit 2 with the file named, never a traceback.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pandas as pd
import pytest

from superb.cli import main

ROOT = Path(__file__).resolve().parents[1]
MIRROR = os.environ.get("SUPERB_DATA_MIRROR")
pytestmark = pytest.mark.skipif(not MIRROR or not (Path(MIRROR) / "trec-dl").is_dir(),
                                reason="needs SUPERB_DATA_MIRROR with trec-dl/ (SUPERB_DATA_MIRROR=../shared/data)")
OUTSIDE = ROOT / "experiments" / "runs" / "dl19_pyterrier_dph.run"


@pytest.fixture()
def files(tmp_path, monkeypatch):
    monkeypatch.setenv("SUPERB_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SUPERB_PROGRESS", "0")
    src = Path(MIRROR) / "trec-dl"
    for name in ("qrels.dl19-passage.txt", "trec_results_dl19.txt", "topics.dl19-passage.txt"):
        shutil.copy(src / name, tmp_path / name)
    shutil.copy(OUTSIDE, tmp_path / "dph.run")
    return tmp_path


def evaluate(files, *extra: str) -> pd.DataFrame:
    out = files / "out"
    code = main(["evaluate", "--qrels", str(files / "qrels.dl19-passage.txt"), str(files / "trec_results_dl19.txt"),
                 str(files / "dph.run"), "--names", "BM25,DPH", "--rel", "2", "--measures", "nDCG@10", "P@10",
                 "AP@100", "--out", str(out), *extra])
    assert code == 0
    return pd.read_csv(out / "table.csv")


def pytrec(qrels: Path, run: Path, measure: str, rel: int = 2) -> dict[str, float]:
    import pytrec_eval

    labels: dict = {}
    for line in qrels.read_text().splitlines():
        q, _, d, label = line.split()
        labels.setdefault(q, {})[d] = int(label)
    if measure != "ndcg_cut_10":
        labels = {q: {d: int(v >= rel) for d, v in docs.items()} for q, docs in labels.items()}
    scores: dict = {}
    for line in run.read_text().splitlines():
        q, _, d, _, s, _ = line.split()
        scores.setdefault(q, {})[d] = float(s)
    trec = {"ndcg_cut_10": "ndcg_cut.10", "P_10": "P.10", "map_cut_100": "map_cut.100"}[measure]
    found = pytrec_eval.RelevanceEvaluator(labels, {trec}).evaluate(scores)
    return {q: v[measure] for q, v in found.items()}


def test_its_numbers_are_pytrec_evals_and_scipys(files):
    import scipy.stats

    table = evaluate(files)
    full = table[table["view"] == "full"].set_index(["system", "measure"])
    for ours, theirs in (("nDCG@10", "ndcg_cut_10"), ("P(rel=2)@10", "P_10"), ("AP(rel=2)@100", "map_cut_100")):
        bm25 = pytrec(files / "qrels.dl19-passage.txt", files / "trec_results_dl19.txt", theirs)
        dph = pytrec(files / "qrels.dl19-passage.txt", files / "dph.run", theirs)
        queries = sorted(bm25)
        assert full.loc[("BM25", ours), "mean"] == pytest.approx(sum(bm25.values()) / len(bm25), abs=1e-12)
        assert full.loc[("DPH", ours), "mean"] == pytest.approx(sum(dph.values()) / len(dph), abs=1e-12)
        p = scipy.stats.ttest_rel([dph[q] for q in queries], [bm25[q] for q in queries]).pvalue
        assert full.loc[("DPH", ours), "p"] == pytest.approx(p, abs=1e-12)
    assert round(full.loc[("BM25", "nDCG@10"), "mean"], 4) == 0.5058
    assert (files / "out" / "power.csv").is_file() and (files / "out" / "perquery.csv").is_file()
    assert (files / "out" / "report.html").is_file()


def test_a_spec_over_the_same_run_files_gives_the_same_table(files):
    table = evaluate(files)
    spec = files / "dl.toml"
    spec.write_text(f"""
name = "dl19_runs"
[dataset]
name = "trec-dl"
year = 2019
[evaluation]
measures = ["nDCG@10", "P@10", "AP@100"]
[[pipelines]]
name = "BM25"
first_stage = {{ run = "{files / 'trec_results_dl19.txt'}" }}
[[pipelines]]
name = "DPH"
first_stage = {{ run = "{files / 'dph.run'}" }}
baseline = "BM25"
""")
    assert main(["run", str(spec), "--out", str(files / "spec_out")]) == 0
    via_spec = pd.read_csv(files / "spec_out" / "table.csv")
    columns = ["system", "view", "measure", "n_queries", "mean", "delta", "ci_low", "ci_high", "p", "p_corrected"]
    pd.testing.assert_frame_equal(table[columns].reset_index(drop=True), via_spec[columns].reset_index(drop=True))


def test_declared_hypotheses_are_confirmatory(files):
    hyp = files / "hyp.toml"
    hyp.write_text('[[hypotheses]]\nsystem = "DPH"\nagainst = "BM25"\nmeasures = ["nDCG@10"]\nfamily = "main"\n')
    table = evaluate(files, "--hypotheses", str(hyp))
    row = table[(table["system"] == "DPH") & (table["measure"] == "nDCG@10") & (table["view"] == "full")].iloc[0]
    assert row["role"] == "confirmatory" and row["family"] == "confirmatory:main"
    other = table[(table["system"] == "DPH") & (table["measure"] == "P(rel=2)@10")].iloc[0]
    assert other["role"] == "exploratory"


BAD = {
    "missing run": (lambda f: ["--qrels", str(f / "qrels.dl19-passage.txt"), str(f / "nope.run")],
                    "run file not found"),
    "malformed run": (lambda f: ["--qrels", str(f / "qrels.dl19-passage.txt"), str(_write(f / "bad.run",
                                 "19335 Q0 123 1 2.0 t\n19335 Q0 124 2\n"))], "bad.run:2: expected 6 columns"),
    "repeated document": (lambda f: ["--qrels", str(f / "qrels.dl19-passage.txt"), str(_write(
        f / "rep.run", "19335 Q0 123 1 2.0 t\n19335 Q0 123 2 1.0 t\n"))], "appears more than once for query '19335'"),
    "missing qrels": (lambda f: ["--qrels", str(f / "none.txt"), str(f / "dph.run")], "qrels file not found"),
    "qrels cut short": (lambda f: ["--qrels", str(_write(f / "cut.txt", (f / "qrels.dl19-passage.txt").read_text()[:30000])),
                                   str(f / "dph.run")], "cut.txt:1544: expected 4 columns, found 1: '15' (the file ends "
                                                        "here without a newline: a copy cut short?)"),
    "qrels label not an integer": (lambda f: ["--qrels", str(_write(f / "half.txt", "19335 0 123 1\n19335 0 124 1.5\n")),
                                              str(f / "dph.run")], "half.txt:2: label '1.5' is not an integer"),
    "unknown baseline": (lambda f: ["--qrels", str(f / "qrels.dl19-passage.txt"), str(f / "dph.run"),
                                    "--baseline", "BM99"], "--baseline: 'BM99' is not one of the systems"),
    "names count": (lambda f: ["--qrels", str(f / "qrels.dl19-passage.txt"), str(f / "dph.run"), "--names", "A,B"],
                    "--names: gives 2 names for 1 run files"),
}


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


@pytest.mark.parametrize("case", list(BAD))
def test_bad_inputs_exit_2_naming_the_file(files, capsys, case):
    args, message = BAD[case]
    code = main(["evaluate", *args(files), "--out", str(files / "out")])
    err = capsys.readouterr().err
    assert code == 2, err
    assert message in err and "Traceback" not in err
    assert not (files / "out").exists()


def test_the_report_shows_docnos_without_a_warning(files, caplog):
    code = main(["evaluate", "--qrels", str(files / "qrels.dl19-passage.txt"), str(files / "dph.run"),
                 "--out", str(files / "out")])
    assert code == 0
    assert "titles unavailable" not in caplog.text  # no data set to load: superb evaluate has qrels and runs only
    assert (files / "out" / "report.html").is_file()


def test_queries_without_labels_are_ignored_and_counted(files, caplog):
    extra = files / "extra.run"
    extra.write_text((files / "dph.run").read_text() + "999999 Q0 123 1 1.0 t\n")
    code = main(["evaluate", "--qrels", str(files / "qrels.dl19-passage.txt"), str(extra), "--rel", "2",
                 "--out", str(files / "out")])
    assert code == 0
    assert "1 queries have no labels" in caplog.text
    usage = pd.read_csv(files / "out" / "usage.csv")
    assert int(usage["stat:run_queries_without_labels"].iloc[0]) == 1
