"""Benchmark the LLM rerankers: cost per query, sliding-window wall time, prompt-cache reuse, a small dev exploration.

Usage: python bench/rerankers.py [--sections counts,latency,cache,real,dev] [--queries 5] [--latency 0.25]
       python bench/rerankers.py --sections real --model 1.5b --dev-queries 40 [--rerankers "setwise (heap)" ...]

Sections (counts, latency and cache by default; ``real`` and ``dev`` need minutes to hours of the embedded model):

- counts: LLM calls and prompt tokens per query for every reranker at top_k = 20 / 50 / 100 (the quadratic and the
  likelihood-window ones at the k they support), on real Chorus titles (PISA BM25 top 100 of ``--queries``
  queries), answered by the fake server (valid answers for every prompt, letters with logprobs). Prompt tokens are
  the fake server's usage numbers, i.e. characters / 4 of the message texts (chat-template tokens not included).
- real: every reranker at top_k = ``--k`` (20) on ``--dev-queries`` DEV-split Chorus queries (PISA BM25) with the
  embedded ``--model`` (0.5b or 1.5b), response cache off: LLM calls, prompt and completion tokens and wall time per
  query, the share of prompt tokens the server served from its prompt cache (timings.cache_n / usage.prompt_tokens),
  fallbacks, and nDCG@10 / P(rel=2)@5 of the reranked run (a sanity figure on a few queries, not a result). The
  queries of one reranker run concurrently, as in ``superb run`` (client concurrency 4, one server slot), or one at a
  time with ``--sequential-queries`` (so consecutive prompts share the query: compare the cached share). Writes
  results/bench/rerankers_cost.png (nDCG@10 against prompt tokens per query). ``--rerankers`` picks a subset.
- latency: sliding-window reranking (top 100, window 20, step 10: 9 calls per query) of 100 queries against the
  fake server (in a child process) with a fixed latency L and ample parallelism (client concurrency 128); reported
  as wall time divided by (calls per query x L), the time one query's sequential windows need at minimum (goal
  < 1.5). At L = 0 the same number of plain requests through the client alone (complete_many) is timed too: the
  per-request cost of the HTTP client that bounds throughput whatever the reranker does.
- cache: the share of prompt tokens llama.cpp served from its prompt cache (timings.cache_n, read by the client as
  cached_prompt_tokens, over usage.prompt_tokens) for pointwise and deliberated on the real 0.5B model, 2 queries.
- dev: pointwise prompt and fusion choices on Chorus dev queries (BM25 top 20) with the 1.5B model: nDCG@10, P@5,
  P@10 (rel >= 2) for each template, and for fusion alphas computed from the same LLM scores.

Writes results/bench/rerankers.json and .md (sections not run keep their previous figures).
"""

from __future__ import annotations

from superb.provenance import record_bench

import argparse
import json
import os
import platform
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

