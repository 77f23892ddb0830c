"""``fuse``: a weighted sum of named score columns, each min-max normalised per query (no LLM call).

Every reranking stage keeps its raw score in its own column (``first_stage_score``, ``biencoder_score``,
``pointwise_score``, ...; see ``base.py``), so a pipeline can rerank in stages and then fuse them:

    rerank = [ {type = "biencoder", top_k = 100}, {type = "pointwise", top_k = 20},
               {type = "fuse", weights = {first_stage = 0.2, biencoder = 0.3, pointwise = 0.5}} ]

A weight's key is a column name, or a stage name that ``<key>_score`` completes (``pointwise`` ->
``pointwise_score``). Per query, the rows with a finite value in every weighted column (the "fused head", e.g. the
top 20 that every stage scored) are ranked by sum(weight x minmax(column)); a column that is constant over the head
normalises to 0; equal fused scores keep the prior order. Rows missing a value follow in their prior order
(counted: ``unscored``). The fused value is written to ``fuse_score`` (NaN outside the head), ``score`` becomes
n - position, and the rank follows.
"""

from __future__ import annotations

from collections import Counter
from typing import Annotated, Any, Mapping

import numpy as np
import pandas as pd
import pyterrier as pt

from superb.errors import SpecError
from superb.transformers.base import FIRST_STAGE_SCORE, Reranker, build_stage
from superb.transformers.blend import minmax

FUSED = "fuse_score"


def parse_weights(value: Any, path: str) -> dict[str, float]:
    """a table of column weights, e.g. {first_stage = 0.5, pointwise = 0.5}"""
    if not isinstance(value, Mapping) or not value:
        raise SpecError(path, "expected a table of column weights, e.g. {first_stage = 0.5, pointwise = 0.5}, "
                              f"got {value!r}")
    out = {}
    for key, w in value.items():
        if isinstance(w, bool) or not isinstance(w, (int, float)) or not np.isfinite(w) or w < 0:
            raise SpecError(f"{path}.{key}", f"expected a number >= 0, got {w!r}")
        out[str(key)] = float(w)
    if not any(out.values()):
        raise SpecError(path, f"all weights are 0 ({out}); give at least one column a positive weight")
    return out


class Fuse(pt.Transformer):
    """A weighted sum of earlier stages' score columns, each min-max normalised per query (type ``fuse``): no LLM call.

    Reads the columns the ``weights`` table names (a column, or a stage whose ``<key>_score`` it completes:
    ``first_stage``, ``pointwise``, ...); writes the fused value to ``fuse_score`` (NaN for rows missing a weighted
    value, which follow in their prior order, counted ``unscored``); ``score`` becomes n - position. A spec cannot
    name it as a stage. Option: ``weights`` (required, numbers >= 0, at least one positive).
    """

    type_name = "fuse"
    calls_llm = needs_text = writes_score = False  # reads earlier stages' columns; fuse_score is not its own raw score

    def __init__(self, weights: Annotated[Mapping[str, float], parse_weights]):
        self.weights = parse_weights(weights, "weights")
        self.stats: Counter = Counter()

    def __repr__(self) -> str:
        return f"Fuse(weights={self.weights})"

    from_spec = classmethod(build_stage)

    def columns(self, frame: pd.DataFrame) -> dict[str, float]:
        """The weighted columns of ``frame``: each key as a column name, else ``<key>_score``."""
        out, missing = {}, []
        for key, w in self.weights.items():
            column = key if key in frame.columns else f"{key}_score"
            if column not in frame.columns:
                missing.append(key)
            out[column] = w
        if missing:
            found = sorted(c for c in frame.columns if c.endswith("_score"))
            raise ValueError(f"Fuse: no column for weight(s) {missing} (tried the name and '<name>_score'); the input "
                             f"has score columns {found}: rerank with those stages first, or fix the weights' keys")
        return out

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        pt.validate.columns(inp, includes=["qid", "docno", "score"], context=self)
        if len(inp) == 0:
            out = inp.copy()
            out[FUSED] = pd.Series(index=out.index, dtype="float64")
            return pt.model.add_ranks(out)
        if FIRST_STAGE_SCORE not in inp.columns:  # fusing a first stage's own run: its score is the first-stage score
            inp = inp.assign(**{FIRST_STAGE_SCORE: inp["score"].astype("float64")})
        columns = self.columns(inp)
        parts = []
        for _, group in inp.groupby("qid", sort=False):
            group = Reranker._prior_order(group)
            values = group[list(columns)].to_numpy(dtype="float64")
            scored = np.isfinite(values).all(axis=1)
            fused = np.full(len(group), np.nan)
            if scored.any():
                head = values[scored]
                fused[scored] = sum(w * minmax(head[:, c]) for c, w in enumerate(columns.values()))
            order = sorted(np.flatnonzero(scored), key=lambda i: -fused[i]) + list(np.flatnonzero(~scored))
            out = group.assign(**{FUSED: fused}).iloc[order]
            out["score"] = np.arange(len(out), 0, -1, dtype="float64")
            self.stats["queries"] += 1
            self.stats["unscored"] += int((~scored).sum())
            parts.append(out)
        return pt.model.add_ranks(pd.concat(parts))
