"""How far a LIVE re-run of experiments/quickstart.toml drifts from the committed results/quickstart (embedded 1.5B).

    python bench/drift.py run [--settings t2-cache,t1-cache,...] [--work /tmp/superb-drift]   # minutes per setting
    python bench/drift.py report [--work /tmp/superb-drift]   # writes results/bench/drift.md and drift.csv

A setting is llama.cpp threads (1 or 2) x the server's prompt cache (on: the KV of the previous request's common
prefix is reused; off: every prompt evaluated from scratch). A setting name may end in "-repeat" (a second run of the
same setting, to see whether one setting reproduces itself). Each run gets its own SUPERB_HOME, so no answer comes from
a response cache: the home holds only symlinks to the joined model files (and data/indexes when present) of the
normal home. The spec is the quickstart's with an [llm] table of the setting added; SUPERB_EMBEDDED_URL is unset.

Compared, against the committed folder and between settings: P(yes) of every pointwise request (renormalised over
yes/no, as the reranker reads it, matched by cache key: same prompt), the listwise-lik first-letter distribution
(largest absolute difference of a letter's probability), and the per-query nDCG@10 and P(rel=2)@5 of both rerankers
(largest absolute difference over queries, and the difference of the mean).
"""

from __future__ import annotations

from superb.provenance import record_bench

import argparse
import csv
import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "experiments" / "quickstart.toml"
COMMITTED = ROOT / "results" / "quickstart"
OUT = ROOT / "results" / "bench"
SETTINGS = ("t2-cache", "t2-cache-repeat", "t1-cache", "t2-nocache", "t2-nocache-repeat", "t1-nocache")
MEASURES = ("nDCG@10", "P(rel=2)@5")
RERANKERS = ("BM25 >> pointwise", "BM25 >> listwise-lik")


def parse_setting(name: str) -> dict:
    base = name.removesuffix("-repeat")
    threads, cache = base.split("-", 1)
    if not threads.startswith("t") or not threads[1:].isdigit() or cache not in ("cache", "nocache"):
        raise SystemExit(f"setting {name!r}: expected t<threads>-cache or t<threads>-nocache (optionally -repeat)")
    return {"threads": int(threads[1:]), "prompt_cache": cache == "cache"}


def run_setting(name: str, work: Path) -> dict:
    """One live run of the quickstart in a fresh SUPERB_HOME; returns its wall time and LLM usage."""
    setting = parse_setting(name)
    where = work / name
    home, out = where / "home", where / "out"
    if (out / "provenance.json").is_file():
        print(f"{name}: already run ({out}); delete it to run again", flush=True)
        return json.loads((where / "timing.json").read_text())
    home.mkdir(parents=True, exist_ok=True)
    normal = Path(os.environ.get("SUPERB_HOME") or Path.home() / ".cache" / "superb")
    for sub in ("models", "data", "indexes"):
        if (normal / sub).exists() and not (home / sub).exists():
            (home / sub).symlink_to((normal / sub).resolve())
    spec = where / "quickstart.toml"
    spec.write_text(SPEC.read_text(encoding="utf-8") + "\n[llm]\nthreads = %d\nprompt_cache = %s\n"
                    % (setting["threads"], "true" if setting["prompt_cache"] else "false"), encoding="utf-8")
    env = {**os.environ, "SUPERB_HOME": str(home)}
    env.pop("SUPERB_EMBEDDED_URL", None)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "superb.cli", "run", str(spec), "--out", str(out)], env=env,
                          cwd=ROOT)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{name}: superb run exited {done.returncode}")
    usage = json.loads((out / "provenance.json").read_text())["llm"].get("usage_total", {})
    record = {"setting": name, **setting, "seconds": round(seconds, 1), "calls": usage.get("calls"),
              "cache_hits": usage.get("cache_hits"), "prompt_tokens": usage.get("prompt_tokens"),
              "server_cached_tokens": usage.get("server_cached_tokens")}
    (where / "timing.json").write_text(json.dumps(record, indent=2))
    print(json.dumps(record), flush=True)
    return record


# --- reading answers ------------------------------------------------------------------------------------------------
def _answers(rows) -> dict:
    """P(yes) per pointwise key and the first-letter distribution per listwise key, from (key, template, logprobs)
    rows (logprobs as [[token, logprob, {alternative: logprob}], ...])."""
    from superb.llm.parsing import YES_NO_TOKENS, first_distribution
    from superb.llm.types import TokenLogprob

    p_yes, letters = {}, {}
    for key, template, raw in rows:
        logprobs = tuple(TokenLogprob(t, lp, dict(top)) for t, lp, top in raw or ())
        if template.startswith("pointwise_yesno"):
            dist, _ = first_distribution(logprobs, YES_NO_TOKENS)
            p_yes[key] = math.nan if dist is None else dist.get(True, 0.0)
        elif logprobs:
            letters[key] = {tok: math.exp(lp) for tok, lp in logprobs[0].top.items()}
    return {"p_yes": p_yes, "letters": letters}


