"""The pool of a judge spec: which (query, document) pairs the judges label, and what was left out.

``[pool] source``:

- ``"qrels"``: the judged pairs of the selected queries; ``"ratings"``: the pairs with individual ratings (Chorus);
  ``"first_stage"``: a first stage's ranking (no human label needed).
- Only pairs whose document the data set holds text for can be judged: a TREC collection's qrels judge passages far
  outside any candidate list (TREC DL 2019: 9,260 judged pairs, text for 2,257 in BM25's top 100, 3,834 with every
  first stage of ``[dataset] first_stages``). The others are LEFT OUT and counted per label (``PoolCounts``, written
  to pool_coverage.csv and named in the folder's agreement.md), never an error.
- ``sample = N`` (with ``seed``): a seeded, label-stratified sample of N of those pairs: each label gets its share of
  N in proportion to its pairs (largest remainders, ties to the lower label), drawn uniformly within the label, so the
  sample keeps the label distribution of the pairs with text. ``per_query = N``: at most N pairs per query instead.
- ``[label_study] depth = D``: the pooled top D of every label-study system joins the pool (UMBRELA's study: LLM
  labels for every document the orderings at depth D look at, judged or not).

The pool comes back as qid, query, docno in its source's order; when a sample or a label-study depth shaped it, in
qid then docno order with a column ``why`` ("sample", "top D", "sample, top D"; "judged" for a whole judged pool
beside a depth).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from superb.errors import DataError

POOL_COLUMNS = ["qid", "query", "docno"]


@dataclass
class PoolCounts:
    """Per label: the judged pairs of the selected queries, those with text, left out (no text), sampled, and the
    unjudged pairs the label-study depth added."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    unjudged_top: int = 0
    depth: int | None = None

    @property
    def left_out(self) -> int:
        return sum(r["left_out_no_text"] for r in self.rows)

    @property
    def judged(self) -> int:
        return sum(r["judged"] for r in self.rows)

    def frame(self) -> pd.DataFrame:
        table = pd.DataFrame(self.rows, columns=["label", "judged", "with_text", "left_out_no_text", "in_pool"])
        total = {"label": "all", **{c: int(table[c].sum()) for c in table.columns if c != "label"}}
        return pd.concat([table, pd.DataFrame([total])], ignore_index=True)

    def sentence(self) -> str:
        """One sentence for agreement.md and the README: what was judged and what was left out."""
        if not self.rows:
            return ""
        with_text = sum(r["with_text"] for r in self.rows)
        pooled = sum(r["in_pool"] for r in self.rows)
        out = (f"Of the {self.judged:,} human-judged pairs of the selected queries, {with_text:,} have a document "
               f"with text in the data set; {self.left_out:,} were left out for want of text")
        if pooled != with_text:
            out += f", and {pooled:,} are in the pool"
        if self.depth is not None:
            out += (f"; the pool adds {self.unjudged_top:,} unjudged pairs of the systems' pooled top "
                    f"{self.depth}")
        return out + " (pool_coverage.csv)."


def stratified_sample(pairs: pd.DataFrame, n: int, seed: int, column: str = "label") -> pd.DataFrame:
    """A seeded sample of ``n`` rows of ``pairs`` stratified by ``column`` (proportional allocation, largest
    remainders; see the module docstring); all rows when ``n`` is at least their number."""
    if n >= len(pairs):
        return pairs
    ordered = pairs.sort_values(["qid", "docno"], kind="mergesort")
    sizes = ordered[column].value_counts().sort_index()
    exact = sizes / sizes.sum() * n
    take = np.floor(exact).astype(int)
    short = n - int(take.sum())
    order = sorted(sizes.index, key=lambda label: (-(exact[label] - take[label]), label))
    for label in order[:short]:
        take[label] += 1
    rng = np.random.default_rng(seed)
    parts = []
    for label in sizes.index:
        group = ordered[ordered[column] == label]
        parts.append(group.iloc[np.sort(rng.choice(len(group), size=int(take[label]), replace=False))])
    return pd.concat(parts).sort_values(["qid", "docno"], kind="mergesort")


