"""The study tables of a judge spec, read and checked (superb.judges.commands.spec has the spec's shape):
[calibration], [pairwise_study], [agreement], [label_study] and [benchmark]; unknown keys are refused with their
key path, as everywhere in superb's specs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from superb.errors import SpecError
from superb.options import check_keys, typed

CHOICES = ("forced", "allow neither")
GRADES = ("final", "qrels")
CALIBRATION_WEIGHTS = ("linear", "quadratic", "none")
LABEL_STUDY_KEYS = {"runs", "select", "systems", "measures", "condensed", "test", "correction", "alpha", "n_resamples",
                    "depth"}
LABEL_STUDY_MEASURES = ("nDCG@10", "P@10")
BENCHMARK_KEYS = {"depth", "engine", "model", "pool_query", "judge", "docs", "rel_threshold"}
BENCHMARK_DOCS = ("reference", "copy")


@dataclass(frozen=True)
class LabelStudySpec:
    runs: str | None = None  # a `superb run` results folder
    select: tuple[str, ...] | None = None  # systems of that folder (None: all)
    systems: tuple[dict[str, Any], ...] = ()  # {name, first_stage, baseline} run on the selected queries
    measures: tuple[str, ...] = LABEL_STUDY_MEASURES
    condensed: bool = True
    test: str = "t"
    correction: str = "holm"
    alpha: float = 0.05
    n_resamples: int = 10_000  # of the randomization test, as [evaluation] n_resamples
    depth: int | None = None  # judge the pooled top `depth` of every system (UMBRELA's study; superb.judges.pool)
    parsed: Any = field(default=None, compare=False, repr=False)  # superb.eval.measures.MeasureList, read once

    def measures_at(self, rel: int | None) -> list:
        """The measure objects at the binary threshold ``rel`` (known once the data set is loaded); the names were
        parsed when the spec was read."""
        from superb.eval.measures import read_measures

        parsed = self.parsed if self.parsed is not None else read_measures(self.measures, "label_study.measures")
        return parsed.at(rel)


@dataclass(frozen=True)
class CalibrationSpec:
    weights: str = "linear"
    bootstrap: int = 1000
    folds: int = 5
    fit_on: str | None = None  # a judge spec: its pool's human-labelled pairs fit the cut points (another collection)


@dataclass(frozen=True)
class BenchmarkSpec:
    depth: int = 5
    engine: str = "pisa"
    model: str = "bm25"
    pool_query: str = "source"
    judge: dict[str, Any] = field(default_factory=lambda: {"type": "deliberated"})
    docs: str = "reference"
    rel_threshold: int = 2


def parse_calibration(table: Any) -> CalibrationSpec:
    path = "calibration"
    check_keys(table, path, optional={"weights", "bootstrap", "folds", "fit_on"})
    weights = table.get("weights", "linear")
    if weights not in CALIBRATION_WEIGHTS:
        raise SpecError(f"{path}.weights", f"{weights!r} is not one of {list(CALIBRATION_WEIGHTS)}")
    return CalibrationSpec(weights=weights, bootstrap=typed(table, "bootstrap", int, path, default=1000, minimum=1),
                           folds=typed(table, "folds", int, path, default=5, minimum=2),
                           fit_on=typed(table, "fit_on", str, path, default=None))


def parse_pairwise(table: Any) -> dict[str, Any]:
    from superb.data.splits import SPLITS

    path = "pairwise_study"
    check_keys(table, path, optional={"n_pairs", "seed", "choices", "fields", "split", "grades", "probability",
                                      "pairs", "order"})
    if "pairs" in table and "n_pairs" in table:
        raise SpecError(f"{path}.n_pairs", "give either pairs (a file of pairs, asked as listed) or n_pairs (a seeded "
                                           "sample), not both")
    pairs_file = typed(table, "pairs", str, path, default=None)
    order = typed(table, "order", str, path, default="given" if pairs_file else "seeded")
    if order not in ("given", "seeded") or (order == "given" and not pairs_file):
        raise SpecError(f"{path}.order", f"{order!r}: expected \"given\" (a pairs file's docno_a shown first) or "
                                         "\"seeded\" (a seeded coin decides which product is shown first; sampled "
                                         "pairs always use it)")
    for key, allowed in (("split", SPLITS), ("grades", GRADES)):
        if key in table and table[key] not in allowed:
            raise SpecError(f"{path}.{key}", f"{table[key]!r} is not one of {list(allowed)}")
    probability = typed(table, "probability", bool, path, default=False)
    choices = table.get("choices", list(CHOICES))
    if not isinstance(choices, list) or (not choices and not probability) or any(c not in CHOICES for c in choices):
        raise SpecError(f"{path}.choices", f"expected a non-empty subset of {list(CHOICES)} (or [] with probability "
                                           f"= true), found {choices!r}")
    fields = table.get("fields")
    if fields is not None:
        if not isinstance(fields, dict) or not fields:
            raise SpecError(f"{path}.fields", f"expected a table of name = [field, ...], found {fields!r}")
        for k, v in fields.items():
            if not isinstance(v, list) or not v or not all(isinstance(f, str) for f in v):
                raise SpecError(f"{path}.fields.{k}", f"expected a non-empty list of field names, found {v!r}")
    return {"n_pairs": typed(table, "n_pairs", int, path, default=1000, minimum=1),
            "seed": typed(table, "seed", int, path, default=0),
            "choices": tuple(choices), "fields": fields, "split": table.get("split", "all"),
            "grades": table.get("grades"), "probability": probability, "pairs": pairs_file, "order": order}


def parse_agreement(table: Any) -> dict[str, Any]:
    path = "agreement"
    check_keys(table, path, optional={"rel", "label_map"})
    mapping = table.get("label_map", {})
    if not isinstance(mapping, dict):
        raise SpecError(f"{path}.label_map", f"expected a table of judge label = human label, found {mapping!r}")
    label_map = {}
    for k, v in mapping.items():
        if not str(k).lstrip("-").isdigit() or not isinstance(v, int) or isinstance(v, bool):
            raise SpecError(f"{path}.label_map.{k}", f"expected an integer judge label = integer human label, "
                                                     f"found {k!r} = {v!r}")
        label_map[int(k)] = v
    return {"rel": typed(table, "rel", int, path, default=None), "label_map": label_map}


def _str_list(table: dict, key: str, path: str) -> tuple[str, ...] | None:
    if key not in table:
        return None
    value = table[key]
    if not isinstance(value, list) or not value or not all(isinstance(x, str) for x in value):
        raise SpecError(f"{path}.{key}", f"expected a non-empty list of strings, found {value!r}")
    if len(set(value)) != len(value):
        raise SpecError(f"{path}.{key}", f"lists a name twice: {value!r}")
    return tuple(value)


def parse_label_study(table: Any) -> LabelStudySpec:
    from superb.eval.measures import read_measures
    from superb.eval.stats import CORRECTIONS, TESTS

    path = "label_study"
    check_keys(table, path, optional=LABEL_STUDY_KEYS)
    if "runs" not in table and "systems" not in table:
        raise SpecError(f"{path}.runs", "give runs (a `superb run` results folder), systems (first stages or run "
                                        "files to run on the selected queries), or both")
    if "runs" in table and not isinstance(table["runs"], str):
        raise SpecError(f"{path}.runs", f"expected the path of a results folder, found {table['runs']!r}")
    if "select" in table and "runs" not in table:
        raise SpecError(f"{path}.select", "select picks systems of a results folder: use it with runs")
    systems = []
    for i, s in enumerate(table.get("systems", [])):
        spath = f"{path}.systems[{i}]"
        check_keys(s, spath, required={"name", "first_stage"}, optional={"baseline"})
        if not isinstance(s["name"], str) or not s["name"]:
            raise SpecError(f"{spath}.name", f"expected a system name, found {s['name']!r}")
        if not isinstance(s["first_stage"], dict):
            raise SpecError(f"{spath}.first_stage", f"expected a table {{ engine, model, depth }}, found "
                                                    f"{s['first_stage']!r}")
        systems.append({"name": s["name"], "first_stage": dict(s["first_stage"]), "baseline": s.get("baseline")})
    if "systems" in table:
        if not isinstance(table["systems"], list) or len(systems) < (1 if "runs" in table else 2):
            raise SpecError(f"{path}.systems", "expected an array of at least two tables (systems to order), or one "
                                               "beside runs")
        names = [s["name"] for s in systems]
        for i, s in enumerate(systems):
            if names.count(s["name"]) > 1:
                raise SpecError(f"{path}.systems[{i}].name", f"{s['name']!r} is used twice")
            if s["baseline"] is not None and s["baseline"] not in names and "runs" not in table:
                raise SpecError(f"{path}.systems[{i}].baseline", f"{s['baseline']!r} is not one of {names}")
    for key, allowed in (("test", TESTS), ("correction", CORRECTIONS)):
        if key in table and table[key] not in allowed:
            raise SpecError(f"{path}.{key}", f"{table[key]!r} is not one of {list(allowed)}")
    if "condensed" in table and not isinstance(table["condensed"], bool):
        raise SpecError(f"{path}.condensed", f"expected true or false, found {table['condensed']!r}")
    alpha = table.get("alpha", 0.05)
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 < alpha < 1:
        raise SpecError(f"{path}.alpha", f"expected a number between 0 and 1, found {alpha!r}")
    n_resamples = table.get("n_resamples", 10_000)
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, int) or n_resamples < 100:
        raise SpecError(f"{path}.n_resamples", f"expected an integer of at least 100 (as [evaluation] n_resamples), "
                                               f"found {n_resamples!r}")
    depth = typed(table, "depth", int, path, default=None, minimum=1)
    measures = _str_list(table, "measures", path) or LABEL_STUDY_MEASURES
    return LabelStudySpec(runs=table.get("runs"), select=_str_list(table, "select", path), systems=tuple(systems),
                          depth=depth, measures=measures, parsed=read_measures(measures, f"{path}.measures"),
                          condensed=table.get("condensed", True), test=table.get("test", "t"),
                          correction=table.get("correction", "holm"), alpha=float(alpha), n_resamples=n_resamples)


def parse_benchmark(table: Any) -> BenchmarkSpec:
    from superb.judges.benchmark import POOL_QUERIES

    path = "benchmark"
    check_keys(table, path, optional=BENCHMARK_KEYS)
    for key, allowed in (("engine", ("terrier", "pisa")), ("model", ("bm25", "rm3")), ("pool_query", POOL_QUERIES),
                         ("docs", BENCHMARK_DOCS)):
        if key in table and table[key] not in allowed:
            raise SpecError(f"{path}.{key}", f"{table[key]!r} is not one of {list(allowed)}")
    judge = table.get("judge", {"type": "deliberated"})
    if not isinstance(judge, dict) or "type" not in judge:
        raise SpecError(f"{path}.judge", f"expected a table of judge options with a type, e.g. "
                                         f"{{ type = \"deliberated\" }}, found {judge!r}")
    from superb.judges.benchmark import label_judge_options
    from superb.judges.registry import read_judge_options

    read_judge_options(label_judge_options(judge), f"{path}.judge")  # refused when the spec is read
    defaults = BenchmarkSpec()
    return BenchmarkSpec(depth=typed(table, "depth", int, path, default=defaults.depth, minimum=1),
                         engine=table.get("engine", defaults.engine), model=table.get("model", defaults.model),
                         pool_query=table.get("pool_query", defaults.pool_query), judge=dict(judge),
                         docs=table.get("docs", defaults.docs),
                         rel_threshold=typed(table, "rel_threshold", int, path, default=defaults.rel_threshold,
                                             minimum=1))
