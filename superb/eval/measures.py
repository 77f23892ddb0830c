"""Measure names from specs -> ir_measures measure objects, with the dataset's binary relevance threshold applied.

Measures are values (``P@5``, ``nDCG@10``, ``P(rel=2)@5``) as in ir_measures; ``repr(m)`` round-trips through
``ir_measures.parse_measure``, so the names written into result files can be read back.

The binary threshold: measures that count a document as relevant or not (P, R, AP, RR, Success, ...: those with a
``rel`` parameter) get ``rel=<threshold>`` unless the name already sets it. Graded measures (nDCG) keep the labels as
gains: SUPERB's nDCG uses the 0-3 labels, its P@k counts labels >= 2. So a spec's ``P@10`` is computed, and named in
every table, run file and pt.Experiment-style column, as ``P(rel=2)@10`` on a data set whose threshold is 2; the
renaming is logged once per process (logger ``superb.eval.measures``, INFO) and stated in the table's note ("Binary
measures ... count labels >= 2 as relevant").
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass

from superb.errors import Errors, SpecError

log = logging.getLogger(__name__)
_TOLD: set[tuple[str, str]] = set()  # (written name, name used) renamings already logged

DEFAULT_MEASURES: tuple[str, ...] = ("P@5", "P@10", "P@20", "nDCG@5", "nDCG@10", "nDCG@20")
"""The six measures of SUPERB's Table 4."""

JUDGED_AT_10 = "Judged@10"
"""Share of the top 10 that carry any label (judged); reported beside the table, not tested for significance."""

_EXAMPLES = "P@5, P(rel=2)@10, nDCG@10, R@100, AP, RR, Judged@10"


def _suggest(name: str) -> str:
    """' Did you mean Judged@10?' when only the case of the measure's name is wrong (names are case-sensitive)."""
    import ir_measures

    head = re.match(r"\s*([^\W\d]\w*)", name)
    if not head:
        return ""
    known: dict[str, str] = {}
    for key in ir_measures.measures.registry:  # first spelling wins: nDCG before its alias NDCG
        known.setdefault(key.lower(), key)
    right = known.get(head.group(1).lower())
    if right is None or right == head.group(1):
        return ""
    return f" Did you mean {right + name.strip()[len(head.group(1)):]!r}? (names are case-sensitive)"


def parse_measure(name: str, rel: int | None = None, path: str = "evaluation.measures"):
    """Parse one measure name; apply the binary threshold ``rel`` to measures that have a ``rel`` parameter and do not
    set it: ``parse_measure("P@10", rel=2)`` is ``P(rel=2)@10`` (logged once, INFO: 'measure P@10 is computed as
    P(rel=2)@10 ...')."""
    return _at_threshold(*_read_measure(name, path), rel)


def _read_measure(name: str, path: str) -> tuple:
    """(the name, its measure object as written, whether the name sets rel itself)."""
    import ir_measures

    if not isinstance(name, str) or not name.strip():
        raise SpecError(path, f"a measure must be a non-empty string such as 'nDCG@10', found {name!r}. "
                              f"Examples: {_EXAMPLES}")
    try:
        measure = ir_measures.parse_measure(name.strip())
    except (NameError, ValueError, SyntaxError, TypeError, AssertionError) as exc:  # ir_measures asserts on params
        raise SpecError(path, f"cannot parse measure {name!r} ({exc}).{_suggest(name)} Write measures the "
                              f"ir_measures way, e.g. {_EXAMPLES}") from exc
    _check_params(measure, name, path)
    # ir_measures drops parameters equal to their default (P(rel=1)@5 -> P@5): look at the written name too
    explicit = "rel" in measure.params or re.search(r"\brel\s*=", name) is not None
    return name, measure, explicit


