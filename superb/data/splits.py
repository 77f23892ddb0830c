"""Which queries an experiment runs on: a fixed dev/test split, an optional seeded sample, an optional subset.

The split is a property of the qid alone, so it never changes with the sample size, the seed or the other queries:

    dev  <=>  int(sha1(qid as UTF-8).hexdigest(), 16) % 10 < 3      (about 30% of the queries)
    test <=>  otherwise                                             (about 70%)

Tune prompts and settings on "dev", report on "test": tuned settings are then reported on unseen queries.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

import pandas as pd

from superb.errors import SpecError

DEV_TEST = ("dev", "test")  # what split_of returns, dev first: the order of every per-split table
SPLITS = ("all", *DEV_TEST)  # what [queries] split accepts
DEV_BUCKETS = 3  # of 10


def split_of(qid: str) -> str:
    """"dev" or "test" for one qid (see the module docstring)."""
    bucket = int(hashlib.sha1(str(qid).encode("utf-8")).hexdigest(), 16) % 10
    return "dev" if bucket < DEV_BUCKETS else "test"


def select_queries(topics: pd.DataFrame, split: str = "all", sample: int | None = None, seed: int = 0,
                   subset: Iterable[str] | None = None, *, path: str = "queries") -> pd.DataFrame:
    """The topics (qid, query, ...) of ``split``, then those in ``subset`` (qids or query texts), then a seeded
    sample of ``sample`` of them. Row order follows ``topics``; the index is reset."""
    if split not in SPLITS:
        raise SpecError(f"{path}.split", f"got {split!r}; allowed values: {list(SPLITS)}")
    if "qid" not in topics.columns:
        raise SpecError(path, f"topics have no qid column (found {list(topics.columns)})")
    selected = topics
    if split != "all":
        selected = selected[selected["qid"].astype(str).map(split_of) == split]
    if subset is not None:
        if isinstance(subset, str):
            raise SpecError(f"{path}.subset", f"expected a list of qids or query texts, got the string {subset!r}")
        wanted = [str(x) for x in subset]
        known = set(topics["qid"].astype(str))
        if "query" in topics.columns:
            known |= set(topics["query"].astype(str))
        unknown = [x for x in wanted if x not in known]
        if unknown:
            examples = list(topics["qid"].astype(str).head(3))
            if "query" in topics.columns:
                examples += list(topics["query"].astype(str).head(3))
            raise SpecError(f"{path}.subset", f"{len(unknown)} unknown qids/queries, e.g. {unknown[:5]}; valid "
                                              f"ones look like {examples}")
        mask = selected["qid"].astype(str).isin(wanted)
        if "query" in selected.columns:
            mask |= selected["query"].astype(str).isin(wanted)
        found = set(selected.loc[mask, "qid"].astype(str))
        if "query" in selected.columns:
            found |= set(selected.loc[mask, "query"].astype(str))
        outside = [x for x in wanted if x not in found]
        if outside:
            raise SpecError(f"{path}.subset", f"{outside[:5]} are not in split {split!r}; use split = \"all\" or "
                                              f"pick queries of that split")
        selected = selected[mask]
    if sample is not None:
        if not isinstance(sample, int) or isinstance(sample, bool) or sample < 1:
            raise SpecError(f"{path}.sample", f"expected a positive integer, got {sample!r}")
        if not isinstance(seed, int) or isinstance(seed, bool):
            raise SpecError(f"{path}.seed", f"expected an integer, got {seed!r}")
        if sample > len(selected):
            raise SpecError(f"{path}.sample", f"asks for {sample} queries but split {split!r} has only "
                                              f"{len(selected)}; lower it or drop `sample`")
        selected = selected.sample(n=sample, random_state=seed).sort_index()
    return selected.reset_index(drop=True)
