"""``Reranker``, the base class of every top-k reranker (LLM or not: the bi-encoder and the controls make no LLM
call), and the strict option reading shared by their ``from_spec``.

Subclassing contract (stable; rerankers-2 builds pairwise, rubric and bi-encoder rerankers on it):

- Implement ``async def score(self, cands: Candidates) -> Sequence[float]``: one score per candidate, in the order
  of ``cands.docnos`` (the first-stage order, best first); higher is better. Ties keep the first-stage order.
  A listwise method turns its permutation into scores with ``scores_from_order``.
- Make every LLM call through ``await self.complete(request)``: it counts calls, failures and tokens into ``stats``.
  When it returns ``Completion(failed=True)`` (failure policy "record"), apply a documented fallback and count it
  (``self.stats["fallback_<why>"] += 1``). Never raise on bad model output, never drop or add candidates.
- Declare spec options once, in the constructor: a keyword parameter annotated ``Annotated[T, parser]``
  (superb.options: ``PositiveInt``, ``Flag``, ``OneOf(...)``, ...) is a spec option with the parameter's default;
  ``**kw`` passes the base's (``top_k``, and ``text``: ProductText's ``fields``, ``text_tokens``, ``guard``). The
  base's ``from_spec`` reads them (unknown keys rejected with the allowed keys listed), runs ``check_options`` (the
  cross-option rules) and calls the constructor; a class overrides ``from_spec`` only to build something else.

The base does the rest: input validation (qid, query, docno, score; rank optional, else the score order is the
prior order); product text (``ProductText``, or else a ``text`` column of the input, whitespace-collapsed); the
empty frame (right columns, no calls); reranking only the top ``top_k`` of each query (the rest stays below, in its
prior order); output docnos == input docnos per query; per-query concurrency (one coroutine per query, run together
by ``superb.llm.runner.run_all``) with a tqdm progress bar on stderr (labelled with ``progress_label``, which the
experiment runner sets to the pipeline's name, else the tag; unit "query", ETA) from two queries up;
``SUPERB_PROGRESS=0`` turns it off. The bar is shown whether or not stderr is a terminal (like the client's
``complete_many`` bar), so long runs logged to a file show their ETA too.

Score columns, each named for what it holds:

- ``<type>_score`` (``score_column``: ``pointwise_score``, ``biencoder_score``, ...; ``<stage>_score`` when the spec
  names the stage): the stage's own raw score, exactly what ``score`` returned (P(yes), an expected grade, a cosine,
  soft win sums; a rank-based reranker's ``scores_from_order``); NaN below top_k. No later stage and no blending
  overwrites it; ``fuse`` reads these columns.
- ``<stage>_blend_score`` (``blend_column``), only with ``alpha`` < 1: the blend the head is ordered by (below); a
  ``fuse`` weight ``<stage>_blend`` reads it (the committed fusions of a bi-encoder at alpha 0.5 did).
- ``first_stage_score``: the input's ``score``, kept by the first stage that reranks (a later stage leaves it alone).
- ``score``: ONLY AN ORDER, for every reranker: n - position (n the query's list length), so that it agrees with
  ``rank`` and trec_eval, which breaks ties of ``score`` by docno, reads the same order from the run file. The
  reranker's own score is in ``<stage>_score``, never in ``score``.

The head is sorted by ``order_values``: the own score, or, with ``alpha`` < 1 (the one blending weight; only
``pointwise`` and ``biencoder`` expose it in a spec), ``alpha * own + (1 - alpha) * minmax(input score of the top_k)``
(options.blend; the input score is the first-stage score when this is the first reranking stage). The sort is stable,
so equal values keep the prior order.
"""

from __future__ import annotations

import inspect
from collections import Counter
from dataclasses import dataclass
from numbers import Real
from typing import Annotated, Any, Mapping, Sequence

import numpy as np
import pandas as pd
import pyterrier as pt

from superb.errors import SpecError, StageError, SuperbError
from superb.faults import fault, is_fault
from superb.llm import answers
from superb.llm.batch import PendingRequest
from superb.llm.runner import progress_bar, run_all
from superb.llm.text import NO_TEXT, ProductText, clean
from superb.llm.types import ChatRequest, Completion
from superb.options import Expand, Opt, TopK, constructor_options, construct, expanded, read_options
from superb.transformers.blend import blend

