"""Judges that SCORE each (query, product) pair from the label probabilities of a one-token answer.

A scoring judge asks one label request per pair (``ChatRequest.label``: max_tokens 1, top 20 logprobs, temperature 0,
seed 0), built EXACTLY as the pointwise reranker builds it for the same template, query and product text
(``template.render(query=..., product=ProductText(dataset, fields, text_tokens).get(docno))``), so a judge and a
reranker asking the same prompt share one cached answer. The deliberated judge first asks for the ideal product's
attributes (superb.llm.ideal, shared with the deliberated reranker) and grades against them.

How an answer becomes a score is a ``Reading`` (a strategy):

- ``ExpectedGrade``: the expected grade sum_g g * P(g) under the label-token distribution at the first generated
  position offering a grade token, renormalised over the grades (0..3): a score in [0, 3].
- ``YesProbability``: P(yes) renormalised over {yes, no}: a score in [0, 1].

A score is not a label: superb.judges.studies.calibration turns scores into labels 0..3 with cut points chosen on
dev pairs.

Every pair gets a ``Scored`` record whose status says how its score was obtained, and every fallback is counted in
``judge.stats``:

- "ok": from the label-token probabilities;
- "parsed": the answer had no usable logprobs, so the one generated token was parsed (grade g -> g; yes -> 1, no -> 0)
  (``stats["fallback_parsed"]``);
- "unparseable": neither (score None; ``stats["unparseable"]``);
- "failed": the call failed (score None; ``stats["failed_calls"]``);
- "missing": a cache-only client had no answer for this request (score None; ``stats["missing"]``; see
  superb.judges.from_cache). Pairs without a score are left out of calibration and agreement, and counted there.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any

import pandas as pd

from superb.errors import SpecError
from superb.judges.ideal_step import IdealFirst
from superb.judges.judge import progress_bar, query_groups, run_all
from superb.judges.records import DEFAULT as DEFAULT_STATUS, FAILED as FAILED_STATUS, Judgment, OK as OK_STATUS
from superb.llm import ideal
from superb.llm.dryrun import DRY_RUN_ERROR
from superb.llm.answers import PROBABILITIES, UNPARSED, WRITTEN, ExpectedGrade, UmbrelaGrade, YesProbability
from superb.llm.question import LabelQuestion
from superb.llm.prompts import TemplateRef, load_template, template_name
from superb.llm.text import ProductText
from superb.llm.types import ChatRequest, Completion
from superb.options import FieldNames, Opt, PositiveInt, constructor_options, construct, one_of, read_options

OK, PARSED, UNPARSEABLE, FAILED, MISSING = "ok", "parsed", "unparseable", "failed", "missing"
DEFAULT = "default"  # a written reading that could not read the answer: the reading's default grade (UMBRELA's 0)
STATUSES = (OK, PARSED, UNPARSEABLE, FAILED, MISSING, DEFAULT)
MISSING_ERROR = DRY_RUN_ERROR  # the error of the failed Completion a cache-only (dry-run) client returns for a miss
SCORE_COLUMNS = ["qid", "docno", "score", "status"]


# --- readings: superb.llm.answers, the one module of answer readers (the rerankers read with the same classes) ---
READINGS = {"expected_grade": ExpectedGrade, "p_yes": YesProbability, "written": UmbrelaGrade}
WRITTEN_READINGS = ("written",)  # readings whose value is the label itself: reported as written, never calibrated
ReadingRef = Annotated[Any, one_of(*READINGS)]  # a reading's name in a spec (READINGS); from Python also the object


def _cue(value: Any, path: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise SpecError(path, f"expected the text the answer writes before its grade, e.g. \"final score\", got "
                              f"{value!r}")
    return value


CueText = Annotated[str | None, _cue]  # expected_grade: read the grade the answer writes after this text


@dataclass(frozen=True)
class Scored:
    qid: str
    docno: str
    score: float | None  # None unless status is "ok" or "parsed"
    status: str  # one of STATUSES
    raw: str  # the generated token (or the error of a failed call)
    template: str  # template id of the grading prompt


def scores_frame(records: Sequence[Scored]) -> pd.DataFrame:
    """qid, docno, score, status (score NaN where there is none)."""
    rows = [(r.qid, r.docno, float("nan") if r.score is None else r.score, r.status) for r in records]
    return pd.DataFrame(rows, columns=SCORE_COLUMNS)


# --- judges --------------------------------------------------------------------------------------------------------
class ScoringJudge:
    """One label request per pair; the score read by ``reading``. ``text_tokens`` is the product-text budget
    (ProductText), not the answer length."""

    kind = "pointwise"

    def __init__(self, llm: Any, dataset: Any, *, template: TemplateRef, reading: ReadingRef = "expected_grade",
                 fields: FieldNames = None, text_tokens: PositiveInt = 64, answer_tokens: PositiveInt = 1,
                 cue: CueText = None, name: str | None = None, tag: str | None = None):
        self.llm = llm
        self.dataset = dataset
        self.template = load_template(template)
        if isinstance(reading, str):
            reading = one_of(*READINGS)(reading, "reading")
            self.written = reading in WRITTEN_READINGS
            self.reading = ExpectedGrade(cue=cue) if reading == "expected_grade" else READINGS[reading]()
        else:
            self.reading, self.written = reading, getattr(reading, "name", "") in WRITTEN_READINGS
        self.text = ProductText(dataset, fields=fields, text_tokens=text_tokens)
        self.name = name or self.template.name
        self.tag = tag or f"judge:{self.name}"
        # one label request per pair, the pointwise reranker's for the same prompt; answer_tokens > 1 for a template
        # whose answer is a short written form ("##final score: 2": 7 tokens), read at the cue
        self.question = LabelQuestion(self.template, self.reading, max_tokens=int(answer_tokens), tag=self.tag)
        self.stats: Counter[str] = Counter()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, template={self.template.id!r}, reading={self.reading!r})"

    def template_ids(self) -> dict[str, str]:
        return {"grade": self.template.id}

    def request(self, query: str, docno: str, **variables: Any) -> ChatRequest:
        """The label request for one pair (the pointwise reranker's request for the same prompt)."""
        return self.question.request(query, self.text.get(docno, self.stats), tag=self.tag, **variables)

    def read(self, qid: str, docno: str, completion: Completion) -> Scored:
        """A Scored record from one completion, with the counted fallbacks of the module docstring."""
        self.stats["calls"] += 1
        tid = self.template.id
        if completion.failed:
            status = MISSING if completion.error == MISSING_ERROR else FAILED
            self.stats["missing" if status == MISSING else "failed_calls"] += 1
            return Scored(qid, docno, None, status, completion.error or "", tid)
        reading = self.question.read(completion)
        if reading.source in (PROBABILITIES, WRITTEN):
            return Scored(qid, docno, reading.value, OK, completion.text, tid)
        if reading.source == UNPARSED and self.written:  # UMBRELA's rule: an answer it cannot read is 0, flagged
            self.stats["default_labels"] += 1
            return Scored(qid, docno, 0.0, DEFAULT, completion.text, tid)
        if reading.source == UNPARSED:
            self.stats["unparseable"] += 1
            return Scored(qid, docno, None, UNPARSEABLE, completion.text, tid)
        self.stats["fallback_parsed"] += 1
        return Scored(qid, docno, reading.value, PARSED, completion.text, tid)

    async def ascore_query(self, qid: str, query: str, docnos: Sequence[str]) -> list[Scored]:
        async def one(docno: str) -> Scored:
            return self.read(qid, docno, await self.llm.acomplete(self.request(query, docno)))

        return list(await asyncio.gather(*(one(d) for d in docnos)))

    def score_records(self, pool: pd.DataFrame) -> list[Scored]:
        """One record per distinct (qid, docno) of ``pool`` (columns qid, query, docno), grouped by query."""
        groups = query_groups(pool, self.name, self.stats)
        if not groups:
            return []
        results = run_all(self.llm, [self.ascore_query(q, text, docs) for q, text, docs in groups],
                          bar=progress_bar(len(groups), self.tag))
        return [r for per_query in results for r in per_query]

    def score(self, pool: pd.DataFrame) -> pd.DataFrame:
        """qid, docno, score, status for every distinct pair of ``pool`` (see ``score_records``)."""
        return scores_frame(self.score_records(pool))


class DeliberatedScoringJudge(IdealFirst, ScoringJudge):
    """Ideal attributes first (superb.llm.ideal; once per query text, kept in ``ideals`` by qid), then one label
    request per product with the attributes before the product (template ``deliberated_label``), the deliberated
    reranker's requests exactly. A failed or empty attribute answer: grading uses ``ideal.NO_ATTRIBUTES``, counted in
    ``stats["ideal_failed"]`` (``stats["ideal_missing"]`` when a cache-only client had no answer)."""

    kind = "deliberated"

    def __init__(self, *args: Any, **kw: Any):
        super().__init__(*args, **kw)
        self._texts: dict[str, str] = {}  # query text -> attribute text
        self._pending: dict[str, asyncio.Future] = {}

    async def attributes(self, query: str) -> str:
        """The attribute text of ``query``: one call per distinct query text, shared by concurrent callers."""
        if query in self._texts:
            return self._texts[query]
        if query not in self._pending:
            self._pending[query] = asyncio.ensure_future(self._ask_ideal(query))
        text = await asyncio.shield(self._pending[query])
        self._texts[query] = text
        self._pending.pop(query, None)
        return text

    async def _ask_ideal(self, query: str) -> str:
        self.stats["ideal_calls"] += 1
        completion = await self.llm.acomplete(self.ideal_request(query))
        text = ideal.read(completion)
        if text is None:
            missing = completion.failed and completion.error == MISSING_ERROR
            self.stats["ideal_missing" if missing else "ideal_failed"] += 1
            text = ideal.NO_ATTRIBUTES
        return text

    async def ascore_query(self, qid: str, query: str, docnos: Sequence[str]) -> list[Scored]:
        attributes = self.ideals[qid] = await self.attributes(query)

        async def one(docno: str) -> Scored:
            req = self.request(query, docno, attributes=attributes)
            return self.read(qid, docno, await self.llm.acomplete(req))

        return list(await asyncio.gather(*(one(d) for d in docnos)))


# --- the named judges of the agreement study --------------------------------------------------------------------------
PRESETS: dict[str, dict[str, str]] = {
    "superb_product": {"type": "pointwise", "template": "pointwise_best_product", "reading": "expected_grade"},
    "superb": {"type": "pointwise", "template": "pointwise_best", "reading": "expected_grade"},
    "umbrela": {"type": "pointwise", "template": "judge_umbrela", "reading": "expected_grade"},
    "yesno_product": {"type": "pointwise", "template": "pointwise_yesno_product", "reading": "p_yes"},
    "yesno": {"type": "pointwise", "template": "pointwise_yesno", "reading": "p_yes"},
    "deliberated": {"type": "deliberated", "template": "deliberated_label", "reading": "expected_grade"},
    "umbrela_written": {"type": "pointwise", "template": "judge_umbrela", "reading": "written"},
}
# The passage form of a preset (a data set of passages, text_kind "passage": trec-dl, candidates, irds): merged over
# the preset's keys, under the spec's own. "umbrela" is then UMBRELA's own zero-shot prompt (castorini/umbrela's
# qrel_zeroshot_bing, superb/llm/prompts/umbrela_zeroshot_bing.j2; NOTICE.md there), whose answer "##final score: N" is
# read at the grade it writes: by its label probabilities (expected grade, calibrated) or, "umbrela_written", as
# UMBRELA reads it. Both ask the same request (8 answer tokens), so one answer serves both. A product preset with no
# passage form is refused on passages.
UMBRELA_PASSAGE = {"template": "umbrela_zeroshot_bing", "answer_tokens": 8, "cue": "final score"}
PASSAGE_PRESETS: dict[str, dict[str, Any]] = {
    "umbrela": UMBRELA_PASSAGE,
    "umbrela_written": UMBRELA_PASSAGE,
    "yesno": {"template": "pointwise_yesno_passage"},
}
_TYPES = {"pointwise": ScoringJudge, "deliberated": DeliberatedScoringJudge}
# The spec options of each scoring judge type: its constructor's (superb.options.constructor_options), plus a
# ``preset`` (PRESETS), a spec's shorthand for a table of those options; ``template`` may come from the preset, so the
# table need not give it (checked below). ``max_tokens`` is refused with ``text_tokens``.
SCHEMAS: dict[str, dict[str, Opt]] = {
    kind: {"preset": Opt(None, one_of(*PRESETS)), **constructor_options(cls), "template": Opt(None, template_name)}
    for kind, cls in _TYPES.items()}


def read_scoring_options(options: str | Mapping[str, Any], path: str = "judge", text_kind: str = "product"
                         ) -> tuple[str, str | None, dict]:
    """(type, preset, constructor keywords) of a preset name (PRESETS) or a table {preset?,
    type, template, reading, fields, text_tokens, ideal_template, ideal_max_tokens} (a preset's keys first, its
    passage form's over them when ``text_kind`` is "passage", the table's over both), read against ``SCHEMAS[type]``
    (superb.options): unknown names and keys, renamed keys and wrong types raise SpecError naming ``path.key``. Needs
    no data set or model."""
    if isinstance(options, str):
        options = {"preset": options}
    if not isinstance(options, Mapping):
        raise SpecError(path, f"expected a preset name or a table, found {type(options).__name__}")
    table = dict(options)
    preset = table.get("preset")
    if preset is not None:
        if preset not in PRESETS:
            raise SpecError(f"{path}.preset", f"unknown judge preset {preset!r}; choose one of {sorted(PRESETS)}")
        passage = {}
        if text_kind == "passage" and "template" not in table:
            if preset not in PASSAGE_PRESETS:
                raise SpecError(f"{path}.preset", f"the data set holds passages and preset {preset!r} asks a "
                                                  f"product prompt; passage presets: {sorted(PASSAGE_PRESETS)} (or "
                                                  "name a template)")
            passage = PASSAGE_PRESETS[preset]
        table = {**PRESETS[preset], **passage, **table}
    kind = table.setdefault("type", "pointwise")
    if kind not in _TYPES:
        raise SpecError(f"{path}.type", f"unknown scoring judge type {kind!r}; choose one of {sorted(_TYPES)}")
    kw = read_options(table, path, SCHEMAS[kind])
    del kw["preset"]  # already merged
    if kw["template"] is None:
        raise SpecError(f"{path}.template", "missing: name the grading prompt template (or use a preset)")
    return kind, preset, kw


def build_scoring_judge(options: str | Mapping[str, Any], *, llm: Any, dataset: Any, name: str | None = None,
                        path: str = "judge") -> ScoringJudge:
    """A scoring judge from a preset name or a table (:func:`read_scoring_options`), named ``name`` (default: the
    preset's name, else the template's); a bad field name raises SpecError naming ``path`` too."""
    kind, preset, kw = read_scoring_options(options, path, getattr(dataset, "text_kind", "product"))
    return construct(_TYPES[kind], path, llm, dataset, name=name or preset, **kw)


class CalibratedJudge:
    """Labels from a scoring judge and a FITTED calibration (superb.judges.studies.calibration): ``judge(pool)``
    gives one superb.judges.records.Judgment per pair with label = calibration.apply(score) and the score kept in
    ``Judgment.score``. A pair without a score gets ``default_label`` (status "failed" for a failed call, else
    "default"), counted in ``stats["default_labels"]``. ``scores`` of the last call are kept (``last_scores``)."""

    def __init__(self, scorer: ScoringJudge, calibration: Any, default_label: int = 0):
        if getattr(calibration, "cuts", None) is None:
            raise ValueError(f"{calibration!r} is not fitted: fit it on the dev pairs' scores first")
        if default_label not in calibration.labels:
            raise ValueError(f"default_label={default_label!r} is not in the label set {list(calibration.labels)}")
        self.scorer, self.calibration, self.default_label = scorer, calibration, int(default_label)
        self.stats: Counter[str] = Counter()
        self.last_scores: pd.DataFrame | None = None

    def __repr__(self) -> str:
        return f"CalibratedJudge({self.scorer!r}, {self.calibration!r})"

    def template_ids(self) -> dict[str, str]:
        return self.scorer.template_ids()

    def judge(self, pool: pd.DataFrame) -> list:
        records = self.scorer.score_records(pool)
        self.last_scores = scores_frame(records)
        scored = [r for r in records if r.score is not None]
        labels = dict(zip(((r.qid, r.docno) for r in scored),
                          self.calibration.apply([r.score for r in scored]).tolist() if scored else []))
        out = []
        for r in records:
            if r.score is None:
                self.stats["default_labels"] += 1
                self.stats[f"default_{r.status}"] += 1
                status = FAILED_STATUS if r.status == FAILED else DEFAULT_STATUS
                out.append(Judgment(r.qid, r.docno, self.default_label, None, r.raw, r.template, status))
            else:
                out.append(Judgment(r.qid, r.docno, int(labels[r.qid, r.docno]), None, r.raw, r.template, OK_STATUS,
                                    score=r.score))
        self.stats["judgments"] += len(out)
        return out