def _at_threshold(name: str, measure, explicit: bool, rel: int | None):
    if rel is not None and "rel" in measure.SUPPORTED_PARAMS and not explicit:
        measure = measure(rel=rel)
        renamed = (name.strip(), repr(measure))
        if renamed[0] != renamed[1] and renamed not in _TOLD:
            _TOLD.add(renamed)
            log.info("measure %s is computed as %s: binary measures count labels >= %d as relevant (the data set's "
                     "threshold, [evaluation] rel); tables and run files name it %s", *renamed, rel, renamed[1])
    return measure


def _check_params(measure, name: str, path: str) -> None:
    """Parameters pytrec_eval cannot take. A cut-off of 0 is the dangerous one: trec_eval reads it as "negative" and
    pytrec_eval ABORTS the process (a C assertion, rc 134, nothing written), so it must never reach it."""
    unsupported = sorted(set(measure.params) - set(measure.SUPPORTED_PARAMS))
    if unsupported:
        what = "cut-off (@k)" if unsupported == ["cutoff"] else f"parameter(s) {unsupported}"
        raise SpecError(path, f"measure {name!r}: {measure.NAME} takes no {what}; its parameters are "
                              f"{sorted(measure.SUPPORTED_PARAMS) or 'none'}")
    cutoff = measure.params.get("cutoff")
    if cutoff is not None and (isinstance(cutoff, bool) or not isinstance(cutoff, int) or cutoff < 1):
        raise SpecError(path, f"measure {name!r} has the cut-off {cutoff!r}; a cut-off (after @) must be an integer "
                              f">= 1, e.g. {measure.NAME}@10")
    rel = measure.params.get("rel")
    if rel is not None and (isinstance(rel, bool) or not isinstance(rel, int) or rel < 1):
        raise SpecError(path, f"measure {name!r} has rel={rel!r}; rel (the smallest label counted as relevant) must "
                              f"be an integer >= 1, e.g. {measure.NAME}(rel=2)")


# A tiny judged query (labels 0..3, one unjudged and one unretrieved document) every measure is computed on once.
# (A numeric qid: gdeval, ERR's provider, reads no other.)
_PROBE_QRELS = (("1", "a", 3), ("1", "b", 1), ("1", "c", 0), ("1", "e", 2))
_PROBE_RUN = (("1", "a", 4.0), ("1", "d", 3.0), ("1", "c", 2.0), ("1", "b", 1.0))


def check_computable(measures: Iterable, names: Iterable[str], path: str = "evaluation.measures",
                     where: str = "", places: Iterable[int] | None = None) -> None:
    """Compute every measure once on a tiny judged query, with the providers evaluation uses (pt.Experiment calls
    ir_measures), so a measure no installed provider supports, or with parameters a provider rejects, is a SpecError
    at ``path[i]`` before any run, not after the LLM calls were paid for; every such measure is reported at once
    (:class:`superb.errors.SpecErrors`). ``where`` ends the message's subject (e.g. " under the condensed view");
    ``places``: each measure's index in the spec's list (default 0, 1, ...)."""
    import ir_measures

    qrels = [ir_measures.Qrel(*q) for q in _PROBE_QRELS]
    run = [ir_measures.ScoredDoc(*r) for r in _PROBE_RUN]
    measures, names = list(measures), list(names)
    places = list(places) if places is not None else list(range(len(measures)))
    errors = Errors()
    for i, measure, name in zip(places, measures, names):
        try:
            list(ir_measures.iter_calc([measure], qrels, run))
        except Exception as exc:  # noqa: BLE001 - any provider failure is the same user error: this measure
            errors.found.append(SpecError(f"{path}[{i}]", f"measure {name!r} cannot be computed{where} "
                                                          f"({type(exc).__name__}: {str(exc).strip()}). Measures "
                                                          f"that work here: {_EXAMPLES}"))
    errors.raise_any()


