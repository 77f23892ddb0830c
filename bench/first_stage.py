"""Benchmark the first stages on Chorus: cold index build time, queries/second and effectiveness, in one run.

Usage: python bench/first_stage.py [--repeats 3] [--depth 100]

Indexes are built cold in a fresh temporary SUPERB_HOME (the documents are read into memory first, and the JVM is
started first, so the build times are indexing only; both are timed separately). Each pipeline answers all queries
once to warm up (PISA compiles its BM25 index for the given k1/b on first use), then ``--repeats`` timed passes;
queries/second is all queries divided by the median pass. nDCG@10 and P(rel=2)@10 are computed with ir_measures on
the depth-100 runs. Terrier and PISA BM25 runs are also compared: mean overlap of their top-10 and top-100 docnos.
Writes results/bench/first_stage.json and .md.
"""

from __future__ import annotations

from superb.provenance import record_bench

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PIPELINES = [("terrier", "bm25"), ("terrier", "rm3"), ("pisa", "bm25"), ("pisa", "rm3")]


def overlap(a, b, k: int) -> float:
    """Mean over queries of |top-k(a) & top-k(b)| / k."""
    top = lambda run: run[run["rank"] < k].groupby("qid")["docno"].apply(set).to_dict()  # noqa: E731
    ta, tb = top(a), top(b)
    qids = set(ta) | set(tb)
    return statistics.mean(len(ta.get(q, set()) & tb.get(q, set())) / k for q in qids)


def as_irm_run(run):
    """A first-stage result frame in ir_measures' column names."""
    frame = run.rename(columns={"qid": "query_id", "docno": "doc_id"})[["query_id", "doc_id", "score"]]
    return frame.assign(score=frame["score"].astype(float))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--depth", type=int, default=100)
    args = parser.parse_args()
    os.environ.setdefault("SUPERB_DATA_MIRROR", str(ROOT.parent / "shared" / "data"))
    home = tempfile.mkdtemp(prefix="superb-bench-")
    os.environ["SUPERB_HOME"] = home  # cold: no cached index
    try:
        run_bench(args)
    finally:
        shutil.rmtree(home, ignore_errors=True)


