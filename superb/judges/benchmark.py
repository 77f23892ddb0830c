"""Build a SUPERB-style benchmark from a data set: superlative rewrites of its queries, candidates pooled from a
first stage, graded 0..3 by an LLM judge (deliberated pointwise by default, as in SUPERB).

Steps:
1. rewrite: one LLM call per source query (template ``judge_superlative``): "trail running shoes" -> "best shoes
   for trail running" (same product need). The first non-empty line of the answer, quotes and an echoed
   "search:"/"->" prefix removed. FALLBACK (counted as ``rewrite_fallback``): a failed call or an empty/overlong
   answer (> 3x the source length + 40 characters) gives "best " + the source query.
2. pool: the top ``depth`` products of a first stage (``superb.pipelines.first_stage``, BM25 by default) for the
   SOURCE query (``pool_query="source"``; the superlative adds words such as "best" that only add noise to BM25), the
   rewrite (``"rewrite"``), or the union of both (``"both"``, source hits first, duplicates once).
3. judge: every pooled (rewritten query, product) pair with ``superb.judges.registry.build_judge(judge_options)``,
   a judge that gives labels (default: deliberated, its written grade).

Output folder (loadable with ``superb.data.load_dataset(load_config(folder))``, the "local" loader):
  queries.tsv     qid <TAB> superlative query (qid = source qid + "-best")
  qrels.trec      the judge's labels
  docs.jsonl      docs="copy": the pooled products only (docno and the source data set's fields) - a pool-only
                  corpus; the full corpus stays with the source data set, named in provenance.json
  docnos.txt      docs="reference": the pooled docnos only, one a line, so that no product text is copied (a
                  benchmark to commit); :func:`materialize_docs` writes docs.jsonl from the source data set later
  rewrites.tsv    qid, source_qid, source_query, query, status (ok | fallback)
  judgments.jsonl one Judgment record per pair
  provenance.json source data set (config and provenance), model, template ids, pool settings, counts, stats
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from superb.errors import DataError, SpecError
from superb.judges.records import as_judgments
from superb.judges.registry import build_judge
from superb.llm.runner import run_all
from superb.judges.records import status_counts, write_jsonl, write_qrels_trec
from superb.llm.prompts import load_template
from superb.llm.types import ChatRequest
from superb.pipelines import first_stage
from superb.provenance import write as write_provenance
from superb.folder import layout

POOL_QUERIES = ("source", "rewrite", "both")
QID_SUFFIX = "-best"


def clean_rewrite(text: str | None, source: str) -> str | None:
    """The rewritten query from a model answer, or None when nothing usable came back."""
    for line in (text or "").splitlines():
        line = line.strip().strip("-*` ").strip()
        if not line:
            continue
        low = line.lower()
        for prefix in ("rewritten search:", "rewrite:", "search:", "answer:"):
            if low.startswith(prefix):
                line = line[len(prefix):].strip()
                low = line.lower()
        if "->" in line:
            line = line.split("->")[-1].strip()
        line = line.strip("\"'\u201c\u201d ").strip()
        if not line or len(line) > 3 * len(source) + 40:
            return None
        return line
    return None


def rewrite_queries(llm: Any, topics: pd.DataFrame, template: Any = "judge_superlative",
                    stats: Counter | None = None) -> pd.DataFrame:
    """qid (source qid + "-best"), source_qid, source_query, query, status for every topic (see module docstring)."""
    stats = stats if stats is not None else Counter()
    template = load_template(template)

    async def one(query: str):
        req = ChatRequest.chat(None, template.render(query=query), template=template.id, max_tokens=32,
                               temperature=0.0, tag="judge:superlative")
        return await llm.acomplete(req)

    completions = run_all(llm, [one(q) for q in topics["query"]])
    rows = []
    for qid, query, c in zip(topics["qid"].astype(str), topics["query"], completions):
        stats["rewrite_calls"] += 1
        text = None if c.failed else clean_rewrite(c.text, query)
        if text is None:
            stats["rewrite_fallback"] += 1
            stats["rewrite_failed_calls" if c.failed else "rewrite_unusable"] += 1
        rows.append((qid + QID_SUFFIX, qid, query, text or f"best {query}", "ok" if text else "fallback"))
    return pd.DataFrame(rows, columns=["qid", "source_qid", "source_query", "query", "status"])


def pool_candidates(retriever: Any, rewrites: pd.DataFrame, pool_query: str = "source") -> pd.DataFrame:
    """qid, query (the rewrite), docno: products the retriever returns for the source query and/or the rewrite."""
    if pool_query not in POOL_QUERIES:
        raise ValueError(f"pool_query={pool_query!r}; choose one of {list(POOL_QUERIES)}")
    hits = []
    if pool_query in ("source", "both"):
        src = retriever(pd.DataFrame({"qid": rewrites["qid"], "query": rewrites["source_query"]}))
        hits.append(src[["qid", "docno", "rank"]].assign(order=0))
    if pool_query in ("rewrite", "both"):
        rew = retriever(pd.DataFrame({"qid": rewrites["qid"], "query": rewrites["query"]}))
        hits.append(rew[["qid", "docno", "rank"]].assign(order=1))
    pool = pd.concat(hits, ignore_index=True).sort_values(["qid", "order", "rank"], kind="stable")
    pool = pool.drop_duplicates(["qid", "docno"])
    pool = pool.merge(rewrites[["qid", "query"]], on="qid", how="left")
    return pool[["qid", "query", "docno"]].reset_index(drop=True)


def load_config(folder: str | Path, fields: list[str] | None = None) -> dict:
    """The ``superb.data.load_dataset`` config of a benchmark folder (read from its provenance.json)."""
    folder = Path(folder)
    prov = json.loads((folder / layout.PROVENANCE).read_text(encoding="utf-8"))
    if not (folder / "docs.jsonl").is_file():
        raise DataError(f"{folder}/docs.jsonl does not exist: the benchmark references the products of its source "
                        f"data set ({prov['source_dataset']['config']}); write them with "
                        f"superb.judges.benchmark.materialize_docs({str(folder)!r})")
    return {"name": "local", "docs": str(folder / "docs.jsonl"), "queries": str(folder / "queries.tsv"),
            "qrels": str(folder / layout.QRELS), "fields": fields or prov["fields"],
            "rel_threshold": prov["rel_threshold"], "labels": prov["labels"]}


def write_docs(dataset: Any, docnos, path: str | Path) -> int:
    """docs.jsonl of ``docnos`` (docno, the data set's fields, text) from ``dataset``; returns the number written."""
    fields = list(dataset.fields)
    n = 0
    with open(path, "w", encoding="utf-8") as out:
        for docno in docnos:
            doc = dataset.doc(docno)
            out.write(json.dumps({"docno": docno, **{f: doc.get(f, "") for f in fields}, "text": doc.get("text", "")},
                                 ensure_ascii=False) + "\n")
            n += 1
    return n


def materialize_docs(folder: str | Path, dataset: Any = None) -> Path:
    """Write docs.jsonl of a docs="reference" benchmark from its source data set (loaded from provenance.json's
    config unless given), so that :func:`load_config` works; returns its path."""
    folder = Path(folder)
    if dataset is None:
        from superb.data import load_dataset

        prov = json.loads((folder / layout.PROVENANCE).read_text(encoding="utf-8"))
        dataset = load_dataset(prov["source_dataset"]["config"], path="source_dataset.config")
    docnos = [line.strip() for line in (folder / "docnos.txt").read_text(encoding="utf-8").splitlines()
              if line.strip()]
    write_docs(dataset, docnos, folder / "docs.jsonl")
    return folder / "docs.jsonl"


def build_benchmark(dataset: Any, llm: Any, out_dir: str | Path, *, topics: pd.DataFrame | None = None,
                    depth: int = 10, engine: str = "terrier", model: str = "bm25", pool_query: str = "source",
                    judge_options: Mapping[str, Any] | None = None, retriever: Any = None,
                    dataset_config: Mapping[str, Any] | None = None, rel_threshold: int = 2,
                    docs: str = "copy") -> dict:
    """Rewrite, pool, judge and write the folder; returns {"folder", "load_config" (None with docs="reference"),
    "counts", "stats"}.
    ``topics`` (qid, query) defaults to all of the data set's topics; ``retriever`` defaults to
    ``first_stage(dataset, engine=engine, model=model, depth=depth)``. ``rel_threshold`` is that of the new labels
    (default 2: "almost best" or better counts as relevant for binary measures). ``docs``: "copy" writes the pooled
    products to docs.jsonl, "reference" only their docnos to docnos.txt (see the module docstring)."""
    if docs not in ("copy", "reference"):
        raise ValueError(f"docs={docs!r}; choose \"copy\" (docs.jsonl) or \"reference\" (docnos.txt)")
    if not isinstance(depth, int) or depth < 1:
        raise ValueError(f"depth must be a positive integer, got {depth!r}")
    if pool_query not in POOL_QUERIES:
        raise ValueError(f"pool_query={pool_query!r}; choose one of {list(POOL_QUERIES)}")
    topics = dataset.topics() if topics is None else topics
    if topics.empty:
        raise ValueError("no topics to rewrite: the topic frame is empty")
    judge_options = dict(judge_options or {"type": "deliberated"})
    judge = build_judge(label_judge_options(judge_options), llm=llm, dataset=dataset, path="judge")
    if judge.output != "label":
        raise SpecError("benchmark.judge", f"a benchmark's judge writes labels, and {judge!r} gives a score to be "
                                           "calibrated; read its written grade (reading = \"grade\")")
    custom_retriever = retriever is not None
    if retriever is None:
        retriever = first_stage(dataset, engine=engine, model=model, depth=depth)
    stats: Counter = Counter()
    rewrites = rewrite_queries(llm, topics, stats=stats)
    pool = pool_candidates(retriever, rewrites, pool_query)
    stats["queries_without_candidates"] = int((~rewrites["qid"].isin(set(pool["qid"]))).sum())
    if pool.empty:
        raise DataError(f"the first stage found no candidates for any of the {len(rewrites)} queries; check the "
                        f"data set's index and pool_query={pool_query!r}")
    records = as_judgments(judge.score_records(pool), judge.default_label)

    folder = Path(out_dir)
    folder.mkdir(parents=True, exist_ok=True)
    kept = rewrites[rewrites["qid"].isin(set(pool["qid"]))]
    with open(folder / "queries.tsv", "w", encoding="utf-8") as out:
        for qid, query in zip(kept["qid"], kept["query"]):
            out.write(f"{qid}\t{' '.join(str(query).split())}\n")
    rewrites.to_csv(folder / "rewrites.tsv", sep="\t", index=False)
    write_qrels_trec(records, folder / layout.QRELS)
    write_jsonl(records, folder / "judgments.jsonl")
    fields = list(dataset.fields)
    if docs == "copy":
        write_docs(dataset, pd.unique(pool["docno"]), folder / "docs.jsonl")
    else:
        (folder / "docnos.txt").write_text("".join(f"{d}\n" for d in pd.unique(pool["docno"])), encoding="utf-8")
    labels = Counter(j.label for j in records)
    counts = {"source_queries": len(topics), "queries": len(kept), "pooled_pairs": len(pool),
              "docs": int(pool["docno"].nunique()), "judgments": len(records),
              "labels": {str(k): labels.get(k, 0) for k in judge.labels}, "status": status_counts(records)}
    provenance = {
        "kind": "superb-benchmark",
        "source_dataset": {"config": dict(dataset_config or {"name": dataset.name}),
                           "provenance": _jsonable(dataset.provenance())},
        "model": getattr(llm, "model", None),
        "templates": {"rewrite": load_template("judge_superlative").id, **judge.template_ids()},
        "judge": {"options": judge_options, "stats": dict(judge.stats), "ideals": getattr(judge, "ideals", None)},
        "pool": {"engine": None if custom_retriever else engine, "model": None if custom_retriever else model,
                 "depth": depth, "pool_query": pool_query, "retriever": repr(retriever)}, "docs": docs,
        "fields": fields, "rel_threshold": int(rel_threshold), "labels": list(judge.labels),
        "counts": counts, "stats": dict(stats),
    }

    write_provenance(folder, provenance)  # + packages, project (commit, dirty, diff), host
    return {"folder": str(folder), "load_config": load_config(folder) if docs == "copy" else None, "counts": counts,
            "stats": dict(stats)}


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


def label_judge_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """A benchmark's judge writes its labels: a pointwise or deliberated judge reads its written grade unless the
    options name another reading (which must give labels too: "grade" or "written"); a pointwise one asks
    pointwise_best_product unless they name a template."""
    out = dict(options)
    if out.get("type", "pointwise") in ("pointwise", "deliberated") and "preset" not in out:
        out.setdefault("reading", "grade")
        if out.get("type", "pointwise") == "pointwise":
            out.setdefault("template", "pointwise_best_product")  # "is it the product itself" (SUPERB's grades)
    return out