REQUIRED_COLUMNS = ("qid", "query", "docno", "score")
FIRST_STAGE_SCORE = "first_stage_score"  # the retrieval score, kept through reranking stages (see the docstring)


@dataclass(frozen=True)
class Candidates:
    """The top_k of one query, handed to ``Reranker.score``: parallel tuples in first-stage order (best first)."""

    qid: str
    query: str
    docnos: tuple[str, ...]
    texts: tuple[str, ...]
    prior_scores: tuple[float, ...]

    def __len__(self) -> int:
        return len(self.docnos)


def scores_from_order(order: Sequence[int]) -> list[float]:
    """Scores that sort candidates into ``order`` (a permutation of positions 0..n-1, best first)."""
    n = len(order)
    scores = [0.0] * n
    for place, pos in enumerate(order):
        scores[pos] = float(n - place)
    return scores


#: a reranker's ``text`` parameter: in a spec, ProductText's options (``fields``, ``text_tokens``, ``guard``)
Text = Annotated[ProductText | None, Expand(ProductText)]


class Reranker(pt.Transformer):
    """Reranks the top ``top_k`` candidates of each query with ``score``; see the module docstring for the contract."""

    # What the type is, declared here for every stage type, built-in or plug-in (registry.StageFacts reads them):
    type_name = "reranker"  # the spec's `type` (names the tag and the score column); subclasses override
    calls_llm = True  # False for rerankers that make no LLM call (the bi-encoder, the controls)
    needs_text = True  # False for rerankers that never read product text (Candidates.texts are then "")
    writes_score = True  # keeps its raw score in a column of its own (<type>_score)
    # minmax's value when a query's input scores are all equal (order_values): it shifts every value of the query
    # alike, so the order does not depend on it up to rounding; the bi-encoder keeps 1.0, as its committed runs used
    blend_constant = 0.0

    def __init__(self, llm: Any = None, *, text: Text = None, top_k: TopK = 20, tag: str = "", alpha: float = 1.0):
        if top_k is not None and int(top_k) < 1:
            raise ValueError(f"{type(self).__name__}: top_k must be >= 1 or None (all), got {top_k!r}")
        if isinstance(alpha, bool) or not isinstance(alpha, Real) or not 0.0 <= float(alpha) <= 1.0:
            raise ValueError(f"{type(self).__name__}: alpha must be in [0, 1], got {alpha!r}")
        self.alpha = float(alpha)  # weight of the own score in order_values; 1 - alpha on the min-max input score
        self.llm = llm
        self.text = text
        self.top_k = None if top_k is None else int(top_k)
        self.tag = tag or self.type_name
        self.stage: str | None = None  # names the raw-score column (score_column); build_reranker sets it from the spec
        self.progress_label: str | None = None  # the progress bar's label: the runner sets the pipeline's name
        self.progress = True  # False: no progress bar (run_experiment(progress=False))
        self.stats: Counter = Counter()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(top_k={self.top_k}, text={self.text!r})"

    @property
    def calls_depend_on_answers(self) -> bool:
        """True when the model's answers decide which questions come next (setwise heap, pairwise sort or sliding
        passes: read from the strategy's ``answer_dependent``), so a dry run, whose answers are all missing, counts
        an estimate of the calls (real answers may make the search shorter or longer)."""
        return bool(getattr(getattr(self, "strategy", None), "answer_dependent", False))

    @property
    def score_column(self) -> str:
        """This stage's raw-score column (``<type>_score``, or ``<stage>_score`` when the spec names the stage), which
        later stages keep and ``fuse`` reads."""
        return f"{self.stage or self.type_name}_score"

    @property
    def blend_column(self) -> str | None:
        """With ``alpha`` < 1, the column of the blend the head is ordered by (``<stage>_blend_score``; a ``fuse``
        weight ``<stage>_blend`` reads it); None at alpha 1, where the order is the raw score's."""
        return f"{self.stage or self.type_name}_blend_score" if self.alpha < 1.0 else None

    # ---- built from a spec: the options are the constructor's (build_stage) --------------------------------------
    @classmethod
    def check_options(cls, opts: dict[str, Any], path: str, given: Mapping[str, Any]) -> None:
        """Cross-option rules of a spec table (``opts`` read, ``given`` as written): a SpecError naming the key."""

    @classmethod
    def from_spec(cls, options: Mapping[str, Any], context: Any, path: str) -> "Reranker":
        return build_stage(cls, options, context, path)

    @classmethod
    def default_template(cls, options: Mapping[str, Any]) -> str | None:
        """The prompt template (product form) a spec table of this type asks with when it names no ``template``; None
        for a type without one. A passage data set gets the passage form (transformers.templates)."""
        return None

    def max_calls(self, n: int) -> int | None:
        """The most LLM requests one query of ``n`` candidates can make (its worst case, from the algorithm: the
        ceiling ``superb run --dry-run`` prints beside its estimate), or None when the type does not say."""
        return 0 if not self.calls_llm else None

    # ---- the subclass hook -------------------------------------------------------------------------------------
    async def score(self, cands: Candidates) -> Sequence[float]:
        raise NotImplementedError(f"{type(self).__name__} must implement `async def score(self, cands)`")

    def order_values(self, own: Sequence[float], first_stage: Sequence[float]) -> list[float]:
        """What the head is sorted by (best first, stable): the own scores, or with ``alpha`` < 1 their blend with the
        min-max normalised input scores of the top_k (options.blend, constant ``blend_constant``)."""
        return blend(own, first_stage, self.alpha, constant=self.blend_constant).tolist()

    # ---- LLM access with accounting ----------------------------------------------------------------------------
    async def complete(self, request: ChatRequest) -> Completion:
        """One LLM call, counted: calls, failures, prompt/completion/cached tokens, cache hits."""
        if self.llm is None:
            raise ValueError(f"{type(self).__name__}: no LLM client was given (pass llm=..., or context.llm in a spec)")
        comp = await self.llm.acomplete(request)
        self.stats["calls"] += 1
        if comp.failed:
            self.stats["failures"] += 1
        self.stats["prompt_tokens"] += comp.prompt_tokens
        self.stats["completion_tokens"] += comp.completion_tokens
        self.stats["cached_prompt_tokens"] += comp.cached_prompt_tokens
        if comp.from_cache:
            self.stats["from_cache"] += 1
        return comp

    def read_score(self, reader: Any, comp: Completion) -> float:
        """A one-token answer as a score, read by ``reader`` (superb.llm.answers: YesProbability, ExpectedGrade), every
        fallback counted: a failed call -> 0 (``fallback_failed_call``); no probabilities, the written
        answer read (``fallback_parsed_label``); nothing readable -> 0 (``fallback_unparsed``); the label found after
        the first generated token is counted too (``label_after_first_token``)."""
        reading = reader.read(comp)
        if reading.source == answers.FAILED:
            self.stats["fallback_failed_call"] += 1
            return 0.0
        if reading.source == answers.UNPARSED:
            self.stats["fallback_unparsed"] += 1
            return 0.0
        if reading.source == answers.TEXT:
            self.stats["fallback_parsed_label"] += 1
        elif reading.position > 0:
            self.stats["label_after_first_token"] += 1
        return reading.value

    def run_all(self, coros: list) -> list:
        """Run one coroutine per query concurrently (superb.llm.runner.run_all); a progress bar advances as each
        query completes (see the module docstring for when it is shown).

        Batch export (superb/llm/batch.py): a query whose coroutine raises ``PendingRequest`` (its next answer is
        not cached yet) gives None, counted in ``stats["pending_queries"]``, and the other queries go on."""

        coros = [_pending_as_none(c, self.stats) for c in coros]
        return run_all(self.llm, coros, bar=self.progress_bar(len(coros)))

    def progress_bar(self, total: int):
        """The per-query tqdm bar: labelled with ``progress_label`` (the runner sets the pipeline's name), else the
        tag."""

        return progress_bar(total, self.progress_label or self.tag, show=self.progress)

    # ---- the PyTerrier side -------------------------------------------------------------------------------------
    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        pt.validate.columns(inp, includes=list(REQUIRED_COLUMNS), context=self)
        if len(inp) == 0:
            out = inp.copy()
            for column in (self.score_column, self.blend_column, FIRST_STAGE_SCORE):
                if column is None:
                    continue
                if column not in out.columns:
                    out[column] = pd.Series(index=out.index, dtype="float64")
            return pt.model.add_ranks(out)
        if self.needs_text and self.text is None and "text" not in inp.columns:
            raise ValueError(
                f"{type(self).__name__}: no product text: pass text=ProductText(dataset, ...) or give the input "
                f"frame a 'text' column (found columns {list(inp.columns)})"
            )
        groups, heads = [], []
        upstream_pending = _pending_qids(inp)  # batch export: queries an earlier stage could not finish
        for qid, group in inp.groupby("qid", sort=False):
            group = self._prior_order(group)
            k = len(group) if self.top_k is None else min(self.top_k, len(group))
            cands = self._candidates(group.iloc[:k])
            empty = [i for i, t in enumerate(cands.texts) if t == NO_TEXT] if self.needs_text else []
            if empty:  # no text: nothing to ask about; not sent, kept just below the scored ones, counted
                keep = [i for i in range(k) if i not in set(empty)]
                group = pd.concat([group.iloc[keep], group.iloc[empty], group.iloc[k:]])
                k -= len(empty)
                self.stats["empty_text_skipped"] += len(empty)
                cands = self._candidates(group.iloc[:k]) if k else None
            groups.append((group, k))
            heads.append(cands)
        self.stats["queries"] += len(groups)
        self.stats["reranked"] += sum(len(c) for c in heads if c is not None)
        results = self.run_all([_none() if c is not None and c.qid in upstream_pending else
                                _empty_scores() if c is None else self._checked_score(c) for c in heads])
        out = pd.concat([self._assemble(g, k, s) for (g, k), s in zip(groups, results)])
        if "pending" in out.columns:
            out["pending"] = out["pending"].fillna(False).astype(bool)
        return pt.model.add_ranks(out)

    @staticmethod
    def _prior_order(group: pd.DataFrame) -> pd.DataFrame:
        if "rank" in group.columns:
            return group.sort_values("rank", kind="stable")
        return group.sort_values("score", ascending=False, kind="stable")

    def _candidates(self, head: pd.DataFrame) -> Candidates:
        docnos = tuple(str(d) for d in head["docno"])
        if not self.needs_text:
            texts = ("",) * len(docnos)
        elif "text" in head.columns and self.text is None:
            texts = tuple(clean(t) for t in head["text"])  # one line each, like ProductText
        else:
            texts = tuple(self.text.get(d, self.stats) for d in docnos)
        return Candidates(
            qid=str(head["qid"].iloc[0]),
            query=str(head["query"].iloc[0]),
            docnos=docnos,
            texts=texts,
            prior_scores=tuple(float(s) for s in head["score"]),
        )

    async def _checked_score(self, cands: Candidates) -> list[float]:
        try:
            scores = [float(s) for s in await self.score(cands)]
        except (SuperbError, PendingRequest):
            raise
        except BaseException as exc:  # noqa: BLE001 - a bug in score(), SystemExit too: named with its stage and line
            if not is_fault(exc):  # a Ctrl-C, a cancellation
                raise
            raise fault(f"{self.tag} (type {self.type_name!r}, {type(self).__name__}.score)", exc,
                        [getattr(getattr(self, "plugin", None), "origin", None), type(self)],
                        after=f" on query {cands.qid!r}") from exc
        if len(scores) != len(cands):  # a programming error in the subclass, not bad model output
            raise StageError(f"{self.tag} (type {self.type_name!r}): {type(self).__name__}.score returned {len(scores)} "
                             f"scores for {len(cands)} candidates; it must return one per candidate")
        bad = [i for i, s in enumerate(scores) if not np.isfinite(s)]
        for i in bad:
            scores[i] = -np.inf  # non-finite scores sort last within the head; counted
        self.stats["nonfinite_scores"] += len(bad)
        if scores and len(bad) == len(scores):  # no score at all for the query: its order is no tie (counted)
            self.stats["queries_without_scores"] += 1
        return scores

    def _assemble(self, group: pd.DataFrame, k: int, scores: list[float] | None) -> pd.DataFrame:
        if FIRST_STAGE_SCORE not in group.columns:
            group = group.assign(**{FIRST_STAGE_SCORE: group["score"].astype("float64")})
        if scores is None:  # pending (batch export): prior order, marked, not reranked by later stages either
            out = group.copy()
            for column in (self.score_column, self.blend_column):
                if column is not None:
                    out[column] = np.nan
            out["pending"] = True
            out["score"] = np.arange(len(out), 0, -1, dtype="float64")
            return out
        head, tail = group.iloc[:k].copy(), group.iloc[k:].copy()
        head[self.score_column] = scores  # the raw own score: blending never overwrites it
        tail[self.score_column] = np.nan
        keys = self.order_values(scores, [float(s) for s in head["score"]])
        if self.blend_column is not None:
            head[self.blend_column] = keys
            tail[self.blend_column] = np.nan
        order = sorted(range(k), key=lambda i: -keys[i])  # best first; stable: equal values keep the prior order
        moved = sum(i != at for at, i in enumerate(order))  # how far the stage changed its input: counted, not judged
        self.stats["kept_input_order"] += moved == 0
        self.stats["moved_candidates"] += moved
        head = head.iloc[order]
        out = pd.concat([head, tail])
        out["score"] = np.arange(len(out), 0, -1, dtype="float64")
        return out


