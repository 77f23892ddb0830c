"""The results folder of an experiment: evaluation, significance table, runs, qrels, provenance, plots.

The folder is replaced as a whole (superb.atomic): written beside it as ``.NAME.writing-PID``, then swapped in, so
no file of an earlier run survives and an interrupted write leaves the earlier folder whole.

Layout of ``results/NAME/`` (the names: superb.folder.layout; read back through superb.folder):
  table.md, table.csv      Table-4-style report (means per view; per comparison its role -- confirmatory, exploratory
                           or corrected --, effect with 95% interval, raw and corrected p-values, reject flags, the
                           family of each test and its size; queries without a relevant document); confirmatory
                           hypotheses, every comparison's effect and the MDE block in their own sections.
  power.csv                per view and measure: n, SD of paired differences, minimum detectable difference
                           table.csv names each measure as ir_measures computes it from runs/ and qrels.trec
                           (condensed: nDCG(judged_only=True)@10); a view with labels of its own (filled) is in
                           table_<view>.csv (superb.eval.table_files; read both with read_table)
  perquery.csv             one row per (system, view, qid, measure), plus Judged@10 (view "full")
  usage.csv                LLM calls, tokens, cache hits, reranker repairs/fallbacks per system
  runs/SYSTEM.run          TREC run files (pt.io), scores strictly decreasing in rank order (superb.trec.runs):
                           trec_eval, ir_measures or pt.Experiment on these files and qrels.trec give table.csv
  systems.json             system name -> run file
  stage_scores.csv.gz      each stage's own raw score (first_stage_score, <stage>_score, <stage>_blend_score with
                           alpha < 1, fuse_score) of each system's top 10 per query, the rows report.html shows
                           (superb.stage_scores)
  qrels.trec, topics.tsv   exactly what was evaluated
  responses.jsonl.gz       the cached LLM answers the run used (superb/llm/ship.py): `superb responses replay`
  provenance.json          spec, package versions, data checksums, project commit, LLM endpoint/model, timings, the
                           shipped responses' summary and the sha256 of every file of the folder; written once, last,
                           when the folder is complete (superb.provenance.write)
  cost.png, gain_*.png     effectiveness against LLM cost; per-query gains over the baseline
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from superb.atomic import replacing
from superb.eval.effects import power_summary
from superb.eval.evaluate import View, make_views, no_relevant_counts, no_relevant_queries, per_query, significance
from superb.eval.families import Hypothesis, by_construction, families
from superb.eval.measures import judged_measure
from superb.eval.plots import cost_plot, gain_plot
from superb.eval.stats import PairedTest
from superb.eval.table_files import write_tables
from superb.eval.table_markdown import format_markdown
from superb.eval.view_verdicts import views_sentence
from superb.run.experiment import ExperimentResult
from superb.llm.prompts import file_records
from superb.llm.ship import ship_responses
from superb.folder import layout
from superb.folder.kinds import open_folder
from superb.folder.verify import Mismatch, as_records, note
from superb.provenance import environment, write as write_provenance
from superb.trec.runs import TIE_RULE, write_run
from superb.run.shards import file_digests
from superb.run.spec_names import check_file_names, file_name
from superb.run.stage_report import stage_line, table_notes
from superb.stage_scores import write_stage_scores
from superb.transformers.registry import plugin_records, stage_facts

USAGE_COLUMNS = ("calls", "cache_hits", "coalesced", "failures", "retries", "prompt_tokens", "completion_tokens",
                 "saved_prompt_tokens", "server_cached_tokens")


@dataclass
class Evaluation:
    perquery: pd.DataFrame  # system, view, qid, measure, value (+ Judged@10 under "full")
    table: pd.DataFrame  # superb.eval.evaluate.TABLE_COLUMNS
    measures: list  # ir_measures objects, in spec order
    info: dict  # footnote: test, correction, alpha, n_resamples, rel, views, n_queries


def evaluate(result: ExperimentResult, extra_views: tuple = ()) -> Evaluation:
    """Per-query values of every system under every view, and the significance table (pt.Experiment underneath).
    ``extra_views``: superb.eval.evaluate.View objects beyond the spec's, e.g. "filled" (superb.judges.fill.label); their
    rows are never confirmatory (a hypothesis names the spec's views only).

    Queries without a relevant document (no positive label: every measure of every system is 0 on them) are counted
    per view; with ``[evaluation] no_relevant = "drop"`` they are left out of every view's evaluation (their labels
    are removed)."""

    ev = result.spec.evaluation
    rel = ev.rel if ev.rel is not None else int(result.dataset_provenance.get("rel_threshold", 1))
    measures = ev.measures_at(rel)
    runs = {name: pr.run for name, pr in result.pipelines.items()}
    views = make_views(ev.views, result.qrels) + list(extra_views)
    empty = {v.name: no_relevant_queries(v.qrels, result.topics) for v in views}  # no positive label: all 0
    at_level = no_relevant_counts(views, result.topics, measures)  # per measure, before any query is dropped
    if ev.no_relevant == "drop":
        views = [View(v.name, v.qrels[~v.qrels["qid"].astype(str).isin(set(empty[v.name]))], v.judged_only)
                 for v in views]
    perquery = pd.concat([per_query(runs, result.topics, v, measures) for v in views], ignore_index=True)
    judged = per_query(runs, result.topics, View("full", result.qrels), [judged_measure()])
    test = PairedTest(ev.test, n_resamples=ev.n_resamples, seed=result.spec.seed)
    named = {spec_name: repr(m) for spec_name, m in zip(ev.measures, measures)}  # "P@5" -> "P(rel=2)@5"
    hypotheses = [Hypothesis(h.system, h.against, tuple(named[m] for m in h.measures), h.views, h.family, h.evidence)
                  for h in result.spec.hypotheses]
    table = significance(runs, result.topics, views, measures, families(result.spec.baselines, result.spec.comparisons),
                         test=test, correction=ev.correction, alpha=ev.alpha, perquery=perquery,
                         hypotheses=hypotheses, interval=ev.interval, n_resamples=ev.n_resamples,
                         seed=result.spec.seed, identical_by_construction=by_construction(result.spec.pipelines,
                                                                                           measures),
                         no_relevant=at_level)
    info = {"test": ev.test, "correction": ev.correction, "alpha": ev.alpha, "n_resamples": ev.n_resamples,
            "rel": rel, "views": [v.name for v in views], "n_queries": int(table["n_queries"].max()),
            "interval": ev.interval, "no_relevant": ev.no_relevant,
            "n_no_relevant": {k: len(v) for k, v in empty.items()},
            "n_no_relevant_by_measure": _by_measure(table, views[0].name if views else ""),
            "hypotheses": [{"system": h.system, "against": h.against, "measures": list(h.measures),
                            "views": list(h.views), "family": h.family, "evidence": h.evidence}
                           for h in hypotheses],
            "notes": table_notes([stage_line(name, pr.stats) for name, pr in result.pipelines.items()])}
    return Evaluation(pd.concat([perquery, judged], ignore_index=True), table, measures, info)


def _by_measure(table: pd.DataFrame, view: str) -> dict[str, int]:
    """Per measure of ``view``: the queries without a relevant document at the measure's own level (table.csv)."""
    rows = table[table["view"] == view].drop_duplicates("measure")
    return {str(m): int(k) for m, k in zip(rows["measure"], rows["n_no_relevant"])}


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
        row["requests"] = row["calls"] + row["cache_hits"] + row["coalesced"]
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