OUT = ROOT / "results" / "bench"
KS = (20, 50, 100)
RERANKERS = {  # name -> spec options (top_k is set by the bench)
    "pointwise (best)": {"type": "pointwise", "variant": "best"},
    "pointwise (yesno)": {"type": "pointwise", "variant": "yesno"},
    "pointwise (yesno, product)": {"type": "pointwise", "variant": "yesno", "template": "pointwise_yesno_product"},
    "deliberated": {"type": "deliberated"},
    "deliberated (yesno)": {"type": "deliberated", "question": "yesno"},
    "deliberated (checklist)": {"type": "deliberated", "question": "checklist"},
    "listwise (one window of k)": {"type": "listwise"},
    "listwise (likelihood)": {"type": "listwise", "method": "likelihood"},
    "listwise (likelihood, 3 shuffles)": {"type": "listwise", "method": "likelihood", "shuffles": 3},
    "listwise (likelihood, calibrated)": {"type": "listwise", "method": "likelihood", "calibrate": True},
    "sliding (w=20, s=10)": {"type": "sliding", "window": 20, "step": 10},
    "sliding (w=10, s=5)": {"type": "sliding", "window": 10, "step": 5},
    "sliding (likelihood, w=10, s=5)": {"type": "sliding", "method": "likelihood", "window": 10, "step": 5},
    "sliding (likelihood, calibrated, w=10, s=5)": {"type": "sliding", "method": "likelihood", "calibrate": True,
                                                    "window": 10, "step": 5},
    "pairwise (generated, both orders, sort)": {"type": "pairwise", "strategy": "sort", "both_orders": True},
    "pairwise_prob (allpairs)": {"type": "pairwise_prob", "strategy": "allpairs"},
    "pairwise_prob (sliding, 10 passes)": {"type": "pairwise_prob", "strategy": "sliding", "passes": 10},
    "pairwise_prob (sort)": {"type": "pairwise_prob", "strategy": "sort"},
    "setwise (heap, c=3)": {"type": "setwise", "strategy": "heap", "set_size": 3},
    "setwise (heap, c=3, debias)": {"type": "setwise", "strategy": "heap", "set_size": 3, "debias": True},
    "setwise (heap, c=3, calibrated)": {"type": "setwise", "strategy": "heap", "set_size": 3, "calibrate": True},
    "setwise (bubble, c=3)": {"type": "setwise", "strategy": "bubble", "set_size": 3},
    "rubric": {"type": "rubric"},
    "biencoder (no LLM)": {"type": "biencoder"},
}
# the k values each reranker is counted at (default KS): likelihood windows hold at most 20 products, and the
# quadratic ones would send tens of thousands of fake requests at k = 100
COUNT_KS = {"listwise (likelihood)": (20,), "listwise (likelihood, 3 shuffles)": (20,),
            "listwise (likelihood, calibrated)": (20,),
            "pairwise_prob (allpairs)": (20, 50), "pairwise_prob (sliding, 10 passes)": (20, 50),
            "biencoder (no LLM)": ()}
DEV_TEMPLATES = ("pointwise_yesno", "pointwise_yesno_product", "pointwise_best", "pointwise_best_product")
ALPHAS = (1.0, 0.75, 0.5, 0.25, 0.0)


def fake_responder(body: dict):
    """Valid answers for every reranker prompt: reversed listwise orders, letters with logprobs (lettered prompts: a
    consistent model preferring a hidden score per product text, so that sorting strategies move products and their
    call counts are not flattered by ties), graded and yes/no labels with logprobs, LHS/RHS, rubric JSON, attributes."""
    import math
    import re

    from superb.testing.fakeserver import Reply

    prompt = "".join(m["content"] for m in body["messages"])
    shown = re.findall(r"^Product ([A-T]): <<< (.*) >>>$", prompt, re.M)
    if shown:  # pairwise_ab, setwise_best, listwise_first: a consistent model preferring a hidden score per product
        import zlib

        weights = {x: math.exp((zlib.crc32(text.encode()) % 1000) / 250.0) for x, text in shown}
        total = sum(weights.values())
        top = {x: math.log(w / total) for x, w in weights.items()}
        best = max(top, key=top.get)
        return Reply(best, ((best, top[best], top),))
    if prompt.rstrip().endswith("Ranking:"):
        n = len(re.findall(r"^\[\d+\] ", prompt, re.M))
        return Reply(" > ".join(f"[{i}]" for i in range(n, 0, -1)))
    if "LHS product:" in prompt:
        return Reply("LHS")
    if "meta-rubrics" in prompt:
        return Reply('[{"name": "coverage", "level": "set", "weight": 5, "description": "covers the query"}]')
    if "Select at most" in prompt:
        return Reply("[2, 1]")
    if "Product:" not in prompt:
        return Reply("- the kind of product searched for\n- good quality\n- good value")
    if prompt.rstrip().endswith("Answer:"):
        return Reply("yes", (("yes", math.log(0.7), {"yes": math.log(0.7), "no": math.log(0.3)}),))
    return Reply("2", (("2", math.log(0.6), {"2": math.log(0.6), "3": math.log(0.4)}),))


