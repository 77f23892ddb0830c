"""Judge specs: TOML files for `superb judge SPEC`, checked strictly (unknown keys rejected with key paths).

```toml
name = "judges_chorus"             # results/NAME/
description = "..."
seed = 0

[dataset]                          # superb.data.load_dataset(...)
name = "chorus"

[queries]                          # as in experiment specs: split / sample / seed / subset
sample = 10

[pool]                             # which (query, product) pairs are judged
source = "qrels"                   # qrels: human-judged pairs | ratings: pairs with individual ratings | first_stage
per_query = 10                     # at most this many pairs per query, a seeded sample (omit: all)
seed = 0
# first_stage = { engine = "terrier", model = "bm25", depth = 10 }   # only with source = "first_stage"

[llm]                              # superb.llm.LLMConfig.from_spec; absent: the embedded local model

[judge]                            # options shared by every variant (superb.judges.judge.build_judge); without
                                   # [judge] only the human ceiling is computed (data sets with ratings; no LLM)
type = "pointwise"
fields = ["title"]
text_tokens = 64                   # product-text budget per product, estimated tokens (formerly max_tokens: refused)

[[judge.variants]]                 # optional: several judges on the same pool; each overrides the shared options
name = "deliberated"
type = "deliberated"

[[judge.variants]]                 # a SCORING judge (superb.judges.scoring): a preset, or type + template + reading;
preset = "yesno_product"           # its score becomes a label through cut points fitted on the pool's DEV-split pairs
                                   # (superb.judges.studies.calibration_run); needs a data set with individual ratings
[[judge.variants]]
name = "ensemble"                  # the mean of earlier scoring variants' normalised scores, calibrated the same way
type = "ensemble"
members = ["yesno_product", "superb_product"]
normaliser = "rank"                # rank (default) | minmax

[calibration]                      # with scoring variants (defaults shown)
weights = "linear"                 # the weighted kappa the dev cut points maximise: linear | quadratic | none
bootstrap = 1000                   # query-bootstrap resamples of every 95% interval
folds = 5                          # dev cross-validation folds (the dev-cv rows)

[pairwise_study]                   # optional: the "check twice" table (superb.judges.studies.pairwise)
n_pairs = 200                      # differently graded pairs of the selected queries, seeded sample
seed = 0
choices = ["forced", "allow neither"]   # generated forms, each asked in both orders: 2 calls per pair each
fields = { name = ["title"], all = ["title", "class", "category", "description"] }   # default: per data set
split = "test"                     # all (default): the selected queries | dev | test: only those of that split
grades = "final"                   # final: the combined grade of the individual ratings | qrels (default: final
                                   # when the data set has ratings)
probability = true                 # also P(first preferred) from label probabilities in both orders
                                   # (superb.judges.studies.preference: precision/recall curve; 2 calls per pair)

[agreement]
rel = 2                            # threshold of the binary agreement (default: the data set's)
label_map = { "3" = 2 }            # judge label -> human label, when the scales differ (e.g. WANDS 0..2)

[label_study]                      # optional, needs [judge]: do the judge's labels change the conclusions?
runs = "results/chorus_first_stage"   # reuse the TREC runs of a `superb run` folder (relative to the current
                                   # directory); baselines from its provenance.json spec
select = ["PISA BM25", "PISA RM3 (fb_docs=10)"]   # optional: only these systems of the folder
# ... or run first stages on the selected queries (exactly one of runs / systems), each a table:
# [[label_study.systems]]  name = "RM3", first_stage = { engine = "pisa", model = "rm3" }, baseline = "BM25"
measures = ["nDCG@10", "P@10"]     # default; binary measures use [agreement] rel (else the data set's)
condensed = true                   # default: unjudged documents are removed from the runs (the judge labels only
                                   # the pool); false: they count as non-relevant
test = "t"                         # t | wilcoxon | randomization;  correction = "holm" | "bonferroni" | "none"
alpha = 0.05
n_resamples = 10000                # default: the randomization test's resamples (>= 100)
```

A BENCHMARK spec instead builds a small superlative benchmark (superb.judges.benchmark.build_benchmark) from the
selected queries: name, description, seed, [dataset], [queries], [llm] and

```toml
[benchmark]
depth = 5                          # pool: top `depth` products of the first stage per query
engine = "pisa"                    # first stage: terrier | pisa;  model = "bm25" | "rm3"
pool_query = "source"              # source | rewrite | both
judge = { type = "deliberated", fields = ["title"] }   # build_judge options (default: deliberated)
docs = "reference"                 # reference: list the pooled docnos only (docnos.txt; products stay with the
                                   # source data set) | copy: write their text to docs.jsonl
rel_threshold = 2
```
([judge], [pool], [pairwise_study], [label_study] and [agreement] are not allowed beside [benchmark].)
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from superb.errors import SpecError
from superb.options import check_keys, typed
from superb.errors import Errors
from superb.spec import parse_queries, read_toml

POOL_SOURCES = ("qrels", "ratings", "first_stage")
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_TOP = {"name", "description", "output", "seed", "dataset", "queries", "pool", "llm", "judge", "agreement",
        "pairwise_study", "label_study", "benchmark", "calibration"}
CHOICES = ("forced", "allow neither")
GRADES = ("final", "qrels")
CALIBRATION_WEIGHTS = ("linear", "quadratic", "none")
NORMALISERS = ("rank", "minmax")
ENSEMBLE_KEYS = {"name", "type", "members", "normaliser"}
LABEL_STUDY_KEYS = {"runs", "select", "systems", "measures", "condensed", "test", "correction", "alpha", "n_resamples"}
LABEL_STUDY_MEASURES = ("nDCG@10", "P@10")
BENCHMARK_KEYS = {"depth", "engine", "model", "pool_query", "judge", "docs", "rel_threshold"}
BENCHMARK_DOCS = ("reference", "copy")


@dataclass(frozen=True)
class PoolSpec:
    source: str = "qrels"
    per_query: int | None = None
    seed: int = 0
    first_stage: dict[str, Any] | None = None


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


@dataclass(frozen=True)
class CalibrationSpec:
    weights: str = "linear"
    bootstrap: int = 1000
    folds: int = 5


@dataclass(frozen=True)
class BenchmarkSpec:
    depth: int = 5
    engine: str = "pisa"
    model: str = "bm25"
    pool_query: str = "source"
    judge: dict[str, Any] = field(default_factory=lambda: {"type": "deliberated"})
    docs: str = "reference"
    rel_threshold: int = 2


@dataclass(frozen=True)
class JudgeSpec:
    name: str
    dataset: dict[str, Any]
    queries: Any  # superb.spec.QueriesSpec
    pool: PoolSpec
    llm: dict[str, Any] | None
    variants: tuple[tuple[str, dict[str, Any]], ...]  # (variant name, build_judge options)
    pairwise: dict[str, Any] | None = None  # {n_pairs, seed, choices, fields, split, grades, probability}
    rel: int | None = None
    label_map: dict[int, int] = field(default_factory=dict)
    description: str = ""
    output: str | None = None
    seed: int = 0
    source: Path | None = None
    label_study: LabelStudySpec | None = None
    benchmark: BenchmarkSpec | None = None
    calibration: CalibrationSpec = field(default_factory=CalibrationSpec)

    @property
    def scoring(self) -> tuple[tuple[str, dict[str, Any]], ...]:
        """The scoring variants (presets, readings, ensembles): calibrated on dev pairs, reported on test pairs."""
        return tuple(v for v in self.variants if is_scoring(v[1]))

    @property
    def generated(self) -> tuple[tuple[str, dict[str, Any]], ...]:
        """The variants whose label is the model's answer (pointwise, deliberated, listwise, pairwise judges)."""
        return tuple(v for v in self.variants if not is_scoring(v[1]))


