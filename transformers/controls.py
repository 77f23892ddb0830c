"""Controls for reranking experiments: a seeded shuffle of the first-stage order, and a random reranker.

- ``Shuffle(seed, top_k=None)``: permutes each query's list (only its top ``top_k`` when given, so that a reranker
  with the same top_k sees the same candidates in another order; the rest stays below). The permuted order becomes
  the input order of what follows: ``score`` is rewritten to n - position and ``rank`` follows (the input score is kept
  as ``first_stage_score``, as a reranker keeps it). Used for the
  order-sensitivity study (SUPERB: listwise reranking suffers badly from a shuffled input).
- ``RandomReranker(seed, top_k=20)``: an Reranker that scores the top_k at random: the floor any reranker must
  beat.

Both draw from a generator seeded by (seed, qid) (crc32 of the qid, not Python's salted hash), so results do not
depend on the order or subset of queries in the frame.
"""

from __future__ import annotations

import zlib
from collections import Counter

import numpy as np
import pandas as pd
import pyterrier as pt

from superb.options import NonNegativeInt, TopK
from superb.transformers.base import FIRST_STAGE_SCORE, Candidates, Reranker, build_stage


def query_rng(seed: int, qid: str) -> np.random.Generator:
    """A generator determined by the run seed and the query id only."""
    return np.random.default_rng([int(seed), zlib.crc32(str(qid).encode("utf-8"))])


class Shuffle(pt.Transformer):
    """A control, not a reranker (type ``shuffle``): permutes each query's list (or its top ``top_k``) with a generator
    seeded by (seed, qid). No LLM call, no product text.

    Writes no score column of its own (a spec cannot name it as a stage): ``score`` becomes n - position of the
    permuted order, the input score is kept as ``first_stage_score``. Options: ``seed`` (default: the run seed),
    ``top_k`` (default: the whole list). ``stats``: ``queries``, ``moved``.
    """

    type_name = "shuffle"
    calls_llm = needs_text = writes_score = False  # a permutation: no model, no text, no score of its own

    def __init__(self, seed: NonNegativeInt = 0, top_k: TopK = None):
        if top_k is not None and int(top_k) < 1:
            raise ValueError(f"Shuffle: top_k must be >= 1 or None (the whole list), got {top_k!r}")
        self.seed = int(seed)
        self.top_k = None if top_k is None else int(top_k)
        self.stats: Counter = Counter()  # queries, moved (documents not at their prior place)

    def __repr__(self) -> str:
        return f"Shuffle(seed={self.seed}, top_k={self.top_k})"

    from_spec = classmethod(build_stage)

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        pt.validate.columns(inp, includes=["qid", "docno", "score"], context=self)
        if len(inp) == 0:
            return pt.model.add_ranks(inp.copy())
        parts = []
        for qid, group in inp.groupby("qid", sort=False):
            group = Reranker._prior_order(group)
            k = len(group) if self.top_k is None else min(self.top_k, len(group))
            if FIRST_STAGE_SCORE not in group.columns:  # the retrieval score survives the rewrite below
                group = group.assign(**{FIRST_STAGE_SCORE: group["score"].astype("float64")})
            perm = query_rng(self.seed, qid).permutation(k)
            out = pd.concat([group.iloc[perm], group.iloc[k:]])
            out["score"] = np.arange(len(out), 0, -1, dtype="float64")
            self.stats["queries"] += 1
            self.stats["moved"] += int((perm != np.arange(k)).sum())
            parts.append(out)
        return pt.model.add_ranks(pd.concat(parts))


class RandomReranker(Reranker):
    """The floor any reranker must beat (type ``random``): scores the top_k (default 20) uniformly at random with a
    generator seeded by (seed, qid). No LLM call, reads no product text.

    Score: a uniform draw in [0, 1), in ``random_score`` (``<stage>_score`` when the spec names the stage). Options:
    ``seed`` (default: the run seed) and ``top_k``.
    """

    type_name = "random"
    calls_llm = needs_text = False

    def __init__(self, seed: NonNegativeInt = 0, top_k: TopK = 20, tag: str = "", alpha: float = 1.0):
        super().__init__(None, top_k=top_k, tag=tag, alpha=alpha)
        self.seed = int(seed)

    def __repr__(self) -> str:
        return f"RandomReranker(seed={self.seed}, top_k={self.top_k})"

    async def score(self, cands: Candidates) -> list[float]:
        return [float(x) for x in query_rng(self.seed, cands.qid).random(len(cands))]