def chorus(queries: int, depth: int, split: str = "all"):
    from superb.data import load_dataset
    from superb.data.splits import select_queries
    from superb.pipelines import first_stage

    ds = load_dataset({"name": "chorus"})
    topics = select_queries(ds.topics(), split)
    topics = topics[topics["qid"].isin(ds.qrels()["qid"])].head(queries)
    return ds, first_stage(ds, engine="pisa", depth=depth)(topics)


def fake_client(srv, concurrency: int = 16):
    from superb.llm import LLMClient, LLMConfig, Usage

    return LLMClient(LLMConfig(model="fake-model", base_urls=(srv.base_url,), concurrency=concurrency,
                               cache="off"), cache=None, usage=Usage())


def section_counts(args) -> dict:
    from superb.testing.fakeserver import FakeServer

    from superb.transformers import BuildContext, build_reranker

    ds, run = chorus(args.queries, max(KS))
    nq = run["qid"].nunique()
    rows = []
    with FakeServer(responder=fake_responder) as srv, fake_client(srv) as llm:
        for name, options in RERANKERS.items():
            for k in COUNT_KS.get(name, KS):
                rr = build_reranker({**options, "top_k": k}, context=BuildContext(dataset=ds, llm=llm),
                                    path=name)
                rr(run)
                rows.append({"reranker": name, "k": k, "options": options, "calls_per_query": rr.stats["calls"] / nq,
                             "prompt_tokens_per_query": round(rr.stats["prompt_tokens"] / nq),
                             "completion_tokens_per_query": round(rr.stats["completion_tokens"] / nq)})
                print(rows[-1], flush=True)
    return {"queries": nq, "fields": ["title"], "text_budget_tokens": 64,
            "token_source": "fake server usage = characters/4 of the message texts (no chat-template tokens)",
            "rows": rows}


def _serve(latency: float, ports, stop) -> None:
    """Child process: a fake server of fixed latency (its own interpreter, so it does not share our GIL)."""
    from superb.testing.fakeserver import FakeServer

    with FakeServer(responder=fake_responder, latency=latency) as srv:
        ports.put(srv.port)
        stop.wait()
        ports.put(srv.max_in_flight)


class RemoteFake:
    """A FakeServer in a child process (a real endpoint is another process too)."""

    def __init__(self, latency: float):
        import multiprocessing as mp

        ctx = mp.get_context("fork")
        self._ports, self._stop = ctx.Queue(), ctx.Event()
        self._proc = ctx.Process(target=_serve, args=(latency, self._ports, self._stop), daemon=True)
        self.max_in_flight = None

    def __enter__(self):
        self._proc.start()
        self.base_url = f"http://127.0.0.1:{self._ports.get(timeout=30)}/v1"
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self.max_in_flight = self._ports.get(timeout=30)
        self._proc.join(timeout=30)


def section_latency(args) -> dict:
    import pandas as pd

    from superb.transformers.sliding import SlidingWindowReranker, window_starts

    k, w, s, nq = 100, 20, 10, 100
    calls = len(window_starts(k, w, s))
    frame = pd.DataFrame([{"qid": f"q{q:03d}", "query": f"query {q}", "docno": f"d{q}-{i}", "score": float(k - i),
                           "rank": i, "text": f"product {i} of query {q}"} for q in range(nq) for i in range(k)])
    results = []
    for latency in args.latency:
        srv = RemoteFake(latency)
        with srv, fake_client(srv, concurrency=128) as llm:
            rr = SlidingWindowReranker(llm, window=w, step=s, top_k=k)
            start = time.perf_counter()
            out = rr(frame)
            wall = time.perf_counter() - start
            if len(out) != len(frame):
                raise RuntimeError(f"sliding window returned {len(out)} rows for {len(frame)}")
        floor = None
        if latency == 0.0:  # the client alone: the same number of plain requests, no reranker around them
            from superb.llm import ChatRequest

            with RemoteFake(0.0) as plain, fake_client(plain, concurrency=128) as llm:
                reqs = [ChatRequest.chat(None, f"request {i}\nRanking:", max_tokens=8) for i in range(nq * calls)]
                start = time.perf_counter()
                llm.complete_many(reqs)
                floor = round(time.perf_counter() - start, 3)
        results.append({"latency_s": latency, "queries": nq, "calls_per_query": calls, "client_only_s": floor,
                        "total_calls": rr.stats["calls"], "max_in_flight": srv.max_in_flight,
                        "wall_s": round(wall, 3), "ideal_s": calls * latency,
                        "ratio": round(wall / (calls * latency), 3) if latency else None})
        print(results[-1], flush=True)
    return {"k": k, "window": w, "step": s, "client_concurrency": 128, "server": "fake server in a child process",
            "rows": results}