def is_scoring(options: dict[str, Any]) -> bool:
    """A scoring judge's options: a preset, a reading, or an ensemble of scoring judges."""
    return "preset" in options or "reading" in options or options.get("type") == "ensemble"


def _keys(table: Any, path: str, allowed: set[str], required: set[str] = frozenset()) -> dict:
    return check_keys(table, path, required=required, optional=allowed)


def _int(table: dict, key: str, path: str, default: Any, minimum: int | None = None) -> Any:
    return typed(table, key, int, path, default=default, minimum=minimum)


def load_judge_spec(path: str | Path) -> JudgeSpec:
    raw = read_toml(path, what="judge spec", hint="see experiments/judges_chorus.toml")
    return parse_judge_spec(raw, source=Path(path))


def parse_judge_spec(raw: dict[str, Any], source: Path | None = None) -> JudgeSpec:
    """A judge spec read and checked before any data set or model is opened; the errors of its independent parts
    (name, [pool], [judge] and each of its variants, [calibration], [pairwise_study], ...) are reported together
    (superb.errors.SpecErrors)."""
    _keys(raw, "", _TOP, required={"name", "dataset"})
    errors = Errors()
    name = errors.part(_parse_name, raw.get("name"))
    for key in ("description", "output"):
        errors.part(typed, raw, key, str, "", default=None)
    errors.part(typed, raw, "dataset", dict, "")
    errors.part(typed, raw, "llm", dict, "", default=None)
    errors.part(_check_beside, raw)
    variants = errors.part(_parse_judge, raw["judge"]) if "judge" in raw else ()
    if variants is not None and "calibration" in raw and not any(is_scoring(o) for _, o in variants):
        errors.found.append(SpecError("calibration", "[calibration] applies to scoring judges (a variant with a "
                                      "preset, a reading or type = \"ensemble\"); this spec has none"))
    parts = {
        "queries": errors.part(parse_queries, raw.get("queries", {})),
        "pool": errors.part(_parse_pool, raw.get("pool", {})),
        "calibration": errors.part(_parse_calibration, raw.get("calibration", {})),
        "pairwise": errors.part(_parse_pairwise, raw["pairwise_study"]) if "pairwise_study" in raw else None,
        "seed": errors.part(_int, raw, "seed", "", 0),
        "label_study": errors.part(_parse_label_study, raw["label_study"]) if "label_study" in raw else None,
        "benchmark": errors.part(_parse_benchmark, raw["benchmark"]) if "benchmark" in raw else None,
    }
    agreement = errors.part(_parse_agreement, raw.get("agreement", {}))
    errors.raise_any()
    return JudgeSpec(name=name, dataset=dict(raw["dataset"]), llm=raw.get("llm"), variants=variants,
                     description=raw.get("description", ""), output=raw.get("output"), source=source, **parts,
                     **agreement)