def read_folder(folder: Path) -> dict:
    """A finished results folder: its shipped answers and its per-query measures."""
    from superb.llm.ship import read_lines

    rows = (json.loads(line) for _, _, line in read_lines(folder / "responses.jsonl.gz") if line.strip())
    data = _answers((r["key"], r["template"], r.get("logprobs")) for r in rows)
    measures = {}
    with open(folder / "perquery.csv", newline="") as f:
        for r in csv.DictReader(f):
            if r["view"] == "full" and r["measure"] in MEASURES and r["system"] in RERANKERS:
                measures[(r["system"], r["measure"], r["qid"])] = float(r["value"])
    return {**data, "measures": measures}


def read_home(home: Path) -> dict:
    """A run still going (or cut short): the answers its own response cache holds so far; no measures."""
    import sqlite3

    db = home / "llm-cache.sqlite"
    if not db.is_file():
        return {"p_yes": {}, "letters": {}, "measures": {}, "latency": {}}
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        rows = conn.execute("SELECT key, template, logprobs, latency_s, prompt_tokens FROM responses").fetchall()
    data = _answers((k, t, json.loads(lp) if lp else None) for k, t, lp, _, _ in rows)
    latency = {t: [] for _, t, _, _, _ in rows}
    for _, t, _, sec, _ in rows:
        latency[t].append(sec)
    return {**data, "measures": {}, "latency": latency}


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else math.nan


def _largest(a: dict, b: dict) -> tuple[float, int]:
    shared = [k for k in a if k in b and not (math.isnan(a[k]) or math.isnan(b[k]))]
    return (max((abs(a[k] - b[k]) for k in shared), default=math.nan), len(shared))


def compare(name_a: str, a: dict, name_b: str, b: dict) -> dict:
    row = {"a": name_a, "b": name_b}
    row["max_dP(yes)"], row["n_P(yes)"] = _largest(a["p_yes"], b["p_yes"])
    row["P(yes)_identical"] = sum(a["p_yes"][k] == b["p_yes"].get(k) for k in a["p_yes"])
    diffs = [max(abs(a["letters"][k].get(t, 0.0) - b["letters"][k].get(t, 0.0))
                 for t in set(a["letters"][k]) | set(b["letters"][k]))
             for k in a["letters"] if k in b["letters"]]
    row["max_dP(letter)"] = max(diffs, default=math.nan)
    for system in RERANKERS:
        short = system.split(">> ")[1]
        for measure in MEASURES:
            keys = [k for k in a["measures"] if k[0] == system and k[1] == measure and k in b["measures"]]
            per_q = [abs(a["measures"][k] - b["measures"][k]) for k in keys]
            mean_a = sum(a["measures"][k] for k in keys) / len(keys) if keys else math.nan
            mean_b = sum(b["measures"][k] for k in keys) / len(keys) if keys else math.nan
            row[f"{short} {measure} max per query"] = max(per_q, default=math.nan)
            row[f"{short} {measure} mean diff"] = mean_b - mean_a
    return row


def report(work: Path) -> None:
    data = {"committed": read_folder(COMMITTED)}
    timings = []
    for name in SETTINGS:
        if (work / name / "out" / "provenance.json").is_file():
            data[name] = read_folder(work / name / "out")
            latency = read_home(work / name / "home")["latency"]
            timings.append({**json.loads((work / name / "timing.json").read_text()),
                            "pointwise_answers": len(data[name]["p_yes"]),
                            "median_pointwise_latency_s": _median(
                                [v for t, vs in latency.items() if t.startswith("pointwise") for v in vs])})
        elif (work / name / "home").is_dir():
            data[name] = read_home(work / name / "home")  # partial: the answers so far
            timings.append({"setting": name, **parse_setting(name), "seconds": None, "calls": None,
                            "prompt_tokens": None, "server_cached_tokens": None, "partial": True,
                            "pointwise_answers": len(data[name]["p_yes"]),
                            "median_pointwise_latency_s": _median(
                                [v for t, vs in data[name]["latency"].items() if t.startswith("pointwise")
                                 for v in vs])})
    names = list(data)
    rows = [compare(a, data[a], b, data[b]) for i, a in enumerate(names) for b in names[i + 1:]]
    OUT.mkdir(parents=True, exist_ok=True)
    with open(OUT / "drift.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        for r in rows:
            writer.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in r.items()})
    with open(OUT / "drift_runs.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=sorted({k for t in timings for k in t}))
        writer.writeheader()
        writer.writerows(timings)
    order_file = OUT / "drift_order.json"
    order = json.loads(order_file.read_text()) if order_file.is_file() else None
    match_file = OUT / "drift_match.json"
    match = json.loads(match_file.read_text()) if match_file.is_file() else None
    (OUT / "drift.md").write_text(markdown(rows, timings, order, match), encoding="utf-8")
    record_bench(OUT, [OUT / "drift.md", *OUT.glob("drift_*.csv")], "drift")  # superb.provenance
    print((OUT / "drift.md").read_text())


def _f(v: float, digits: int = 4) -> str:
    return "" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.{digits}f}"