class _Served:
    """A model already served by `superb llm serve` (SUPERB_EMBEDDED_URL): nothing to stop."""

    def __init__(self, urls: tuple[str, ...], alias: str):
        self.base_urls, self.alias = urls, alias

    def stop(self) -> None:
        pass


def embedded(key: str):
    """The embedded model: the server SUPERB_EMBEDDED_URL names (the bench then measures that server's settings),
    else one started here (1 slot, the default threads)."""
    from superb.llm import LLMClient, LLMConfig
    from superb.llm.connect import running_embedded_server
    from superb.llm.model import MODELS, resolve_model
    from superb.llm.server import EmbeddedServer

    urls = running_embedded_server(MODELS[key].alias)
    if urls:
        srv = _Served(urls, MODELS[key].alias)
    else:
        path = resolve_model(key, download=False)
        srv = EmbeddedServer(path, alias=MODELS[key].alias, n_ctx=4096).start()
        urls = (srv.base_url,)
    return srv, LLMClient(LLMConfig(model=srv.alias, base_urls=urls, cache="off"), cache=None)


def real_key(model: str) -> str:
    """The results key of the real section: "real" for the 0.5B (as first written), "real_1.5b" for the 1.5B."""
    return "real" if model == "0.5b" else f"real_{model}"


def section_cache(args) -> dict:
    from superb.transformers import BuildContext, build_reranker

    ds, run = chorus(2, 10)
    srv, llm = embedded("0.5b")
    rows = []
    try:
        for name in ("pointwise (yesno)", "deliberated"):
            rr = build_reranker({**RERANKERS[name], "top_k": 10}, context=BuildContext(dataset=ds, llm=llm),
                                path=name)
            start = time.perf_counter()
            rr(run)
            st = rr.stats
            rows.append({"reranker": name, "queries": int(run["qid"].nunique()), "calls": st["calls"],
                         "prompt_tokens": st["prompt_tokens"], "cached_prompt_tokens": st["cached_prompt_tokens"],
                         "cached_share": round(st["cached_prompt_tokens"] / max(1, st["prompt_tokens"]), 3),
                         "wall_s": round(time.perf_counter() - start, 1)})
            print(rows[-1], flush=True)
    finally:
        llm.close()
        srv.stop()
    return {"model": "qwen2.5-coder-0.5b q4_k_m (embedded llama.cpp, 1 slot)", "top_k": 10, "rows": rows,
            "note": "cached_share = sum(timings.cache_n) / sum(usage.prompt_tokens)"}


def keep_rows(previous: dict | None, out: dict, names) -> list:
    """Rows of an earlier real run to keep beside a ``--rerankers`` subset: those of the other rerankers, and only
    when that run measured the same model, queries, split, k and first stage (otherwise nothing is kept)."""
    same = ("model", "queries", "split", "k", "first_stage")
    if not previous or any(previous.get(key) != out.get(key) for key in same):
        return []
    return [row for row in previous.get("rows", []) if row["reranker"] not in names and row["reranker"] in RERANKERS]