def _parse_name(name: Any) -> str:
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise SpecError("name", f"{name!r} must be a plain name (letters, digits, _ . -); it names results/NAME")
    return name


def _check_beside(raw: dict[str, Any]) -> None:
    if "benchmark" in raw:
        beside = sorted({"judge", "pool", "pairwise_study", "label_study", "agreement"} & set(raw))
        if beside:
            raise SpecError(beside[0], f"[{beside[0]}] is not allowed beside [benchmark]: a benchmark spec builds a "
                                       "benchmark only (its judge is benchmark.judge); use a separate judge spec")
    if "label_study" in raw and "judge" not in raw:
        raise SpecError("label_study", "a label study compares the human labels with judge labels: add a [judge] "
                                       "table")


def _parse_pool(table: Any) -> PoolSpec:
    path = "pool"
    _keys(table, path, {"source", "per_query", "seed", "first_stage"})
    source = table.get("source", "qrels")
    if source not in POOL_SOURCES:
        raise SpecError(f"{path}.source", f"{source!r} is not one of {list(POOL_SOURCES)}")
    stage = table.get("first_stage")
    if (stage is None) != (source != "first_stage"):
        raise SpecError(f"{path}.first_stage", "give a first_stage table exactly when source = \"first_stage\"")
    if stage is not None and not isinstance(stage, dict):
        raise SpecError(f"{path}.first_stage", f"expected a table, found {stage!r}")
    return PoolSpec(source=source, per_query=_int(table, "per_query", path, None, 1),
                    seed=_int(table, "seed", path, 0), first_stage=stage)


def _parse_judge(table: Any) -> tuple[tuple[str, dict[str, Any]], ...]:
    path = "judge"
    if not isinstance(table, dict):
        raise SpecError(path, f"expected a table, found {type(table).__name__}")
    shared = {k: v for k, v in table.items() if k != "variants"}
    variants = table.get("variants")
    if variants is None:
        if is_scoring(shared) and shared.get("type") != "ensemble":
            return ((str(shared.get("preset", "judge")), _checked(shared, shared, {}, path)),)
        if "type" not in shared:
            raise SpecError(f"{path}.type", "required key is missing (pointwise | deliberated | listwise | pairwise)")
        return ((str(shared["type"]), _checked(shared, shared, {}, path)),)
    if not isinstance(variants, list) or not variants:
        raise SpecError(f"{path}.variants", "expected a non-empty array of tables ([[judge.variants]])")
    out: list[tuple[str, dict[str, Any]]] = []
    seen: set[str] = set()
    errors = Errors()  # each variant is checked; an ensemble after a refused variant is not (its members may be it)
    for i, v in enumerate(variants):
        vpath = f"{path}.variants[{i}]"
        if isinstance(v, dict) and v.get("type") == "ensemble" and errors.found:
            continue
        parsed = errors.part(_parse_variant, v, vpath, shared, out, seen)
        if parsed is not None:
            seen.add(parsed[0])
            out.append(parsed)
    errors.raise_any()
    return tuple(out)