@dataclass(frozen=True)
class MeasureList:
    """A spec's measures, parsed and checked once, when the spec is read (:func:`read_measures`); the data set's
    binary threshold, known only once the data set is loaded, is applied by :meth:`at` without parsing again."""
    read: tuple[tuple, ...]  # (name, measure as written, name sets rel itself), in the spec's order
    path: str = "evaluation.measures"

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(name for name, _, _ in self.read)

    def at(self, rel: int | None) -> list:
        """The measure objects with ``rel`` applied to the binary measures that do not set it (None: ir_measures'
        default, 1). Two names that become one measure at this threshold (``P@5`` and ``P(rel=2)@5`` at rel 2)
        are a SpecError naming the second."""
        _check_rel(rel, self.path)
        measures, seen = [], set()
        for i, (name, written, explicit) in enumerate(self.read):
            measure = _at_threshold(name, written, explicit, rel)
            if measure in seen:
                raise SpecError(f"{self.path}[{i}]", f"measure {name!r} is listed twice (as {measure!r}); remove one")
            seen.add(measure)
            measures.append(measure)
        return measures


def _check_rel(rel, path: str) -> None:
    if rel is not None and (isinstance(rel, bool) or not isinstance(rel, int) or rel < 1):
        raise SpecError(path.rsplit(".", 1)[0] + ".rel" if "." in path else "rel",
                        f"the binary relevance threshold must be an integer >= 1, found {rel!r}")


def read_measures(names: Iterable[str] | None, path: str = "evaluation.measures") -> MeasureList:
    """The spec's measure names (default: SUPERB's six) parsed and checked, in order, without duplicates: a name
    that does not parse, has a cut-off or rel below 1, repeats, or that no installed provider computes (each is
    computed once on a tiny judged query) is a SpecError naming ``path[i]`` with examples, all reported at once."""
    if names is None:
        names = DEFAULT_MEASURES
    if isinstance(names, str):
        raise SpecError(path, f"expected a list of measure names, found the string {names!r}; "
                              f"write e.g. [\"{names}\"]")
    names = list(names)
    if not names:
        raise SpecError(path, f"the list of measures is empty; give at least one, e.g. {list(DEFAULT_MEASURES)}")
    read, seen, places = [], set(), []
    errors = Errors()  # every measure that does not parse, repeats or cannot be computed, reported at once
    for i, name in enumerate(names):
        found = errors.part(_read_measure, name, f"{path}[{i}]")
        if found is None:
            continue
        if found[1] in seen:
            errors.found.append(SpecError(f"{path}[{i}]", f"measure {name!r} is listed twice (as {found[1]!r}); "
                                                          "remove one"))
            continue
        seen.add(found[1])
        read.append(found)
        places.append(i)
    errors.part(check_computable, [m for _, m, _ in read], [n for n, _, _ in read], path, places=places)
    errors.raise_any()
    return MeasureList(tuple(read), path)


def parse_measures(names: Iterable[str] | None, rel: int | None, path: str = "evaluation.measures") -> list:
    """Measure objects for measure names (default: SUPERB's six), in order, without duplicates, with the binary
    threshold ``rel`` applied (``None`` keeps ir_measures' default, 1): :func:`read_measures` then
    :meth:`MeasureList.at`. A run parses its spec's measures once (``EvaluationSpec.parsed``) and applies the data
    set's threshold when it is known."""
    _check_rel(rel, path)
    return read_measures(names, path).at(rel)


def judged_measure(cutoff: int = 10):
    """ir_measures' ``Judged@cutoff``: the share of the top ``cutoff`` documents (or of all retrieved, when fewer)
    that carry a label for the query. Reported beside the effectiveness table, not tested."""
    if isinstance(cutoff, bool) or not isinstance(cutoff, int) or cutoff < 1:
        raise ValueError(f"cutoff must be a positive integer, found {cutoff!r}")
    return parse_measure(f"Judged@{cutoff}")


def measure_name(measure) -> str:
    """The canonical name of a measure object or name (``repr`` of the parsed measure)."""
    if isinstance(measure, str):
        return repr(parse_measure(measure))
    return repr(measure)