def run_bench(args: argparse.Namespace) -> None:
    import ir_measures
    import pyterrier as pt
    from ir_measures import P, nDCG

    from superb.data import load_dataset
    from superb.pipelines import first_stage

    t0 = time.perf_counter()
    ds = load_dataset({"name": "chorus"})
    num_docs = sum(1 for _ in ds.docs_iter())
    topics, qrels = ds.topics(), ds.qrels()
    load_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    pt.java.init()
    jvm_s = time.perf_counter() - t0

    build = {}
    for engine in ("terrier", "pisa"):
        stage = first_stage(ds, engine=engine, depth=args.depth)
        t0 = time.perf_counter()
        cached = stage.prepare()
        build[engine] = {"seconds": round(time.perf_counter() - t0, 2), "built_now": cached.built_now,
                         "num_docs": cached.info["num_docs"]}
        print(f"{engine}: index built in {build[engine]['seconds']} s", file=sys.stderr)

    measures = [nDCG @ 10, P(rel=2) @ 10]
    qrels_irm = qrels.rename(columns={"qid": "query_id", "docno": "doc_id", "label": "relevance"})
    rows, runs = [], {}
    for engine, model in PIPELINES:
        stage = first_stage(ds, engine=engine, model=model, depth=args.depth)
        t0 = time.perf_counter()
        run = stage(topics)
        first_s = time.perf_counter() - t0
        passes = []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            stage(topics)
            passes.append(time.perf_counter() - t0)
        runs[(engine, model)] = run
        scores = ir_measures.calc_aggregate(measures, qrels_irm, as_irm_run(run))
        rows.append({
            "engine": engine, "model": model, "depth": args.depth,
            "queries": len(topics), "queries_with_results": int(run["qid"].nunique()),
            "first_pass_s": round(first_s, 3), "median_pass_s": round(statistics.median(passes), 3),
            "qps": round(len(topics) / statistics.median(passes), 1),
            "nDCG@10": round(scores[nDCG @ 10], 4), "P(rel=2)@10": round(scores[P(rel=2) @ 10], 4),
            "stats": {k: v for k, v in stage.stats.items() if k != "empty_qids"},
        })
        print(rows[-1], file=sys.stderr)

    terrier, pisa = runs[("terrier", "bm25")], runs[("pisa", "bm25")]
    result = {
        "dataset": {"name": ds.name, "num_docs": num_docs, "num_queries": len(topics), "num_qrels": len(qrels)},
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "versions": {"python-terrier": pt.__version__, "pyterrier-pisa": __import__("pyterrier_pisa").__version__,
                     "ir-measures": ir_measures.__version__},
        "load_docs_s": round(load_s, 2), "jvm_start_s": round(jvm_s, 2),
        "index_build": build,
        "pipelines": rows,
        "pisa_over_terrier": {
            "index_build_speedup": round(build["terrier"]["seconds"] / build["pisa"]["seconds"], 2),
            "bm25_qps_ratio": round(rows[2]["qps"] / rows[0]["qps"], 2),
            "rm3_qps_ratio": round(rows[3]["qps"] / rows[1]["qps"], 2),
        },
        "bm25_overlap_terrier_pisa": {"top10": round(overlap(terrier, pisa, 10), 3),
                                      "top100": round(overlap(terrier, pisa, 100), 3)},
        "settings": {"bm25": {"k1": 1.2, "b": 0.75}, "rm3": {"fb_docs": 3, "fb_terms": 10, "fb_lambda": 0.6},
                     "repeats": args.repeats, "threads": 1},
    }
    out = ROOT / "results" / "bench"
    out.mkdir(parents=True, exist_ok=True)
    (out / "first_stage.json").write_text(json.dumps(result, indent=2) + "\n")
    (out / "first_stage.md").write_text(markdown(result))
    record_bench(out, [out / "first_stage.json", out / "first_stage.md"], "first_stage")  # superb.provenance
    print(markdown(result))


def markdown(r: dict) -> str:
    d = r["dataset"]
    lines = [
        f"# First stages on {d['name']} ({d['num_docs']} products, {d['num_queries']} queries, depth "
        f"{r['pipelines'][0]['depth']})",
        "",
        f"Cold index build (s): Terrier {r['index_build']['terrier']['seconds']}, "
        f"PISA {r['index_build']['pisa']['seconds']} (JVM start {r['jvm_start_s']} s and reading the documents "
        f"{r['load_docs_s']} s not included). {r['machine']['cpus']} CPUs, one thread each.",
        "",
        "| engine | model | nDCG@10 | P(rel=2)@10 | queries/s (warm) | first pass s | queries with results |",
        "|---|---|---|---|---|---|---|",
    ]
    for p in r["pipelines"]:
        lines.append(f"| {p['engine']} | {p['model']} | {p['nDCG@10']:.4f} | {p['P(rel=2)@10']:.4f} | {p['qps']} | "
                     f"{p['first_pass_s']} | {p['queries_with_results']}/{p['queries']} |")
    o = r["bm25_overlap_terrier_pisa"]
    ratio = r["pisa_over_terrier"]
    lines += [
        "",
        f"BM25 Terrier vs PISA: mean top-10 overlap {o['top10']}, top-100 overlap {o['top100']}.",
        f"PISA vs Terrier in this run: index build {ratio['index_build_speedup']}x faster, "
        f"BM25 {ratio['bm25_qps_ratio']}x and RM3 {ratio['rm3_qps_ratio']}x the queries/s.",
        "",
        "Timings come from a shared 2-CPU machine with other jobs running: absolute values move between runs, "
        "compare the ratios within one run.",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