def section_real(args, results: dict | None = None) -> dict:
    """Every reranker (or ``--rerankers``) at top_k = ``--k`` on DEV queries with the embedded model."""
    from superb.llm.model import MODELS
    from superb.transformers import BuildContext, build_reranker

    names = args.rerankers or list(RERANKERS)
    unknown = [n for n in names if n not in RERANKERS]
    if unknown:
        raise SystemExit(f"unknown reranker(s) {unknown}; choose from {list(RERANKERS)}")
    ds, run = chorus(args.dev_queries, args.k, split="dev")
    qrels = ds.qrels()
    nq = int(run["qid"].nunique())
    srv, llm = embedded(args.model)
    served = os.environ.get("SUPERB_EMBEDDED_URL")
    servers = len(llm.config.base_urls)
    out = {"model": f"{MODELS[args.model].alias} (embedded llama.cpp, "
                    f"{f'{servers} servers x ' if servers > 1 else ''}1 slot"
                    f"{', threads ' + args.server_threads if served and args.server_threads else ''}, "
                    f"client concurrency 4)",
           "queries": nq, "split": "dev", "k": args.k, "first_stage": f"PISA BM25 top {args.k}", "fields": ["title"],
           "BM25": evaluate(run, qrels),
           "note": "cached_share = sum(timings.cache_n) / sum(usage.prompt_tokens); response cache off; "
                   "queries of one reranker run concurrently (as superb run does)"}
    out["rows"] = keep_rows(results.get(real_key(args.model)) if results else None, out, names)
    try:
        for name in names:
            rr = build_reranker({**RERANKERS[name], "top_k": args.k},
                                context=BuildContext(dataset=ds, llm=llm, seed=0), path=name)
            start = time.perf_counter()
            if args.sequential_queries:  # one query at a time: consecutive prompts share the query's prefix
                import pandas as pd

                ranked = pd.concat([rr(group) for _, group in run.groupby("qid", sort=False)])
            else:
                ranked = rr(run)
            wall = time.perf_counter() - start
            st = rr.stats
            row = {"reranker": name, "options": RERANKERS[name], "queries_at_once": 1 if args.sequential_queries
                   else nq, "calls_per_query": round(st["calls"] / nq, 2),
                   "prompt_tokens_per_query": round(st["prompt_tokens"] / nq),
                   "completion_tokens_per_query": round(st["completion_tokens"] / nq),
                   "cached_share": round(st["cached_prompt_tokens"] / st["prompt_tokens"], 3) if st["prompt_tokens"]
                   else None,
                   "wall_s_per_query": round(wall / nq, 1), "failures": st["failures"],
                   "fallbacks": sum(v for key, v in st.items() if key.startswith("fallback_")),
                   **evaluate(ranked, qrels)}
            out["rows"].append(row)
            print(row, flush=True)
            if results is not None:  # keep what is done if the run is cut short
                results[real_key(args.model)] = out
                write(results)
    finally:
        llm.close()
        srv.stop()
    plot_cost(out, f"rerankers_cost{'' if args.model == '0.5b' else '_' + args.model}.png")
    return out