def write_results(result: ExperimentResult, out_dir: Path, *, unverified: tuple[Mismatch, ...] = ()) -> Path:
    """Evaluate ``result`` and write its results folder ``out_dir``, replacing any earlier one as a whole
    (superb.atomic: written beside it, then swapped in), so no file of an earlier run survives and a failed or
    interrupted write leaves the earlier folder as it was. Systems whose names map to one file are refused first.
    ``unverified``: input files read although they were not as their folders recorded them (``--unverified``):
    table.md says so under its heading, provenance.json lists them."""
    out_dir = Path(out_dir)
    check_file_names(list(result.pipelines))
    ev = evaluate(result)
    with replacing(out_dir) as tmp:
        _write_folder(result, ev, tmp, tuple(unverified))
    return out_dir


def _write_folder(result: ExperimentResult, ev: Evaluation, out_dir: Path, unverified: tuple[Mismatch, ...]) -> None:
    (out_dir / layout.RUNS).mkdir()
    usage = usage_frame(result)
    write_table(result, ev, usage, out_dir, unverified=note(unverified))
    usage.to_csv(out_dir / layout.USAGE, index=False)

    systems = {}
    for name, pr in result.pipelines.items():
        systems[name] = layout.run_file(file_name(name))
        write_run(pr.run, out_dir / systems[name], tag=file_name(name))
    (out_dir / layout.SYSTEMS).write_text(json.dumps(systems, indent=2), encoding="utf-8")
    write_stage_scores({name: pr.run for name, pr in result.pipelines.items()}, out_dir)
    result.qrels[["qid", "docno", "label"]].assign(it=0)[["qid", "it", "docno", "label"]].to_csv(
        out_dir / layout.QRELS, sep=" ", header=False, index=False)
    result.topics[["qid", "query"]].to_csv(out_dir / layout.TOPICS, sep="\t", header=False, index=False)
    _plots(result, ev, usage, out_dir)
    folder_complete(result, out_dir, systems, unverified)