def _parse_variant(v: Any, vpath: str, shared: dict, earlier: list, seen: set) -> tuple[str, dict[str, Any]]:
    if not isinstance(v, dict):
        raise SpecError(vpath, f"expected a table, found {type(v).__name__}")
    if v.get("type") == "ensemble":
        return _parse_ensemble(v, vpath, earlier, seen)
    options = {**shared, **{k: x for k, x in v.items() if k != "name"}}
    vname = v.get("name", options.get("preset", options.get("type")))
    if not isinstance(vname, str) or not _NAME_RE.match(vname):
        raise SpecError(f"{vpath}.name", f"{vname!r} must be a plain name; it names a results subfolder")
    if vname in seen:
        raise SpecError(f"{vpath}.name", f"{vname!r} is used twice; give each variant its own name")
    if "type" not in options and not is_scoring(options):
        raise SpecError(f"{vpath}.type", "required key is missing (here or in [judge])")
    return vname, _checked(options, v, shared, vpath)


def _checked(options: dict, own: dict, shared: dict, vpath: str) -> dict:
    """``options`` (a variant's own table ``own`` over the shared [judge] ``shared``) read now by its judge's reader
    (superb.judges.judge / superb.judges.scoring: no data set or model needed), so a bad option is refused when the
    spec is read; the error names the table that holds the key (``judge.KEY`` or ``judge.variants[i].KEY``)."""
    from superb.judges.judge import read_judge_options
    from superb.judges.scoring import read_scoring_options

    try:
        (read_scoring_options if is_scoring(options) else read_judge_options)(options, "judge")
    except SpecError as err:
        key = err.path[len("judge."):] if err.path.startswith("judge.") else ""
        where = "judge" if key.split(".")[0] in shared and key.split(".")[0] not in own else vpath
        raise SpecError(f"{where}.{key}" if key else where, str(err)[len(err.path) + 2:]) from None
    return options


def _parse_ensemble(v: dict, vpath: str, earlier: list, seen: set) -> tuple[str, dict[str, Any]]:
    """An ensemble variant: the mean of earlier SCORING variants' normalised scores
    (superb.judges.studies.calibration)."""
    _keys(v, vpath, ENSEMBLE_KEYS, required={"type", "members"})
    vname = v.get("name", "ensemble")
    if not isinstance(vname, str) or not _NAME_RE.match(vname):
        raise SpecError(f"{vpath}.name", f"{vname!r} must be a plain name; it names a results subfolder")
    if vname in seen:
        raise SpecError(f"{vpath}.name", f"{vname!r} is used twice; give each variant its own name")
    members = v["members"]
    scoring = [n for n, o in earlier if is_scoring(o) and o.get("type") != "ensemble"]
    if not isinstance(members, list) or len(members) < 2 or len(set(members)) != len(members):
        raise SpecError(f"{vpath}.members", f"expected at least two different variant names, found {members!r}")
    unknown = [m for m in members if m not in scoring]
    if unknown:
        raise SpecError(f"{vpath}.members", f"{unknown} are not scoring variants listed before the ensemble; "
                                            f"those are {scoring}")
    normaliser = v.get("normaliser", "rank")
    if normaliser not in NORMALISERS:
        raise SpecError(f"{vpath}.normaliser", f"{normaliser!r} is not one of {list(NORMALISERS)}")
    return vname, {"type": "ensemble", "members": list(members), "normaliser": normaliser}


def _parse_calibration(table: Any) -> CalibrationSpec:
    path = "calibration"
    _keys(table, path, {"weights", "bootstrap", "folds"})
    weights = table.get("weights", "linear")
    if weights not in CALIBRATION_WEIGHTS:
        raise SpecError(f"{path}.weights", f"{weights!r} is not one of {list(CALIBRATION_WEIGHTS)}")
    return CalibrationSpec(weights=weights, bootstrap=_int(table, "bootstrap", path, 1000, 1),
                           folds=_int(table, "folds", path, 5, 2))


def _parse_pairwise(table: Any) -> dict[str, Any]:
    from superb.data.splits import SPLITS

    path = "pairwise_study"
    _keys(table, path, {"n_pairs", "seed", "choices", "fields", "split", "grades", "probability", "pairs", "order"})
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
    return {"n_pairs": _int(table, "n_pairs", path, 1000, 1), "seed": _int(table, "seed", path, 0),
            "choices": tuple(choices), "fields": fields, "split": table.get("split", "all"),
            "grades": table.get("grades"), "probability": probability, "pairs": pairs_file, "order": order}


