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
# sample = 1000                    # or: a seeded, label-stratified sample of this many judged pairs (superb.judges.pool)
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

from superb.errors import Errors, SpecError
from superb.judges.commands.spec_studies import (BenchmarkSpec, CalibrationSpec, LabelStudySpec, parse_agreement,
                                                 parse_benchmark, parse_calibration, parse_label_study,
                                                 parse_pairwise)
from superb.judges.registry import read_judge_options
from superb.judges.studies.hypotheses import parse_hypotheses
from superb.options import check_keys, typed
from superb.run.spec import parse_queries, read_toml

POOL_SOURCES = ("qrels", "ratings", "first_stage")
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_TOP = {"description", "output", "seed", "queries", "pool", "llm", "judge", "agreement", "pairwise_study",
        "label_study", "benchmark", "calibration", "hypotheses"}  # beside the required name and dataset
JUDGE_TABLES = _TOP - {"description", "output", "seed", "queries", "llm", "hypotheses"}  # no experiment spec has them
NORMALISERS = ("rank", "minmax")
ENSEMBLE_KEYS = {"name", "normaliser"}  # beside the required type and members


def is_judge_spec(raw: dict[str, Any]) -> bool:
    """Whether a spec read from TOML is for `superb judge` (a table only judge specs have, and no [[pipelines]])."""
    return "pipelines" not in raw and bool(JUDGE_TABLES & set(raw))


@dataclass(frozen=True)
class PoolSpec:
    source: str = "qrels"
    per_query: int | None = None
    sample: int | None = None  # a seeded, label-stratified sample of the judged pairs with text (superb.judges.pool)
    seed: int = 0
    first_stage: dict[str, Any] | None = None


@dataclass(frozen=True)
class JudgeSpec:
    name: str
    dataset: dict[str, Any]
    queries: Any  # superb.run.spec.QueriesSpec
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
    hypotheses: tuple = ()  # superb.judges.studies.hypotheses.JudgeHypothesis: declared, confirmatory



def load_judge_spec(path: str | Path) -> JudgeSpec:
    raw = read_toml(path, what="judge spec", hint="see experiments/judges_chorus.toml")
    return parse_judge_spec(raw, source=Path(path))


def parse_judge_spec(raw: dict[str, Any], source: Path | None = None) -> JudgeSpec:
    """A judge spec read and checked before any data set or model is opened; the errors of its independent parts
    (name, [pool], [judge] and each of its variants, [calibration], [pairwise_study], ...) are reported together
    (superb.errors.SpecErrors)."""
    errors = Errors()  # an unknown or missing top-level key is one more error beside the others
    errors.part(check_keys, raw, "", required={"name", "dataset"}, optional=_TOP)
    name = errors.part(_parse_name, raw.get("name"))
    for key in ("description", "output"):
        errors.part(typed, raw, key, str, "", default=None)
    errors.part(typed, raw, "dataset", dict, "")
    errors.part(typed, raw, "llm", dict, "", default=None)
    errors.part(_check_beside, raw)
    variants = errors.part(_parse_judge, raw["judge"]) if "judge" in raw else ()
    parts = {
        "queries": errors.part(parse_queries, raw.get("queries", {})),
        "pool": errors.part(_parse_pool, raw.get("pool", {})),
        "calibration": errors.part(parse_calibration, raw.get("calibration", {})),
        "pairwise": errors.part(parse_pairwise, raw["pairwise_study"]) if "pairwise_study" in raw else None,
        "seed": errors.part(typed, raw, "seed", int, "", default=0),
        "label_study": errors.part(parse_label_study, raw["label_study"]) if "label_study" in raw else None,
        "benchmark": errors.part(parse_benchmark, raw["benchmark"]) if "benchmark" in raw else None,
        "hypotheses": errors.part(parse_hypotheses, raw["hypotheses"]) if "hypotheses" in raw else (),
    }
    agreement = errors.part(parse_agreement, raw.get("agreement", {}))
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
    check_keys(table, path, optional={"source", "per_query", "sample", "seed", "first_stage"})
    source = table.get("source", "qrels")
    if source not in POOL_SOURCES:
        raise SpecError(f"{path}.source", f"{source!r} is not one of {list(POOL_SOURCES)}")
    stage = table.get("first_stage")
    if (stage is None) != (source != "first_stage"):
        raise SpecError(f"{path}.first_stage", "give a first_stage table exactly when source = \"first_stage\"")
    if stage is not None and not isinstance(stage, dict):
        raise SpecError(f"{path}.first_stage", f"expected a table, found {stage!r}")
    sample = typed(table, "sample", int, path, default=None, minimum=1)
    if sample is not None and source == "first_stage":
        raise SpecError(f"{path}.sample", "a sample is drawn from human-judged pairs (source = \"qrels\" or "
                                          "\"ratings\"), stratified by their label")
    if sample is not None and "per_query" in table:
        raise SpecError(f"{path}.sample", "give either sample (a label-stratified sample of all pairs) or per_query, "
                                          "not both")
    return PoolSpec(source=source, per_query=typed(table, "per_query", int, path, default=None, minimum=1),
                    sample=sample, seed=typed(table, "seed", int, path, default=0), first_stage=stage)