def markdown(rows: list[dict], timings: list[dict], order: list[dict] | None, match: dict | None) -> str:
    lines = ["# Live re-run drift of the quickstart (embedded Qwen2.5-Coder-1.5B, llama.cpp via xllamacpp)", "",
             "Written by `python bench/drift.py report` from live runs of experiments/quickstart.toml, each in a "
             "fresh SUPERB_HOME (no response cache), against the committed results/quickstart (threads 2, prompt "
             "cache on) and against each other. Settings: tN = llama.cpp threads; cache / nocache = the server's "
             "prompt cache (`[llm] prompt_cache`). P(yes): the pointwise score of each (query, product) request, "
             "matched by prompt (cache key); 'identical' counts bit-identical values. P(letter): the listwise-lik "
             "first-letter probabilities. nDCG@10 and P(rel=2)@5: per query over the 5 queries (full view), only "
             "between finished runs. A run cut short (see the cost table) is compared on the requests it answered.",
             "",
             "| a | b | shared P(yes) | identical | max dP(yes) | max dP(letter) | pointwise nDCG@10 max/q | "
             "pointwise nDCG@10 mean diff | pointwise P@5 max/q | listwise nDCG@10 max/q | listwise P@5 max/q |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        if not r["n_P(yes)"] and not r["a"] == "committed":
            continue
        lines.append("| " + " | ".join([
            r["a"], r["b"], str(r["n_P(yes)"]), str(r["P(yes)_identical"]), _f(r["max_dP(yes)"], 4),
            _f(r["max_dP(letter)"], 4), _f(r["pointwise nDCG@10 max per query"]),
            _f(r["pointwise nDCG@10 mean diff"]), _f(r["pointwise P(rel=2)@5 max per query"]),
            _f(r["listwise-lik nDCG@10 max per query"]),
            _f(r["listwise-lik P(rel=2)@5 max per query"])]) + " |")
    lines += ["", "Runs. The machine was shared with other jobs (load ~20 on 2 cores, changing during the runs), "
              "so a run cut short is compared on the requests it answered, and seconds are not a cost measure here; "
              "the prompt tokens are (with the prompt cache off, every prompt token is evaluated):", "",
              "| setting | threads | prompt cache | finished | pointwise answers | median s per pointwise request | "
              "prompt tokens | of them served by the prompt cache |",
              "|---|---:|---|---|---:|---:|---:|---:|"]
    for t in timings:
        lines.append(f"| {t['setting']} | {t['threads']} | {'on' if t['prompt_cache'] else 'off'} | "
                     f"{'no (cut short)' if t.get('partial') else 'yes'} | {t.get('pointwise_answers', '')} | "
                     f"{_f(t.get('median_pointwise_latency_s', math.nan), 2)} | {t.get('prompt_tokens') or ''} | "
                     f"{t.get('server_cached_tokens') or ''} |")
    if order:
        lines += ["", "The prompt cache in isolation (`python bench/drift.py order`): the same pointwise requests sent "
                  "to one fresh server in one order and then in the reverse order; P(yes) of each request compared "
                  "between the two orders.", "",
                  "| model | threads | prompt cache | requests | seconds | max dP(yes) between orders | identical |",
                  "|---|---:|---|---:|---:|---:|---:|"]
        for o in order:
            lines.append(f"| {o['model']} | {o['threads']} | {'on' if o['prompt_cache'] else 'off'} | "
                         f"{o['requests']} | {o['seconds']} | {_f(o['max_dP(yes) between orders'], 4)} | "
                         f"{o['identical']} of {o['of']} |")
    if match:
        lines += ["", f"Threads and history (`python bench/drift.py match`): {match['requests']} pointwise requests that "
                  f"the live run {match['against']} answered, sent to a fresh server with {match['threads']} "
                  f"thread(s) and the prompt cache {'on' if match['prompt_cache'] else 'off'}, in another order: "
                  f"max dP(yes) {_f(match['max_dP(yes)'], 4)}, identical {match['identical']} of {match['of']} "
                  f"({match['seconds']} s)."]
    return "\n".join(lines) + "\n"


def order_probe(n: int = 5, model: str = "1.5b", threads: int = 2) -> list[dict]:
    """The prompt cache's effect in isolation: the first ``n`` committed pointwise requests of the shipped file (sorted
    by key, so from several queries: they share the instructions as a prefix) sent to one fresh server in that order and then reversed, with the prompt
    cache on and off; P(yes) of each request compared between the two orders. No response cache is involved."""
    from superb.llm.model import resolve_model
    from superb.llm.server import EmbeddedServer
    from superb.llm.ship import read_lines

    rows = [json.loads(line) for _, _, line in read_lines(COMMITTED / "responses.jsonl.gz") if line.strip()]
    rows = [r for r in rows if r["template"].startswith("pointwise_yesno")][:n]
    path = resolve_model(model, None)

    out = []
    for cache in (True, False):
        with EmbeddedServer(path, "probe", threads=threads, prompt_cache=cache) as server:
            start = time.perf_counter()
            forward = [_ask(server.base_url, r["request"]) for r in rows]
            backward = [_ask(server.base_url, r["request"]) for r in reversed(rows)][::-1]
            seconds = time.perf_counter() - start
        diffs = [abs(a - b) for a, b in zip(forward, backward)]
        out.append({"model": model, "threads": threads, "prompt_cache": cache, "requests": 2 * len(rows),
                    "seconds": round(seconds, 1), "max_dP(yes) between orders": max(diffs),
                    "identical": sum(d == 0.0 for d in diffs), "of": len(diffs)})
        print(json.dumps(out[-1]), flush=True)
    (OUT / "drift_order.json").write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    return out


def match_probe(work: Path, against: str = "t2-nocache", n: int = 5, threads: int = 1,
                prompt_cache: bool = False, model: str = "1.5b") -> dict:
    """Determinism across threads and history: ``n`` pointwise requests that the live run ``against`` already
    answered, sent to a fresh server with ``threads`` and ``prompt_cache``, in reverse key order (another order and
    another history than that run's); P(yes) compared by request with that run's answers."""
    from superb.llm.model import resolve_model
    from superb.llm.server import EmbeddedServer
    from superb.llm.ship import read_lines

    done = read_home(work / against / "home")["p_yes"]
    rows = [json.loads(line) for _, _, line in read_lines(COMMITTED / "responses.jsonl.gz") if line.strip()]
    rows = [r for r in rows if r["template"].startswith("pointwise_yesno") and r["key"] in done][:n][::-1]
    values = {}
    with EmbeddedServer(resolve_model(model, None), "probe", threads=threads, prompt_cache=prompt_cache) as server:
        start = time.perf_counter()
        for r in rows:
            values[r["key"]] = _ask(server.base_url, r["request"])
        seconds = time.perf_counter() - start
    diffs = [abs(values[k] - done[k]) for k in values]
    out = {"model": model, "threads": threads, "prompt_cache": prompt_cache, "against": against,
           "requests": len(rows), "seconds": round(seconds, 1), "max_dP(yes)": max(diffs),
           "identical": sum(d == 0.0 for d in diffs), "of": len(diffs), "p_yes": values}
    (OUT / "drift_match.json").write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(out), flush=True)
    return out


