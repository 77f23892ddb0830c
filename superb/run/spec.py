"""Experiment specs: a TOML file read into plain, checked values.

Only the shape common to every experiment is checked here (top-level keys, queries, evaluation, pipelines and their
baselines), plus what would otherwise fail after the LLM calls: every measure is parsed and computed once on a tiny
judged query (:func:`check_measures`) and system names that would write one file are refused
(superb/run/spec_names.py). The [[pipelines]] entries are read by superb/run/spec_pipelines.py. The tables handed to other layers -- ``[dataset]`` to
:func:`superb.data.load_dataset`, ``[llm]`` to ``LLMConfig.from_spec``, ``first_stage`` to
:func:`superb.pipelines.from_spec`, each ``rerank`` entry to :func:`superb.transformers.build_reranker` -- are checked
by those layers, with the same key-path error messages, all before the first LLM call (superb.run.experiment builds every
system before it runs any). Unknown keys are always rejected, never dropped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Iterable, Mapping
from typing import Any

from superb.errors import Errors, SpecError
from superb.llm.connect import check_table
from superb.options import check_keys, read_toml, typed
from superb.pipelines.pipeline_spec import PipelineSpec
from superb.run.spec_names import NAME_RE, SPEC_NAME_ROOM, check_name_length
from superb.run.spec_pipelines import parse_pipelines
from superb.transformers.registry import RERANKERS

INTERVALS = ("t", "bootstrap")
NO_RELEVANT = ("keep", "drop")
@dataclass(frozen=True)
class QueriesSpec:
    split: str = "all"
    sample: int | None = None
    seed: int = 0
    subset: tuple[str, ...] | None = None
    unjudged: str = "skip"  # selected queries without relevance labels: skip (warned, counted) | run (still counted)


UNJUDGED = ("skip", "run")


@dataclass(frozen=True)
class EvaluationSpec:
    measures: tuple[str, ...] = ()  # always set by _parse_evaluation (default: superb.eval.measures.DEFAULT_MEASURES)
    rel: int | None = None  # None: the data set's own threshold
    test: str = "t"
    correction: str = "holm"
    alpha: float = 0.05
    views: tuple[str, ...] = ("full",)  # full: unjudged count as non-relevant; condensed: unjudged removed
    n_resamples: int = 10000
    interval: str = "t"  # 95% interval of the mean paired difference: "t" (paired t) or "bootstrap" (queries)
    no_relevant: str = "keep"  # queries without a relevant document: "keep" (as trec_eval) or "drop"
    parsed: Any = field(default=None, compare=False, repr=False)  # superb.eval.measures.MeasureList, read once

    def measures_at(self, rel: int | None) -> list:
        """The measure objects at the binary threshold ``rel`` (the data set's, known once it is loaded): parsed
        when the spec was read, never again (an EvaluationSpec built by hand is read here)."""
        from superb.eval.measures import read_measures

        parsed = self.parsed if self.parsed is not None else read_measures(self.measures or None)
        return parsed.at(rel)


@dataclass(frozen=True)
class HypothesisSpec:
    """A confirmatory comparison declared before the test split is read (``[[hypotheses]]``): ``system`` against
    ``against`` on ``measures`` under ``views`` (the [evaluation] ones when not given); the correction runs over
    the declared tests of each ``family`` only (superb.eval.evaluate)."""

    system: str
    against: str
    measures: tuple[str, ...]
    views: tuple[str, ...]
    family: str = "confirmatory"
    evidence: str = ""
    path: str = "hypotheses"


@dataclass(frozen=True)
class Spec:
    name: str
    source: Path | None
    raw: dict[str, Any]
    dataset: dict[str, Any]
    queries: QueriesSpec
    evaluation: EvaluationSpec
    llm: dict[str, Any] | None
    pipelines: tuple[PipelineSpec, ...]
    description: str = ""
    output: str | None = None
    seed: int = 0
    baselines: dict[str, str | None] = field(default_factory=dict)
    comparisons: dict[str, tuple[str, ...]] = field(default_factory=dict)
    hypotheses: tuple[HypothesisSpec, ...] = ()

    @property
    def uses_llm(self) -> bool:
        return any(p.uses_llm for p in self.pipelines)

    def llm_ranked(self) -> list[str]:
        """The pipelines whose ranking an LLM shaped: an LLM reranker of their own or of any pipeline their input
        chain goes through (a fusion of an LLM row is LLM-ranked too), in spec order."""
        by_name = {p.name: p for p in self.pipelines}
        ranked: list[str] = []
        for p in self.pipelines:
            q: PipelineSpec | None = p
            while q is not None and not q.uses_llm:
                q = by_name.get(q.input) if q.input else None
            if q is not None:
                ranked.append(p.name)
        return ranked


def load_spec(path: str | Path) -> Spec:
    return parse_spec(read_toml(path), source=Path(path))


def parse_spec(raw: dict[str, Any], source: Path | None = None, *, plugins: bool = True) -> Spec:
    """The checked spec; every independent error found is reported together (:class:`Errors`).

    A spec names code: a stage ``type`` from outside superb ("file.py:Class", "module:Class", an entry-point name) is
    imported to check it, and runs when the spec runs. ``plugins=False`` is for a spec read out of a results folder
    (`superb judge --fill`, `superb merge`: someone else's folder, maybe downloaded): one that names such a type is
    refused, listing them, before any is imported (:func:`plugin_types`); the commands pass True only when the user
    gives ``--allow-plugins``. A spec the user gives on the command line is theirs: True."""
    if not plugins:
        refuse_plugins(raw)
    errors = Errors()  # an unknown or missing top-level key is one more error beside the others, not a first round
    errors.part(check_keys, raw, "", required={"name", "dataset", "pipelines"},
                optional={"description", "queries", "evaluation", "llm", "output", "seed", "hypotheses"})
    name = errors.part(_parse_name, raw) if "name" in raw else None
    dataset = errors.part(typed, raw, "dataset", dict, "") if "dataset" in raw else None
    queries = errors.part(parse_queries, raw.get("queries", {}), unjudged=True)
    evaluation = errors.part(_parse_evaluation, raw.get("evaluation", {}))
    llm = errors.part(_llm_table, raw) if "llm" in raw else None
    pipelines = errors.part(parse_pipelines, raw["pipelines"]) if "pipelines" in raw else None
    description = errors.part(typed, raw, "description", str, "", default="")
    output = errors.part(typed, raw, "output", str, "", default=None)
    seed = errors.part(typed, raw, "seed", int, "", default=0)
    hypotheses = ()
    if pipelines is not None:  # with a wrong [evaluation], the hypotheses' systems are still checked
        hypotheses = errors.part(_parse_hypotheses, raw.get("hypotheses", []), pipelines, evaluation)
    errors.raise_any()
    return Spec(
        name=name, source=source, raw=raw, dataset=dataset, queries=queries, evaluation=evaluation, llm=llm,
        pipelines=pipelines, description=description, output=output, seed=seed,
        baselines={p.name: p.baseline for p in pipelines},
        comparisons={p.name: p.compare for p in pipelines if p.compare}, hypotheses=hypotheses,
    )


def _llm_table(raw: dict) -> dict:
    """The [llm] table, checked as opening it would check it (keys, types, ranges, an embedded model's name), so its
    errors come with the rest of the spec's."""
    table = typed(raw, "llm", dict, "")
    check_table(table)
    return table


def plugin_types(raw: Any) -> list[str]:
    """``key = 'type'`` of every stage of a raw spec whose type is not one of superb's own (a plug-in, or a name
    superb does not know), read without importing anything."""
    found = []
    pipelines = raw.get("pipelines") if isinstance(raw, Mapping) else None
    for i, table in enumerate(pipelines if isinstance(pipelines, list) else []):
        rerank = table.get("rerank", []) if isinstance(table, Mapping) else []
        for j, stage in enumerate([rerank] if isinstance(rerank, Mapping) else rerank if isinstance(rerank, list)
                                  else []):
            kind = stage.get("type") if isinstance(stage, Mapping) else None
            if isinstance(kind, str) and kind not in RERANKERS:
                found.append(f"pipelines[{i}].rerank[{j}].type = {kind!r}")
    return found


def refuse_plugins(raw: Any) -> None:
    """A SpecError listing the plug-in types of a spec read from a results folder (:func:`parse_spec`)."""
    found = plugin_types(raw)
    if found:
        raise SpecError("pipelines", f"the results folder's spec names code from outside superb ({'; '.join(found)}), "
                                     "which superb would import and run; it imports none of it unless you pass "
                                     "--allow-plugins: give it only for a folder whose code you trust, as you would "
                                     "before running a program you downloaded (docs/extending.md)")


def _parse_name(raw: dict[str, Any]) -> str:
    name = typed(raw, "name", str, "")
    if not NAME_RE.match(name) or "/" in name:
        raise SpecError("name", f"{name!r} must be a plain name (letters, digits, _ . -), it names results/NAME")
    check_name_length(name, "name", room=SPEC_NAME_ROOM, what="the results folder results/.NAME.replaced-PID")
    return name


def _parse_hypotheses(items: Any, pipelines: tuple[PipelineSpec, ...], evaluation: EvaluationSpec | None
                      ) -> tuple[HypothesisSpec, ...]:
    """[[hypotheses]]: each names two pipelines, optional measures and views (subsets of [evaluation]'s), a family
    and its evidence. A test (pair, measure, view) is declared once; a pair is declared in one direction, and a
    pipeline against its own baseline only in that direction (the table's row)."""
    if not isinstance(items, list) or not all(isinstance(t, dict) for t in items):
        raise SpecError("hypotheses", "must be an array of tables ([[hypotheses]] entries)")
    names = {p.name: p for p in pipelines}
    out, seen = [], {}
    errors = Errors()
    for i, table in enumerate(items):
        hypothesis = errors.part(_parse_hypothesis, table, f"hypotheses[{i}]", names, evaluation, seen)
        if hypothesis is not None:
            out.append(hypothesis)
    errors.raise_any()
    return tuple(out)


def _parse_hypothesis(table: dict, path: str, names: Mapping[str, PipelineSpec], evaluation: EvaluationSpec | None,
                      seen: dict) -> HypothesisSpec | None:
    """One [[hypotheses]] table; its systems, measures, views and family are checked independently and every error
    is reported at once. ``evaluation`` None: [evaluation] itself is wrong (reported on its own), so measures and
    views are not checked against it."""
    check_keys(table, path, required={"system", "against"}, optional={"measures", "views", "family", "evidence"})
    errors = Errors()

    def system(key: str) -> str:
        name = typed(table, key, str, path)
        if name not in names:
            raise SpecError(f"{path}.{key}", f"{name!r} names no pipeline; known: {sorted(names)}")
        return name

    def listed(key: str, allowed: tuple[str, ...], what: str) -> list:
        found = typed(table, key, list, path, default=list(allowed))
        unknown = [m for m in found if m not in allowed]
        if not found or unknown:
            raise SpecError(f"{path}.{key}", f"expected a non-empty list of [evaluation] {what} {list(allowed)}, got "
                                             f"{unknown or found!r}")
        return found

    def family_name() -> str:
        found = typed(table, "family", str, path, default="confirmatory")
        if not found.strip():
            raise SpecError(f"{path}.family", "must be a non-empty name")
        return found

    one, other = errors.part(system, "system"), errors.part(system, "against")
    if one is not None and other is not None:
        if one == other:
            errors.found.append(SpecError(f"{path}.against", "a system cannot be tested against itself"))
        elif names[other].baseline == one:
            errors.found.append(SpecError(path, f"{other!r} is tested against its baseline {one!r} in the table: "
                                                f"write system = {other!r}, against = {one!r}"))
    measures = views = None
    if evaluation is not None:
        measures = errors.part(listed, "measures", evaluation.measures, "measures")
        views = errors.part(listed, "views", evaluation.views, "views")
    family = errors.part(family_name)
    evidence = errors.part(typed, table, "evidence", str, path, default="")
    errors.raise_any()
    if evaluation is None:  # nothing more to check: parse_spec reports [evaluation]'s own errors
        return None
    for m in measures:
        for v in views:
            key = frozenset((one, other)), m, v
            if key in seen:
                raise SpecError(path, f"{one!r} against {other!r} on {m} ({v}) is already declared by "
                                      f"{seen[key]}; declare each test once")
            seen[key] = path
    return HypothesisSpec(system=one, against=other, measures=tuple(dict.fromkeys(measures)),
                          views=tuple(dict.fromkeys(views)), family=family, evidence=evidence, path=path)


def parse_queries(table: Any, *, unjudged: bool = False) -> QueriesSpec:
    """The [queries] table (shared by experiment and judge specs; ``unjudged``: the key is allowed, as in an
    experiment spec, where selected queries without relevance labels are skipped unless it says "run")."""
    from superb.data.splits import SPLITS  # here: superb.data registers its data sets with ir_datasets

    path = "queries"
    if not isinstance(table, dict):
        raise SpecError(path, f"must be a table, got {type(table).__name__}")
    errors = Errors()  # its keys are independent: every bad one is reported at once
    errors.part(check_keys, table, path,
                optional={"split", "sample", "seed", "subset"} | ({"unjudged"} if unjudged else set()))

    def split() -> str:
        value = typed(table, "split", str, path, default="all")
        if value not in SPLITS:
            raise SpecError(f"{path}.split", f"{value!r} is not one of {', '.join(SPLITS)}")
        return value

    def sample() -> int | None:
        value = typed(table, "sample", int, path, default=None)
        if value is not None and value < 1:
            raise SpecError(f"{path}.sample", f"must be a positive number of queries, got {value}")
        return value

    def subset() -> tuple[str, ...] | None:
        value = typed(table, "subset", list, path, default=None)
        if value is not None and (not value or not all(isinstance(s, str) and s for s in value)):
            raise SpecError(f"{path}.subset", "must be a non-empty list of qids or query texts (strings)")
        return None if value is None else tuple(value)

    def skip() -> str:
        value = typed(table, "unjudged", str, path, default="skip")
        if value not in UNJUDGED:
            raise SpecError(f"{path}.unjudged", f"{value!r} is not one of {', '.join(UNJUDGED)} (skip: selected "
                                                "queries without relevance labels are not run; run: they are run, "
                                                "not evaluated)")
        return value

    parts = {"split": errors.part(split), "sample": errors.part(sample), "subset": errors.part(subset),
             "unjudged": errors.part(skip), "seed": errors.part(typed, table, "seed", int, path, default=0)}
    errors.raise_any()
    return QueriesSpec(**parts)


def _parse_evaluation(table: Any) -> EvaluationSpec:
    """The [evaluation] table; its keys are independent, so every bad one (and every bad measure) is reported at
    once (:class:`superb.errors.SpecErrors`)."""
    from superb.eval.measures import DEFAULT_MEASURES
    from superb.eval.stats import CORRECTIONS, TESTS
    from superb.eval.evaluate import VIEW_KINDS

    path = "evaluation"
    if not isinstance(table, dict):
        raise SpecError(path, f"must be a table, got {type(table).__name__}")
    if "condensed" in table:
        raise SpecError(f"{path}.condensed", "replaced by views: write views = [\"condensed\"] (or [\"full\", "
                                             "\"condensed\"] for both in one table)")
    check_keys(table, path, optional={"measures", "rel", "test", "correction", "alpha", "views", "n_resamples",
                                      "interval", "no_relevant"})
    errors = Errors()

    def choice(key: str, allowed: Iterable[str], default: str, why: str = "") -> str | None:
        def read() -> str:
            value = typed(table, key, str, path, default=default)
            if value not in allowed:
                raise SpecError(f"{path}.{key}", f"{value!r} is not one of {', '.join(allowed)}{why}")
            return value
        return errors.part(read)

    def measures_list() -> list:
        found = typed(table, "measures", list, path, default=list(DEFAULT_MEASURES))
        if not found or not all(isinstance(m, str) for m in found):
            raise SpecError(f"{path}.measures", "must be a non-empty list of ir_measures names, e.g. [\"nDCG@10\", "
                                                "\"P@5\"]")
        return found

    def alpha_value() -> float:
        value = typed(table, "alpha", (float, int), path, default=0.05)
        if not 0 < value < 1:
            raise SpecError(f"{path}.alpha", f"must be between 0 and 1, got {value}")
        return float(value)

    def resamples() -> int:
        value = typed(table, "n_resamples", int, path, default=10000)
        if value < 100:
            raise SpecError(f"{path}.n_resamples", f"must be at least 100, got {value}")
        return value

    def views_list() -> list:
        value = typed(table, "views", list, path, default=["full"])
        if not value or len(set(value)) != len(value) or not all(v in VIEW_KINDS for v in value):
            raise SpecError(f"{path}.views", f"expected a non-empty list of distinct views from {list(VIEW_KINDS)}, "
                                             f"got {value!r}")
        return value

    measures = errors.part(measures_list)
    rel = errors.part(typed, table, "rel", int, path, default=None)
    views = errors.part(views_list)
    parsed = errors.part(check_measures, measures, rel, views or ["full"], path) if measures is not None else None
    test = choice("test", TESTS, "t")
    correction = choice("correction", CORRECTIONS, "holm")
    alpha = errors.part(alpha_value)
    n_resamples = errors.part(resamples)
    interval = choice("interval", INTERVALS, "t")
    no_relevant = choice("no_relevant", NO_RELEVANT, "keep", " (keep: queries without a relevant document score 0, "
                                                             "as trec_eval)")
    errors.raise_any()
    return EvaluationSpec(
        measures=tuple(measures), rel=rel, test=test, correction=correction,
        alpha=alpha, views=tuple(views), n_resamples=n_resamples, interval=interval, no_relevant=no_relevant,
        parsed=parsed,
    )


def check_measures(names: list[str], rel: int | None, views: Iterable[str], path: str = "evaluation"):
    """Every measure parsed and computed once (on a tiny judged query) under every view, so that a measure that
    would fail evaluation (a typo such as nDCG@l0, P@0, which aborts pytrec_eval, a measure no installed provider
    computes, or one with no condensed form under views = ["condensed"]) is a SpecError when the spec is read:
    before any data is loaded or LLM call made, and under --dry-run. The data set's own threshold is not known yet;
    ``rel`` only decides which label the probe counts as relevant. Returns the parsed measures
    (superb.eval.measures.MeasureList), kept on the spec so that a run parses them once."""
    from superb.eval.evaluate import VIEW_KINDS, View
    from superb.eval.measures import check_computable, read_measures

    parsed = read_measures(names, path=f"{path}.measures")
    measures = parsed.at(rel)
    errors = Errors()  # a measure without a condensed form is reported once per view, all at once
    for view in views:
        if VIEW_KINDS[view]:  # judged_only: the measures' condensed forms
            condensed = errors.part(View(view, None, True).measures, measures)  # SpecError at evaluation.views
            if condensed is not None:
                errors.part(check_computable, condensed, names, f"{path}.measures", where=f" under the {view} view")
    errors.raise_any()
    return parsed