def write_table(result: ExperimentResult, ev: Evaluation, usage: pd.DataFrame, out_dir: Path, *,
                unverified: str = "") -> None:
    """table.md (with, when there are several views, whether a conclusion changes between them), table.csv and
    perquery.csv of an evaluation; ``usage``: usage_frame's columns (or a folder's usage.csv); ``unverified``: the
    line (superb.folder.verify.note) that marks a table made from files not as recorded, under the heading."""

    usage = usage.set_index("system")
    judged = ev.perquery[ev.perquery["measure"].str.startswith("Judged")].groupby("system")["value"].mean()
    extra = usage[["requests", "cache_hits", "failures", "repaired", "fallbacks"]].join(judged.rename("judged@10"))
    extra.insert(1, "prompt_tok/q", usage["prompt_tokens_per_query"].round(0))
    if _price(result) is not None:
        extra["cost $"] = usage["est_cost_uncached_usd"]
    order = list(result.pipelines)
    sentence = views_sentence(ev.table)
    (out_dir / layout.TABLE_MD).write_text(
        f"# {result.spec.name}\n\n{result.spec.description}\n\n" + (f"{unverified}\n\n" if unverified else "")
        + format_markdown(ev.table, [repr(m) for m in ev.measures], order, ev.info, extra=extra)
        + (f"\n## Views\n\n{sentence}" if sentence else ""), encoding="utf-8")
    write_tables(ev.table, out_dir)
    power_summary(ev.table, ev.info["alpha"], ev.info["correction"]).to_csv(out_dir / layout.POWER, index=False)
    ev.perquery.to_csv(out_dir / layout.PERQUERY, index=False)