async def _empty_scores() -> list[float]:
    """The scores of a head with no document to ask about (every one without text): none."""
    return []


def _pending_qids(inp: pd.DataFrame) -> set:
    if "pending" not in inp.columns:
        return set()
    return set(inp.loc[inp["pending"].fillna(False).astype(bool), "qid"].astype(str))


async def _none() -> None:
    return None


async def _pending_as_none(coro, stats: Counter):
    """Await ``coro``; a ``PendingRequest`` (batch export: an answer not cached yet) gives None, counted."""

    try:
        return await coro
    except PendingRequest:
        stats["pending_queries"] += 1
        return None


def spec_options(cls: type, context: Any = None) -> dict[str, Opt]:
    """The spec options of a stage class, read from its constructors (superb.options.constructor_options); a
    ``seed`` defaults to the spec's top-level seed."""
    schema = constructor_options(cls)
    if "seed" in schema:
        schema["seed"] = Opt(getattr(context, "seed", 0), schema["seed"].parse)
    return schema


def build_stage(cls: type, options: Mapping[str, Any], context: Any, path: str) -> Any:
    """The stage a spec table describes: options read and checked (:func:`spec_options`, the class's
    ``check_options``), ``text`` built from its options over the context's data set, the context's LLM (or data set)
    as the first argument of a constructor that takes ``llm`` (or ``dataset``), ``tag`` = the key path."""
    opts = read_options(options, path, spec_options(cls, context))
    check = getattr(cls, "check_options", None)
    if check is not None:
        check(opts, path, options)
    for name, built in expanded(cls).items():
        own = constructor_options(built)
        opts[name] = product_text({k: opts.pop(k) for k in own if k in opts}, context, path, built)
    params = inspect.signature(cls.__init__).parameters
    args = (require_llm(context, path),) if "llm" in params else (require_dataset(context, path),) \
        if "dataset" in params else ()
    if "tag" in params or any(p.kind is p.VAR_KEYWORD for p in params.values()):
        opts["tag"] = path
    return construct(cls, path, *args, **opts)


def require_llm(context: Any, path: str) -> Any:
    llm = getattr(context, "llm", None)
    if llm is None:
        raise SpecError(path, "this reranker needs an LLM, but the build context has none; add an [llm] table or "
                              "leave it out to use the embedded local model")
    return llm


def require_dataset(context: Any, path: str) -> Any:
    dataset = getattr(context, "dataset", None)
    if dataset is None:
        raise SpecError(path, "this stage needs the data set (its product text or its index), but the build context has "
                              "none")
    return dataset


def product_text(opts: Mapping[str, Any], context: Any, path: str, cls: type = ProductText) -> ProductText:
    """The text a reranker shows, built from its spec options (ProductText's: ``fields``, else the data set's
    ``prompt_fields``; ``text_tokens``; ``guard``) over the build context's data set."""
    return construct(cls, path, require_dataset(context, path), **opts)


def text_dataset(text: Any) -> Any:
    """The data set a reranker's ``text`` (a ProductText, or None: the input's text column) reads."""
    return getattr(text, "dataset", None)