def _parse_agreement(table: Any) -> dict[str, Any]:
    path = "agreement"
    _keys(table, path, {"rel", "label_map"})
    mapping = table.get("label_map", {})
    if not isinstance(mapping, dict):
        raise SpecError(f"{path}.label_map", f"expected a table of judge label = human label, found {mapping!r}")
    label_map = {}
    for k, v in mapping.items():
        if not str(k).lstrip("-").isdigit() or not isinstance(v, int) or isinstance(v, bool):
            raise SpecError(f"{path}.label_map.{k}", f"expected an integer judge label = integer human label, "
                                                     f"found {k!r} = {v!r}")
        label_map[int(k)] = v
    return {"rel": _int(table, "rel", path, None), "label_map": label_map}


def _str_list(table: dict, key: str, path: str) -> tuple[str, ...] | None:
    if key not in table:
        return None
    value = table[key]
    if not isinstance(value, list) or not value or not all(isinstance(x, str) for x in value):
        raise SpecError(f"{path}.{key}", f"expected a non-empty list of strings, found {value!r}")
    if len(set(value)) != len(value):
        raise SpecError(f"{path}.{key}", f"lists a name twice: {value!r}")
    return tuple(value)


def _parse_label_study(table: Any) -> LabelStudySpec:
    from superb.eval.stats import CORRECTIONS, TESTS

    path = "label_study"
    _keys(table, path, LABEL_STUDY_KEYS)
    if ("runs" in table) == ("systems" in table):
        raise SpecError(f"{path}.runs", "give exactly one of runs (a `superb run` results folder) or systems "
                                        "(first stages to run on the selected queries)")
    if "runs" in table and not isinstance(table["runs"], str):
        raise SpecError(f"{path}.runs", f"expected the path of a results folder, found {table['runs']!r}")
    if "select" in table and "runs" not in table:
        raise SpecError(f"{path}.select", "select picks systems of a results folder: use it with runs")
    systems = []
    for i, s in enumerate(table.get("systems", [])):
        spath = f"{path}.systems[{i}]"
        _keys(s, spath, {"name", "first_stage", "baseline"}, required={"name", "first_stage"})
        if not isinstance(s["name"], str) or not s["name"]:
            raise SpecError(f"{spath}.name", f"expected a system name, found {s['name']!r}")
        if not isinstance(s["first_stage"], dict):
            raise SpecError(f"{spath}.first_stage", f"expected a table {{ engine, model, depth }}, found "
                                                    f"{s['first_stage']!r}")
        systems.append({"name": s["name"], "first_stage": dict(s["first_stage"]), "baseline": s.get("baseline")})
    if "systems" in table:
        if not isinstance(table["systems"], list) or len(systems) < 2:
            raise SpecError(f"{path}.systems", "expected an array of at least two tables (systems to order)")
        names = [s["name"] for s in systems]
        for i, s in enumerate(systems):
            if names.count(s["name"]) > 1:
                raise SpecError(f"{path}.systems[{i}].name", f"{s['name']!r} is used twice")
            if s["baseline"] is not None and s["baseline"] not in names:
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
    return LabelStudySpec(runs=table.get("runs"), select=_str_list(table, "select", path), systems=tuple(systems),
                          measures=_str_list(table, "measures", path) or LABEL_STUDY_MEASURES,
                          condensed=table.get("condensed", True), test=table.get("test", "t"),
                          correction=table.get("correction", "holm"), alpha=float(alpha), n_resamples=n_resamples)


def _parse_benchmark(table: Any) -> BenchmarkSpec:
    from superb.judges.benchmark import POOL_QUERIES

    path = "benchmark"
    _keys(table, path, BENCHMARK_KEYS)
    for key, allowed in (("engine", ("terrier", "pisa")), ("model", ("bm25", "rm3")), ("pool_query", POOL_QUERIES),
                         ("docs", BENCHMARK_DOCS)):
        if key in table and table[key] not in allowed:
            raise SpecError(f"{path}.{key}", f"{table[key]!r} is not one of {list(allowed)}")
    judge = table.get("judge", {"type": "deliberated"})
    if not isinstance(judge, dict) or "type" not in judge:
        raise SpecError(f"{path}.judge", f"expected a table of judge options with a type, e.g. "
                                         f"{{ type = \"deliberated\" }}, found {judge!r}")
    from superb.judges.judge import read_judge_options

    read_judge_options(judge, f"{path}.judge")  # refused when the spec is read, not after the first stage ran
    defaults = BenchmarkSpec()
    return BenchmarkSpec(depth=_int(table, "depth", path, defaults.depth, 1),
                         engine=table.get("engine", defaults.engine), model=table.get("model", defaults.model),
                         pool_query=table.get("pool_query", defaults.pool_query), judge=dict(judge),
                         docs=table.get("docs", defaults.docs),
                         rel_threshold=_int(table, "rel_threshold", path, defaults.rel_threshold, 1))