def folder_complete(result: ExperimentResult, out_dir: Path, systems: dict[str, str],
                    unverified: tuple[Mismatch, ...] = ()) -> None:
    """The last step of :func:`write_results`: every other file of the folder is written when this runs. The code's
    record (source.patch) and the LLM responses the run used (superb.llm.ship) are written, then provenance.json,
    once, with everything: the responses' summary, a shard's sha256 of its files (what `superb merge` checks) and the
    sha256 of every file (report.html is added when it is written)."""

    provenance = {
        "spec": result.spec.raw, "spec_file": str(result.spec.source) if result.spec.source else None,
        "dataset": result.dataset_provenance, "llm": result.llm_info, "timings": {**result.timings, **{
            f"pipeline:{n}": round(p.seconds, 3) for n, p in result.pipelines.items()}},
        "systems": systems, "ties": TIE_RULE,
    }
    models = system_models(result.spec, (result.llm_info or {}).get("model"))
    if models:  # per system the models its own stages used (the LLM's id, a bi-encoder's name): tables name them
        provenance["models"] = models
    given = {n: p.given_run for n, p in result.pipelines.items() if getattr(p, "given_run", None)}
    if given:  # first stages read from run files: which file, its sha256 (superb.trec.run_files)
        provenance["given_runs"] = given
    prompts = file_records(result.spec.raw)
    if prompts:  # prompt templates from the user's files: which file, its sha256, the id its requests carry
        provenance["prompt_files"] = prompts
    plugins = plugin_records(result.spec.pipelines)
    if plugins:  # stage types from outside superb: their module and its file's sha256 or package version
        provenance["plugins"] = plugins
    env = environment(out_dir)  # packages, project (commit, dirty, diff), host; source.patch when dirty
    provenance["responses"] = ship_responses(result, out_dir)  # the LLM answers used: the folder re-derives anywhere
    if getattr(result, "sharding", None):  # a shard of a run, or a merge of shards (superb/run/shards.py, merge.py)
        provenance["sharding"] = dict(result.sharding)
        if "shard" in result.sharding:  # what `superb merge` checks the shard's files against
            provenance["sharding"]["sha256"] = file_digests(out_dir)
    if unverified:
        provenance["unverified"] = as_records(unverified)
    write_provenance(out_dir, provenance, environment_of=env, hash_files=True)


def system_models(spec: Any, llm_model: str | None) -> dict[str, str]:
    """system -> the models its own stages used, joined by "; ": the LLM's model id for a stage that calls it, a stage
    class's own ``model_name`` (the bi-encoder's) for one that declares it; systems without a model are left out."""
    out = {}
    for p in spec.pipelines:
        found: list[str] = []
        if isinstance(p.first_stage, dict) and "expand" in p.first_stage and llm_model:
            found.append(llm_model)
        for i, stage in enumerate(p.rerank):
            facts = stage_facts(stage.get("type"), f"{p.path}.rerank[{i}]")
            model = llm_model if facts.calls_llm else facts.model
            if model and model not in found:
                found.append(model)
        if found:
            out[p.name] = "; ".join(found)
    return out


def _plots(result: ExperimentResult, ev: Evaluation, usage: pd.DataFrame, out_dir: Path) -> None:
    """Cost plot and per-query gain plots (nDCG@10 under the first view), only where there is a reranker or a
    baseline to gain over."""

    first = ev.perquery[ev.perquery["view"] == result.spec.evaluation.views[0]]
    ndcg = first[first["measure"] == "nDCG@10"].groupby("system")["value"].mean()
    if ndcg.empty:
        return
    reranked = [p.name for p in result.spec.pipelines if p.rerank]
    if reranked:
        pts = cumulative_cost(result.spec.pipelines, usage).loc[reranked]
        cost_plot(pts.join(ndcg.rename("ndcg10")).reset_index(), out_dir / layout.COST_PLOT)
    for p in result.spec.pipelines:
        if p.baseline:
            gain_plot(first, p.name, p.baseline, "nDCG@10", out_dir / layout.gain_plot(file_name(p.name)))


def cumulative_cost(pipelines, usage: pd.DataFrame) -> pd.DataFrame:
    """Requests and prompt tokens per query of each system WITH its inputs (``input`` chains), indexed by system: what
    running the system alone costs. A fusion row makes no call of its own, yet costs the LLM stages it fuses."""
    own = usage.set_index("system")[["calls_per_query", "prompt_tokens_per_query"]]
    inputs = {p.name: p.input for p in pipelines}
    out = own.copy()
    for name in own.index:
        parent = inputs.get(name)
        while parent is not None and parent in own.index:
            out.loc[name] += own.loc[parent]
            parent = inputs.get(parent)
    return out


def read_table(result_dir: Path) -> pd.DataFrame:
    """The table of a run's results folder, every view, measures under their spec names, each file checked against
    its recorded sha256 (superb.folder)."""
    return open_folder(result_dir).tables()
