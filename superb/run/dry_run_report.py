"""What `superb run --dry-run` prints: the calls each system would make, whether the count is exact, their time at
the cache's recorded pace, and the systems a dry run does not run (superb.run.preflight.needed)."""

from __future__ import annotations

from superb.llm.pace import time_line


def dry_run_report(result) -> str:
    """The dry run's count per system, and whether it is exact: a system whose rerankers choose their next question
    from the answers (setwise heap, pairwise sort or sliding) gets none in a dry run, so its count is an estimate: the
    path its placeholder answers take, which the real answers may make shorter or longer (on DL19, setwise heap top 20
    counted 1,591 calls dry and made 861 live: a model that mostly picks the first item stops every sift early)."""
    from superb.run.results import usage_frame

    usage = usage_frame(result)
    adaptive = [name for name, pr in result.pipelines.items() if pr.calls_depend_on_answers]
    usage["count"] = ["estimate" if s in adaptive and c else "exact" if c else "" for s, c in
                      zip(usage["system"], usage["calls"])]
    ceiling = {name: pr.max_calls for name, pr in result.pipelines.items()}
    usage["at_most"] = [("-" if ceiling.get(s) is None else str(ceiling[s])) if s in adaptive else ""
                        for s in usage["system"]]
    lines = [usage[["system", "calls", "cache_hits", "prompt_tokens", "count", "at_most"]].to_string(index=False)]
    cache = (result.llm_info or {}).get("cache")
    where = f"the response cache {cache['path']}" if cache else "no response cache (absent, off or refresh)"
    bounded = int(usage.loc[usage["count"] == "estimate", "calls"].sum())
    total = int(usage["calls"].sum())
    lines.append(f"dry run: {'about ' if bounded else ''}{total} calls the real run would make (prompt tokens "
                 f"estimated), {int(usage['cache_hits'].sum())} requests served by {where}; nothing was called or "
                 "written")
    lines.append(time_line(int(usage["prompt_tokens"].sum()), result.llm_info or {}))
    if bounded:
        most = [ceiling.get(s) for s in usage.loc[usage["count"] == "estimate", "system"]]
        bound = (f"; whatever the answers, those systems make at most {sum(most)} requests (column at_most: each "
                 "stage's worst case per query, from its algorithm, over these queries; the cache may serve some)"
                 if None not in most else "; a stage of those systems declares no worst case (at_most '-')")
        lines.append(f"{bounded} of them are an estimate: a reranker of those systems chooses its next question from "
                     "the answers, which a dry run does not have, so the real count may be lower or higher (each "
                     f"strategy's bounds: docs/spec.md; bench/rerankers.py counts them on valid answers){bound}")
    skipped = [name for name, pr in result.pipelines.items() if pr.not_run]
    if skipped:
        lines.append(f"not run: {', '.join(skipped)} (no LLM stage reads {'them' if len(skipped) > 1 else 'it'}, "
                     "and a dry run only counts calls)")
    unjudged = result.query_checks.get("selected_queries_without_qrels", 0)
    if unjudged:
        done = ("not run ([queries] unjudged = \"skip\"): no call counted for them"
                if result.query_checks.get("unjudged_queries") == "skip" else
                "run ([queries] unjudged = \"run\"): their calls are counted above, their scores not evaluated")
        lines.append(f"{unjudged} selected queries have no relevance labels: {done}")
    return "\n".join(lines)
