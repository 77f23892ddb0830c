"""The results folder of an experiment: evaluation, significance table, runs, qrels, provenance, plots.

Layout of ``results/NAME/``:
  table.md, table.csv      Table-4-style report (means, raw and corrected p-values, reject flags)
  perquery.csv             one row per (system, qid, measure)
  usage.csv                LLM calls, tokens, cache hits, reranker repairs/fallbacks per system
  runs/SYSTEM.run          TREC run files;  systems.json maps system names to file names
  qrels.trec, topics.tsv   exactly what was evaluated
  provenance.json          spec, package versions, data checksums, project commit, LLM endpoint/model, timings
  responses.jsonl.gz       the cached LLM answers the run used (superb/llm/ship.py): `superb responses replay`
  cost.png, gain_*.png     effectiveness against LLM cost; per-query gains over the baseline
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pandas as pd

from superb.experiment import ExperimentResult
from superb.llm.ship import ship_responses

USAGE_COLUMNS = ("calls", "cache_hits", "failures", "retries", "prompt_tokens", "completion_tokens",
                 "saved_prompt_tokens", "server_cached_tokens")


def file_name(system: str) -> str:
    """A file-system-safe, readable name for a system ("BM25 >> pointwise" -> "BM25__pointwise")."""
    name = re.sub(r"\s*>>\s*", "__", system.strip())
    return re.sub(r"[^A-Za-z0-9_.+@=-]+", "_", name).strip("_") or "system"


def evaluate(result: ExperimentResult) -> tuple[pd.DataFrame, pd.DataFrame, list]:
    """Per-query values of every system, and the significance table. Returns (perquery, table, measures)."""
    from superb.eval.evaluate import per_query
    from superb.eval.measures import judged_measure, parse_measures
    from superb.eval.report import compare

    ev = result.spec.evaluation
    measures = parse_measures(list(ev.measures), rel=ev.rel if ev.rel is not None else _dataset_rel(result),
                              path="evaluation.measures")
    frames = []
    for name, pr in result.pipelines.items():
        pq = per_query(pr.run, result.qrels, measures + [judged_measure()], condensed=ev.condensed,
                       queries=result.topics["qid"])
        frames.append(pq.assign(system=name))
    perquery = pd.concat(frames, ignore_index=True)[["system", "qid", "measure", "value"]]
    order = list(result.pipelines)
    names = [repr(m) for m in measures]
    table = compare(perquery[perquery["measure"].isin(names)], result.spec.baselines, test=ev.test,
                    correction=ev.correction, alpha=ev.alpha, order=order)
    return perquery, table, measures


def _dataset_rel(result: ExperimentResult) -> int:
    return int(result.dataset_provenance.get("rel_threshold", 1))


def _price(result: ExperimentResult) -> dict[str, float] | None:
    """Prices ($ per 1M tokens) of the model this run used, from [llm].prices; None when it is unpriced."""
    prices = (result.spec.llm or {}).get("prices") or {}
    model = (result.llm_info or {}).get("model")
    return prices.get(model) if model else None


def usage_frame(result: ExperimentResult) -> pd.DataFrame:
    rows = []
    nq = max(len(result.topics), 1)
    price = _price(result)
    for name, pr in result.pipelines.items():
        row: dict[str, Any] = {"system": name, "seconds": round(pr.seconds, 2)}
        for key in USAGE_COLUMNS:
            row[key] = int(pr.usage.get(key, 0))
        # What the method costs, whether or not this run was served from the cache: requests and their prompt tokens.
        row["requests"] = row["calls"] + row["cache_hits"]
        row["calls_per_query"] = row["requests"] / nq
        row["prompt_tokens_per_query"] = (row["prompt_tokens"] + row["saved_prompt_tokens"]) / nq
        row["wait_s"] = round(float(pr.usage.get("wait_s", 0.0)), 2)  # time spent waiting on the model
        # Estimated dollars for the calls this run made, and for the whole method had nothing been cached.
        row["est_cost_usd"] = _cost(price, row["prompt_tokens"], row["completion_tokens"])
        row["est_cost_uncached_usd"] = _cost(price, row["prompt_tokens"] + row["saved_prompt_tokens"],
                                             row["completion_tokens"] + int(pr.usage.get("saved_completion_tokens", 0)))
        row["repaired"], row["fallbacks"] = repairs_and_fallbacks(pr.stats)
        row.update({f"stat:{k}": v for k, v in sorted(pr.stats.items())})
        rows.append(row)
    return pd.DataFrame(rows)


def repairs_and_fallbacks(stats: dict[str, int]) -> tuple[int, int]:
    """Model answers that needed repair, and results that fell back to a default, from a component's counters.

    Listwise counts each repair by kind (``repair_missing``...) AND once per answer (``repaired_answers``): the
    answers are what the column reports, so the per-kind counts are used only where no per-answer count exists.
    Fallbacks are the ``fallback_*`` counters and default labels/rubrics.
    """
    per_kind = sum(v for k, v in stats.items() if k.startswith("repair_"))
    repaired = stats.get("repaired_answers", per_kind)
    fallbacks = sum(v for k, v in stats.items() if k.startswith("fallback_") or "default" in k)
    return int(repaired), int(fallbacks)


def _cost(price: dict[str, float] | None, prompt_tokens: int, completion_tokens: int) -> float:
    if price is None:
        return float("nan")
    return (prompt_tokens * price.get("prompt", 0.0) + completion_tokens * price.get("completion", 0.0)) / 1e6


def write_results(result: ExperimentResult, out_dir: Path) -> Path:
    from superb.eval.report import format_markdown, write_csv
    from superb.provenance import host, package_versions, project_commit

    out_dir = Path(out_dir)
    (out_dir / "runs").mkdir(parents=True, exist_ok=True)
    perquery, table, measures = evaluate(result)
    usage = usage_frame(result)
    judged = (perquery[perquery["measure"].str.startswith("Judged")]
              .groupby("system")["value"].mean().rename("judged@10"))
    extra = usage.set_index("system")[["requests", "cache_hits", "failures", "repaired", "fallbacks"]].join(judged)
    extra.insert(1, "prompt_tok/q", usage.set_index("system")["prompt_tokens_per_query"].round(0))
    if _price(result) is not None:
        extra["cost $"] = usage.set_index("system")["est_cost_uncached_usd"]
    order = list(result.pipelines)
    ev = result.spec.evaluation
    info = {"test": ev.test, "correction": ev.correction, "alpha": ev.alpha, "n_queries": len(result.topics),
            "condensed": ev.condensed}
    (out_dir / "table.md").write_text(
        f"# {result.spec.name}\n\n{result.spec.description}\n\n"
        + format_markdown(table, [repr(m) for m in measures], order, info, extra=extra), encoding="utf-8")
    write_csv(table, out_dir / "table.csv")
    perquery.to_csv(out_dir / "perquery.csv", index=False)
    usage.to_csv(out_dir / "usage.csv", index=False)

    systems = {}
    for name, pr in result.pipelines.items():
        fname = file_name(name) + ".run"
        systems[name] = f"runs/{fname}"
        write_trec_run(pr.run, out_dir / "runs" / fname, tag=file_name(name))
    (out_dir / "systems.json").write_text(json.dumps(systems, indent=2), encoding="utf-8")
    result.qrels[["qid", "docno", "label"]].assign(it=0)[["qid", "it", "docno", "label"]].to_csv(
        out_dir / "qrels.trec", sep=" ", header=False, index=False)
    result.topics[["qid", "query"]].to_csv(out_dir / "topics.tsv", sep="\t", header=False, index=False)
    provenance = {
        "spec": result.spec.raw, "spec_file": str(result.spec.source) if result.spec.source else None,
        "dataset": result.dataset_provenance, "packages": package_versions(), "project": project_commit(),
        "host": host(), "llm": result.llm_info, "timings": {**result.timings, **{
            f"pipeline:{n}": round(p.seconds, 3) for n, p in result.pipelines.items()}},
        "systems": systems,
    }
    (out_dir / "provenance.json").write_text(json.dumps(provenance, indent=2, default=str), encoding="utf-8")
    _plots(result, perquery, usage, out_dir)
    ship_responses(result, out_dir)  # responses.jsonl.gz: the LLM answers used, so the folder re-derives anywhere
    return out_dir


def _plots(result: ExperimentResult, perquery: pd.DataFrame, usage: pd.DataFrame, out_dir: Path) -> None:
    """Cost plot and per-query gain plots, only where there is an LLM reranker or a baseline to gain over."""
    from superb.eval.plots import cost_plot, gain_plot

    ndcg = perquery[perquery["measure"] == "nDCG@10"].groupby("system")["value"].mean()
    reranked = [n for n, p in zip(result.pipelines, result.spec.pipelines) if p.rerank]
    if reranked and not ndcg.empty:
        pts = usage.set_index("system").loc[reranked, ["calls_per_query", "prompt_tokens_per_query"]]
        pts = pts.join(ndcg.rename("ndcg10")).reset_index()
        cost_plot(pts, out_dir / "cost.png")
    for p in result.spec.pipelines:
        if p.baseline and not ndcg.empty:
            gain_plot(perquery, p.name, p.baseline, "nDCG@10", out_dir / f"gain_{file_name(p.name)}.png")


def write_trec_run(run: pd.DataFrame, path: Path, tag: str) -> None:
    run = run.sort_values(["qid", "score"], ascending=[True, False], kind="stable")
    ranks = run.groupby("qid").cumcount() + 1
    lines = [f"{q} Q0 {d} {r} {s:.6f} {tag}\n" for q, d, r, s in
             zip(run["qid"], run["docno"], ranks, run["score"].astype(float))]
    path.write_text("".join(lines), encoding="utf-8")


def read_table(result_dir: Path) -> pd.DataFrame:
    path = Path(result_dir) / "table.csv"
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist: is {result_dir} a folder written by `superb run`?")
    return pd.read_csv(path)