def select_pool(pool_spec: Any, dataset: Any, topics: pd.DataFrame, *, first_stage_run=None,
                top: pd.DataFrame | None = None, depth: int | None = None) -> tuple[pd.DataFrame, PoolCounts]:
    """(pool, counts): see the module docstring. ``first_stage_run``: a callable giving the first stage's run for
    ``source = "first_stage"``; ``top``: qid, docno of the label-study systems' pooled top ``depth``."""
    counts = PoolCounts(depth=depth)
    selected = set(topics["qid"].astype(str))
    if pool_spec.source == "first_stage":
        pairs = first_stage_run(topics[["qid", "query"]])[["qid", "docno"]].astype(str).drop_duplicates()
    else:
        frame = dataset.qrels() if pool_spec.source == "qrels" else dataset.ratings()
        if frame is None:
            raise DataError(f"pool.source = \"ratings\" but data set {dataset.name!r} has no individual ratings; "
                            "use source = \"qrels\"")
        labelled = frame[frame["qid"].astype(str).isin(selected)].astype({"qid": str, "docno": str})
        label = "label" if "label" in labelled.columns else "final" if "final" in labelled.columns else None
        labelled = labelled.drop_duplicates(["qid", "docno"])
        has_text = labelled["docno"].isin(set(dataset.docs_store()))
        pairs = labelled[has_text]
        if pool_spec.sample is not None:
            pairs = stratified_sample(pairs, pool_spec.sample, pool_spec.seed, label or "qid")
        if label is not None:
            for value in sorted(labelled[label].dropna().unique()):
                mine = labelled[label] == value
                counts.rows.append({"label": int(value), "judged": int(mine.sum()),
                                    "with_text": int((mine & has_text).sum()),
                                    "left_out_no_text": int((mine & ~has_text).sum()),
                                    "in_pool": int((pairs[label] == value).sum())})
        pairs = pairs[["qid", "docno"]]
    if pool_spec.per_query is not None:
        rng = np.random.default_rng(pool_spec.seed)
        parts = []
        for _, g in pairs.sort_values(["qid", "docno"]).groupby("qid", sort=True):
            take = min(pool_spec.per_query, len(g))
            parts.append(g.iloc[np.sort(rng.choice(len(g), size=take, replace=False))])
        pairs = pd.concat(parts, ignore_index=True) if parts else pairs.iloc[:0]
    shaped = pool_spec.sample is not None or top is not None
    if shaped:
        pairs = pairs.assign(why="sample" if pool_spec.sample is not None else "judged")
    if top is not None:
        top = top[top["qid"].astype(str).isin(selected)][["qid", "docno"]].astype(str).drop_duplicates()
        top = top[top["docno"].isin(set(dataset.docs_store()))]
        judged = dataset.qrels()[["qid", "docno"]].astype(str)
        flagged = top.merge(judged.assign(_judged=True), on=["qid", "docno"], how="left")
        counts.unjudged_top = int(flagged["_judged"].isna().sum())
        both = pairs.merge(top.assign(_top=True), on=["qid", "docno"], how="outer")
        tag = f"top {depth}"
        both["why"] = [tag if pd.isna(w) else (f"{w}, {tag}" if t is True else w)
                       for w, t in zip(both["why"], both["_top"])]
        pairs = both.drop(columns="_top")
    if shaped:  # an unshaped pool keeps the order of its source (the qrels' or the run's), as it always had
        pairs = pairs.sort_values(["qid", "docno"], kind="mergesort")
    out = pairs.merge(topics[["qid", "query"]].astype({"qid": str}), on="qid", how="left")
    columns = POOL_COLUMNS + (["why"] if shaped else [])
    return out[columns].reset_index(drop=True), counts
