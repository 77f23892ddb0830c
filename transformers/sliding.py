"""Sliding-window listwise reranking over a longer list (SUPERB Table 5: top 100, windows of 20, step 10).

A window of ``window`` candidates moves from the bottom of the top_k list to the top by ``step``; each window is one
listwise call (``ListwiseReranker.rank_window``) and its order is written back before the next window, so good
products can climb from the bottom to the top in one pass. The last window is clamped at the top of the list. Calls
per query and pass: ``window_starts(k, window, step)`` has ceil((k - window) / step) + 1 entries (one when k <=
window). ``passes`` repeats the sweep. The window ranker is the listwise one (``method`` "generation" or "likelihood",
``shuffles`` for permutation self-consistency: x m calls; see ``window.py``). The windows of one query run in sequence
(one coroutine per query); different queries run concurrently.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

from superb.errors import SpecError
from superb.options import PositiveInt, TopK
from superb.transformers.base import Candidates, scores_from_order
from superb.transformers.listwise import ListwiseReranker, check_calibrate


def window_starts(k: int, window: int, step: int) -> list[int]:
    """Start positions of the windows over a list of k, bottom first: k-w, k-w-s, ..., clamped at 0 last."""
    if k <= window:
        return [0] if k > 0 else []
    n = math.ceil((k - window) / step) + 1
    return [max(k - window - j * step, 0) for j in range(n)]


class SlidingWindowReranker(ListwiseReranker):
    """Orders the top_k (default 100) of each query by listwise windows sliding from the bottom to the top (type
    ``sliding``): ceil((top_k - window) / step) + 1 calls per query and pass (1 when top_k <= window), x ``passes``,
    x m with ``shuffles = m``. With top_k 100, window 20, step 10: 9 calls per query.

    Score: only an order (n - final position), in ``sliding_score`` (``<stage>_score`` when the spec names the
    stage). Options: ``window``, ``step``, ``passes`` and the listwise ones (``method``, ``shuffles``, ``seed``,
    ``calibrate``, common options (``top_k``, ``fields``, the product-text budget, ``guard``: the base's and ProductText's constructors)).
    """

    type_name = "sliding"

    def __init__(self, llm: Any, *, window: PositiveInt = 20, step: PositiveInt = 10, passes: PositiveInt = 1,
                 top_k: TopK = 100, **kw: Any):
        if window < 2:
            raise ValueError(f"SlidingWindowReranker: window must be >= 2, got {window}")
        if not 1 <= step <= window:
            raise ValueError(f"SlidingWindowReranker: step must be between 1 and window ({window}), got {step}; "
                             "a step larger than the window would skip candidates")
        if passes < 1:
            raise ValueError(f"SlidingWindowReranker: passes must be >= 1, got {passes}")
        self.window, self.step, self.passes = int(window), int(step), int(passes)
        super().__init__(llm, top_k=top_k, **kw)

    def window_size(self) -> int | None:
        return self.window

    def max_calls(self, n: int) -> int:
        """``passes`` x the windows over n (:func:`window_starts`), each :meth:`window_calls`."""
        return self.passes * sum(self.window_calls(min(self.window, n - start)) for start in window_starts(n, self.window,
                                                                                                         self.step))

    def __repr__(self) -> str:
        return (f"SlidingWindowReranker(ranker={self.ranker!r}, window={self.window}, step={self.step}, "
                f"passes={self.passes}, top_k={self.top_k}, text={self.text!r})")

    @classmethod
    def check_options(cls, opts: dict[str, Any], path: str, given: Mapping[str, Any]) -> None:
        if opts["window"] < 2:
            raise SpecError(f"{path}.window", f"must be >= 2, got {opts['window']}")
        if opts["step"] > opts["window"]:
            raise SpecError(f"{path}.step", f"must be <= window ({opts['window']}), got {opts['step']}; a larger "
                                            "step would skip candidates")
        if opts["method"] == "likelihood" and opts["window"] > 20:
            raise SpecError(f"{path}.window", f"method \"likelihood\" ranks at most 20 products per window "
                                              f"(single-letter ids, top_logprobs <= 20), got {opts['window']}")
        check_calibrate(opts, path)

    async def score(self, cands: Candidates) -> list[float]:
        order = list(range(len(cands)))  # positions into cands, current best first
        for _ in range(self.passes):
            for start in window_starts(len(order), self.window, self.step):
                part = order[start:start + self.window]
                self.stats["windows"] += 1
                local = await self.rank_window(cands.query, [cands.texts[i] for i in part])
                order[start:start + len(part)] = [part[i] for i in local]
        return scores_from_order(order)
