"""Which comparisons a table holds, and which of them are corrected together.

A COMPARISON is a row of the table: a system against another one under one view and measure. Its ``kind`` says why
it is there: "baseline" (the system's own baseline), "head-to-head" (a pipeline's ``compare`` list) or "hypothesis"
(a declared pair that is neither). Its ``role`` says what may be concluded from it:

- With ``[[hypotheses]]`` declared: every (system, against, measure, view) a hypothesis names is CONFIRMATORY;
  the correction runs over each declared family's tests only (every system x measure x view in it, one family across
  measures and views). Every other comparison is EXPLORATORY: its effect, interval and raw p are reported, it gets no
  correction and no significance mark, and adding or removing one never changes a confirmatory p or verdict.
- Without hypotheses (the default): every comparison is CORRECTED in a default family, per view and per measure:
  the systems tested against the same baseline form one family ("baseline:BM25"), and the comparisons of one
  pipeline's ``compare`` list form one family ("head-to-head:BM25 >> bi-encoder").

A comparison whose two systems agree on every query (e.g. P@20 of a top-20 reranker against its first stage, the
same by construction) has no test: NaN p, counted in no family, never significant.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

CONFIRMATORY, CORRECTED, EXPLORATORY = "confirmatory", "corrected", "exploratory"


@dataclass(frozen=True)
class Family:
    """A default family: kind "baseline" (``name`` is the baseline, every pair a system against it) or
    "head-to-head" (``name`` is the pipeline whose ``compare`` list gives the pairs, itself against each)."""

    kind: str
    name: str
    pairs: tuple[tuple[str, str], ...]  # (system, against)

    @property
    def label(self) -> str:
        return f"{self.kind}:{self.name}"


@dataclass(frozen=True)
class Hypothesis:
    """A declared confirmatory comparison: superb.run.spec.HypothesisSpec's fields, ``measures`` named as the table
    names them (``repr`` of the parsed measure, e.g. "P(rel=2)@5"; superb.run.results.evaluate maps the spec's names).
    ``measures`` and ``views`` None mean every one of the table's."""

    system: str
    against: str
    measures: tuple[str, ...] | None = None
    views: tuple[str, ...] | None = None
    family: str = "confirmatory"
    evidence: str = ""

    def covers(self, a: str, b: str, measure: str, view: str) -> bool:
        return ({a, b} == {self.system, self.against} and (self.measures is None or measure in self.measures)
                and (self.views is None or view in self.views))


@dataclass(frozen=True)
class Comparison:
    """One planned row: ``system`` against ``against`` (None: a system's own row, untested)."""

    system: str
    against: str | None
    kind: str  # "", "baseline", "head-to-head", "hypothesis"
    view: str
    measure: str
    role: str = ""  # "", CONFIRMATORY, CORRECTED, EXPLORATORY
    family: str = ""  # the correction family's label ("" for exploratory and untested rows)

    @property
    def group(self) -> tuple:
        """The tests corrected together: a declared family across measures and views; a default one per both."""
        return (self.family,) if self.role == CONFIRMATORY else (self.family, self.view, self.measure)


def families(baselines: Mapping[str, str | None], comparisons: Mapping[str, Sequence[str]] | None = None
             ) -> list[Family]:
    """Baseline families, then head-to-head families (one per pipeline with a ``compare`` list), each in order of
    first appearance."""
    out: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for system, base in baselines.items():
        if base is not None:
            out.setdefault(("baseline", base), []).append((system, base))
    for system, others in (comparisons or {}).items():
        for other in others:
            out.setdefault(("head-to-head", system), []).append((system, other))
    return [Family(kind, name, tuple(pairs)) for (kind, name), pairs in out.items()]


def plan(systems: Sequence[str], fams: Sequence[Family], hypotheses: Sequence[Hypothesis], views: Sequence[str],
         measures: Sequence[str]) -> list[Comparison]:
    """Every row of the table, per view and measure: each system (against its baseline, if any), then the
    head-to-head pairs, then the declared pairs that are neither. A declared pair takes its declared direction."""
    baseline_of = {s: f.name for f in fams if f.kind == "baseline" for s, _ in f.pairs}
    declared = bool(hypotheses)
    rows: list[Comparison] = []
    for view in views:
        for measure in measures:
            done: set[frozenset] = set()

            def add(system, against, kind, default_family):
                h = next((h for h in hypotheses if h.covers(system, against, measure, view)), None)
                if h is not None:
                    if kind != "baseline":  # the declared direction (a baseline pair is declared as the row is)
                        system, against = h.system, h.against
                    rows.append(Comparison(system, against, kind, view, measure, CONFIRMATORY,
                                           f"{CONFIRMATORY}:{h.family}"))
                elif declared:
                    rows.append(Comparison(system, against, kind, view, measure, EXPLORATORY))
                else:
                    rows.append(Comparison(system, against, kind, view, measure, CORRECTED, default_family))
                done.add(frozenset((system, against)))

            for system in systems:
                base = baseline_of.get(system)
                if base is None:
                    rows.append(Comparison(system, None, "", view, measure))
                else:
                    add(system, base, "baseline", f"baseline:{base}")
            for f in fams:
                if f.kind == "head-to-head":
                    for system, against in f.pairs:
                        if frozenset((system, against)) not in done:
                            add(system, against, "head-to-head", f.label)
            for h in hypotheses:
                if h.covers(h.system, h.against, measure, view) and frozenset((h.system, h.against)) not in done:
                    add(h.system, h.against, "hypothesis", "")
    return rows


def by_construction(pipelines, measures: Sequence) -> set[tuple[str, str, str]]:
    """(system, against, measure) whose values agree on every query by construction: both systems reorder the same
    ranking (their nearest common input) only inside its top k, and the measure counts the relevant documents of a
    top c with c >= k (P, R, Success): P@20 of a top-20 reranker equals its first stage's. ``pipelines``:
    superb.run.spec.PipelineSpec (name, input, rerank); a reranker without a ``top_k`` may change any rank."""
    by_name = {p.name: p for p in pipelines}

    def chain(name: str) -> list[tuple[str, float]]:
        """(ancestor, the largest top_k of the rerankers between name and it) for name and each of its inputs."""
        out, depth, node = [(name, 0.0)], 0.0, by_name.get(name)
        while node is not None and node.input is not None:
            ks = [r.get("top_k") for r in node.rerank]
            ok = all(isinstance(k, int) and not isinstance(k, bool) and k > 0 for k in ks)
            depth = max(depth, *ks) if ok and ks else float("inf")
            out.append((node.input, depth))
            node = by_name.get(node.input)
        return out

    cutoffs = {}
    for m in measures:
        if getattr(m, "NAME", None) in ("P", "R", "Success") and m.params.get("cutoff") is not None:
            cutoffs[repr(m)] = int(m.params["cutoff"])
    out = set()
    names = list(by_name)
    for a in names:
        up_a = dict(chain(a))
        for b in names:
            if a == b:
                continue
            common = [(n, max(k, up_a[n])) for n, k in chain(b) if n in up_a]
            if not common:
                continue
            depth = common[0][1]
            out |= {(a, b, m) for m, c in cutoffs.items() if c >= depth}
    return out