def plot_cost(real: dict, name: str = "rerankers_cost.png") -> None:
    """nDCG@10 against prompt tokens per query (log scale), one point per reranker; BM25 as a line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in real["rows"] if r["prompt_tokens_per_query"] > 0]
    if not rows:
        return
    fig, ax = plt.subplots(figsize=(9, 6))
    ax.scatter([r["prompt_tokens_per_query"] for r in rows], [r["nDCG@10"] for r in rows])
    for r in rows:
        ax.annotate(r["reranker"], (r["prompt_tokens_per_query"], r["nDCG@10"]), fontsize=7,
                    xytext=(3, 3), textcoords="offset points")
    ax.axhline(real["BM25"]["nDCG@10"], color="grey", linestyle="--", label="BM25")
    ax.set_xscale("log")
    ax.set_xlabel("prompt tokens per query (log)")
    ax.set_ylabel("nDCG@10")
    ax.set_title(f"{real['model']}: {real['queries']} {real['split']} queries, k = {real['k']}", fontsize=9)
    ax.legend()
    fig.tight_layout()
    OUT.mkdir(parents=True, exist_ok=True)
    fig.savefig(OUT / name, dpi=120)
    plt.close(fig)


def evaluate(run, qrels, rel: int = 2) -> dict:
    import ir_measures
    from ir_measures import P, nDCG

    measures = [nDCG @ 10, P(rel=rel) @ 5, P(rel=rel) @ 10]
    frame = run.rename(columns={"qid": "query_id", "docno": "doc_id"})[["query_id", "doc_id", "score"]]
    frame = frame.assign(score=frame["score"].astype(float))
    qrels = qrels[qrels["qid"].isin(run["qid"])]  # the run's queries only (else absent queries count as 0)
    q = qrels.rename(columns={"qid": "query_id", "docno": "doc_id", "label": "relevance"})
    return {str(m): round(v, 4) for m, v in ir_measures.calc_aggregate(measures, q, frame).items()}


def section_dev(args, results: dict | None = None) -> dict:
    import pyterrier as pt

    from superb.transformers import BuildContext, build_reranker
    from superb.transformers.blend import blend

    ds, run = chorus(args.dev_queries, 20, split="dev")
    qrels = ds.qrels()
    out = {"queries": int(run["qid"].nunique()), "first_stage": "PISA BM25 top 20", "fields": ["title"],
           "BM25": evaluate(run, qrels), "rows": []}
    srv, llm = embedded("1.5b")
    try:
        for template in args.dev_templates:
            variant = "yesno" if "yesno" in template else "best"
            rr = build_reranker({"type": "pointwise", "variant": variant, "template": template, "top_k": 20},
                                context=BuildContext(dataset=ds, llm=llm), path=template)
            start = time.perf_counter()
            scored = rr(run)
            wall = time.perf_counter() - start
            for alpha in ALPHAS:
                fused = []
                for _, g in scored.groupby("qid", sort=False):
                    g = g.sort_values("rank")
                    prior = run.set_index(["qid", "docno"]).loc[list(zip(g.qid, g.docno)), "score"].tolist()
                    fused.append(g.assign(score=blend(g[rr.score_column].tolist(), prior, alpha)))
                fused = pt.model.add_ranks(__import__("pandas").concat(fused))
                row = {"template": template, "alpha": alpha, **evaluate(fused, qrels), "calls": rr.stats["calls"],
                       "wall_s": round(wall, 1)}
                out["rows"].append(row)
                print(row, flush=True)
            if results is not None:  # keep what is done if the run is cut short
                results["dev"] = out
                write(results)
    finally:
        llm.close()
        srv.stop()
    return out


def write(results: dict) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "rerankers.json").write_text(json.dumps(results, indent=2) + "\n")
    lines = ["# Reranker benchmark", "", f"Machine: {results.get('machine')}", ""]
    if "counts" in results:
        c = results["counts"]
        lines += [f"## LLM calls and prompt tokens per query ({c['queries']} Chorus queries, titles; "
                  f"tokens: {c['token_source']})", "", "| reranker | k | calls/query | prompt tokens/query |",
                  "|---|---|---|---|"]
        lines += [f"| {r['reranker']} | {r['k']} | {r['calls_per_query']:g} | {r['prompt_tokens_per_query']} |"
                  for r in c["rows"]]
        lines.append("")
    if "latency" in results:
        lat = results["latency"]
        lines += [f"## Sliding-window wall time, 100 queries, k={lat['k']} w={lat['window']} s={lat['step']} "
                  f"(fake endpoint of fixed latency L)", "",
                  "| L (s) | calls/query | total calls | max in flight | wall (s) | wall / (calls x L) | client alone (s) |",
                  "|---|---|---|---|---|---|---|"]
        lines += [f"| {r['latency_s']} | {r['calls_per_query']} | {r['total_calls']} | {r['max_in_flight']} | "
                  f"{r['wall_s']} | {r['ratio'] if r['ratio'] is not None else '(overhead only)'} | "
                  f"{r.get('client_only_s') or ''} |" for r in lat["rows"]]
        lines.append("")
    if "cache" in results:
        ca = results["cache"]
        lines += [f"## Prompt-cache reuse on {ca['model']}, top {ca['top_k']} ({ca['note']})", "",
                  "| reranker | calls | prompt tokens | cached | share | wall (s) |", "|---|---|---|---|---|---|"]
        lines += [f"| {r['reranker']} | {r['calls']} | {r['prompt_tokens']} | {r['cached_prompt_tokens']} | "
                  f"{r['cached_share']} | {r['wall_s']} |" for r in ca["rows"]]
        lines.append("")
    for key in [k for k in results if k == "real" or k.startswith("real_")]:
        r_ = results[key]
        lines += [f"## Every reranker on {r_['model']}: {r_['queries']} Chorus {r_['split']} queries, "
                  f"{r_['first_stage']} ({r_['note']})", "", f"BM25: {r_['BM25']}", "",
                  "| reranker | queries at once | calls/query | prompt tokens/query | completion tokens/query | "
                  "cached share | wall s/query | failures | fallbacks | nDCG@10 | P(rel=2)@5 |",
                  "|---|---|---|---|---|---|---|---|---|---|---|"]
        lines += [f"| {r['reranker']} | {r.get('queries_at_once', r_['queries'])} | {r['calls_per_query']:g} | "
                  f"{r['prompt_tokens_per_query']} | "
                  f"{r['completion_tokens_per_query']} | "
                  f"{r['cached_share'] if r['cached_share'] is not None else '-'} | "
                  f"{r['wall_s_per_query']} | {r['failures']} | {r['fallbacks']} | {r['nDCG@10']} | {r['P(rel=2)@5']} |"
                  for r in r_["rows"]]
        lines.append("")
    if "dev" in results:
        d = results["dev"]
        lines += [f"## Dev exploration: pointwise on {d['queries']} Chorus dev queries, {d['first_stage']}, "
                  f"1.5B model", "", f"BM25: {d['BM25']}", "", *([f"Note: {d['evaluation_note']}", ""] if "evaluation_note" in d else []),
                  "| template | alpha | nDCG@10 | P(rel=2)@5 | P(rel=2)@10 |", "|---|---|---|---|---|"]
        lines += [f"| {r['template']} | {r['alpha']} | {r['nDCG@10']} | {r['P(rel=2)@5']} | {r['P(rel=2)@10']} |"
                  for r in d["rows"]]
        lines.append("")
    (OUT / "rerankers.md").write_text("\n".join(lines))
    record_bench(OUT, [OUT / "rerankers.md", *OUT.glob("rerankers*.json"), *OUT.glob("rerankers_*.png")], "rerankers")  # superb.provenance


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sections", default="counts,latency,cache")
    parser.add_argument("--queries", type=int, default=5)
    parser.add_argument("--dev-queries", type=int, default=10)
    parser.add_argument("--dev-templates", nargs="+", default=list(DEV_TEMPLATES), choices=DEV_TEMPLATES)
    parser.add_argument("--latency", type=float, nargs="+", default=[0.0, 0.25, 0.5, 1.0])
    parser.add_argument("--model", default="0.5b", choices=["0.5b", "1.5b"], help="embedded model of the real section")
    parser.add_argument("--k", type=int, default=20, help="top_k of the real section")
    parser.add_argument("--rerankers", nargs="+", default=None, help="subset of the real section (names as listed)")
    parser.add_argument("--server-threads", default="",
                        help="with SUPERB_EMBEDDED_URL: the threads that server runs (recorded, not checked)")
    parser.add_argument("--sequential-queries", action="store_true",
                        help="real section: rerank one query at a time (default: all at once, as superb run does)")
    args = parser.parse_args()
    os.environ.setdefault("SUPERB_DATA_MIRROR", str(ROOT.parent / "shared" / "data"))
    previous = OUT / "rerankers.json"
    results = json.loads(previous.read_text()) if previous.is_file() else {}
    results["machine"] = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    sections = {"counts": section_counts, "latency": section_latency, "cache": section_cache, "real": section_real,
                "dev": section_dev}
    for name in args.sections.split(","):
        if name not in sections:
            raise SystemExit(f"unknown section {name!r}; choose from {sorted(sections)}")
        key = real_key(args.model) if name == "real" else name
        results[key] = sections[name](args, results) if name in ("dev", "real") else sections[name](args)
        write(results)


if __name__ == "__main__":
    main()