def _ask(url: str, request: dict) -> float:
    import urllib.request

    from superb.llm.parsing import YES_NO_TOKENS, first_distribution
    from superb.llm.types import TokenLogprob

    body = {"model": "probe", "messages": [{"role": m[0], "content": m[1]} for m in request["messages"]],
            "max_tokens": 1, "temperature": 0.0, "seed": 0, "logprobs": True, "top_logprobs": 20}
    req = urllib.request.Request(f"{url}/chat/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=3600) as answer:  # noqa: S310 - local server
        content = json.loads(answer.read())["choices"][0]["logprobs"]["content"]
    logprobs = tuple(TokenLogprob(t["token"], t["logprob"], {a["token"]: a["logprob"] for a in t["top_logprobs"]})
                     for t in content)
    dist, _ = first_distribution(logprobs, YES_NO_TOKENS)
    return math.nan if dist is None else dist.get(True, 0.0)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("action", choices=("run", "report", "order", "match"))
    parser.add_argument("--n", type=int, default=5, help="order: requests per order")
    parser.add_argument("--settings", default=",".join(SETTINGS))
    parser.add_argument("--work", default="/tmp/superb-drift", type=Path)
    args = parser.parse_args(argv)
    if args.action == "match":
        match_probe(args.work, n=args.n)
        return
    if args.action == "order":
        order_probe(args.n)
        return
    if args.action == "run":
        for name in args.settings.split(","):
            run_setting(name, args.work)
    report(args.work)


if __name__ == "__main__":
    main()