def _parse_judge(table: Any) -> tuple[tuple[str, dict[str, Any]], ...]:
    path = "judge"
    if not isinstance(table, dict):
        raise SpecError(path, f"expected a table, found {type(table).__name__}")
    shared = {k: v for k, v in table.items() if k != "variants"}
    variants = table.get("variants")
    if variants is None:
        if shared.get("type") == "ensemble":
            raise SpecError(f"{path}.type", "an ensemble averages other judges: list them as [[judge.variants]]")
        if "type" not in shared and "preset" not in shared:
            raise SpecError(f"{path}.type", "required key is missing (pointwise | deliberated | listwise | pairwise, a "
                                            "judge of your own, or a preset)")
        return ((str(shared.get("preset", shared.get("type"))), _checked(shared, shared, {}, path)),)
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
    if "type" not in options and "preset" not in options:
        raise SpecError(f"{vpath}.type", "required key is missing (here or in [judge]): a judge type or a preset")
    return vname, _checked(options, v, shared, vpath)


def _checked(options: dict, own: dict, shared: dict, vpath: str) -> dict:
    """``options`` (a variant's own table ``own`` over the shared [judge] ``shared``) read now by the registry
    (superb.judges.registry: no data set or model needed), so a bad option is refused when the spec is read; the
    error names the table that holds the key (``judge.KEY`` or ``judge.variants[i].KEY``)."""
    try:
        read_judge_options(options, "judge")
    except SpecError as err:
        key = err.path[len("judge."):] if err.path.startswith("judge.") else ""
        where = "judge" if key.split(".")[0] in shared and key.split(".")[0] not in own else vpath
        raise SpecError(f"{where}.{key}" if key else where, str(err)[len(err.path) + 2:]) from None
    return options


def _parse_ensemble(v: dict, vpath: str, earlier: list, seen: set) -> tuple[str, dict[str, Any]]:
    """An ensemble variant: the mean of earlier variants' normalised scores (superb.judges.studies.calibration)."""
    check_keys(v, vpath, required={"type", "members"}, optional=ENSEMBLE_KEYS)
    vname = v.get("name", "ensemble")
    if not isinstance(vname, str) or not _NAME_RE.match(vname):
        raise SpecError(f"{vpath}.name", f"{vname!r} must be a plain name; it names a results subfolder")
    if vname in seen:
        raise SpecError(f"{vpath}.name", f"{vname!r} is used twice; give each variant its own name")
    members = v["members"]
    scoring = [n for n, o in earlier if o.get("type") != "ensemble"]
    if not isinstance(members, list) or len(members) < 2 or len(set(members)) != len(members):
        raise SpecError(f"{vpath}.members", f"expected at least two different variant names, found {members!r}")
    unknown = [m for m in members if m not in scoring]
    if unknown:
        raise SpecError(f"{vpath}.members", f"{unknown} are not judge variants listed before the ensemble; "
                                            f"those are {scoring}")
    normaliser = v.get("normaliser", "rank")
    if normaliser not in NORMALISERS:
        raise SpecError(f"{vpath}.normaliser", f"{normaliser!r} is not one of {list(NORMALISERS)}")
    return vname, {"type": "ensemble", "members": list(members), "normaliser": normaliser}


