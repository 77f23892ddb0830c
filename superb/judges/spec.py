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

[[judge.variants]]                 # optional: several judges on the same pool; each overrides the shared options
name = "deliberated"
type = "deliberated"

[pairwise_study]                   # optional: the "check twice" table (superb.judges.pairwise_study)
n_pairs = 200                      # differently graded pairs of the selected queries, seeded sample
seed = 0
choices = ["forced", "allow neither"]
fields = { name = ["title"], all = ["title", "class", "category", "description"] }   # default: per data set

[agreement]
rel = 2                            # threshold of the binary agreement (default: the data set's)
label_map = { "3" = 2 }            # judge label -> human label, when the scales differ (e.g. WANDS 0..2)
```
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from superb.errors import SpecError

POOL_SOURCES = ("qrels", "ratings", "first_stage")
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_TOP = {"name", "description", "output", "seed", "dataset", "queries", "pool", "llm", "judge", "agreement",
        "pairwise_study"}
CHOICES = ("forced", "allow neither")


@dataclass(frozen=True)
class PoolSpec:
    source: str = "qrels"
    per_query: int | None = None
    seed: int = 0
    first_stage: dict[str, Any] | None = None


@dataclass(frozen=True)
class JudgeSpec:
    name: str
    dataset: dict[str, Any]
    queries: Any  # superb.spec.QueriesSpec
    pool: PoolSpec
    llm: dict[str, Any] | None
    variants: tuple[tuple[str, dict[str, Any]], ...]  # (variant name, build_judge options)
    pairwise: dict[str, Any] | None = None  # {n_pairs, seed, choices, fields}
    rel: int | None = None
    label_map: dict[int, int] = field(default_factory=dict)
    description: str = ""
    output: str | None = None
    seed: int = 0
    source: Path | None = None


def _keys(table: Any, path: str, allowed: set[str], required: set[str] = frozenset()) -> dict:
    if not isinstance(table, dict):
        raise SpecError(path, f"expected a table, found {type(table).__name__}")
    unknown = sorted(set(table) - allowed)
    if unknown:
        where = f"{path}.{unknown[0]}" if path else unknown[0]
        raise SpecError(where, f"unknown key(s) {unknown}; allowed keys: {sorted(allowed)}")
    missing = sorted(required - set(table))
    if missing:
        raise SpecError(f"{path}.{missing[0]}" if path else missing[0], "required key is missing")
    return table


def _int(table: dict, key: str, path: str, default: Any, minimum: int | None = None) -> Any:
    if key not in table:
        return default
    value = table[key]
    if not isinstance(value, int) or isinstance(value, bool) or (minimum is not None and value < minimum):
        bound = f" >= {minimum}" if minimum is not None else ""
        raise SpecError(f"{path}.{key}", f"expected an integer{bound}, found {value!r}")
    return value


def load_judge_spec(path: str | Path) -> JudgeSpec:
    path = Path(path)
    if not path.is_file():
        raise SpecError("", f"judge spec {path} does not exist (see experiments/judges_chorus.toml)")
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise SpecError("", f"{path} is not valid TOML: {exc}") from None
    return parse_judge_spec(raw, source=path)


def parse_judge_spec(raw: dict[str, Any], source: Path | None = None) -> JudgeSpec:
    from superb.spec import parse_queries  # the experiment spec's [queries] rules, shared

    _keys(raw, "", _TOP, required={"name", "dataset"})
    name = raw["name"]
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise SpecError("name", f"{name!r} must be a plain name (letters, digits, _ . -); it names results/NAME")
    for key in ("description", "output"):
        if key in raw and not isinstance(raw[key], str):
            raise SpecError(key, f"expected a string, found {raw[key]!r}")
    if not isinstance(raw["dataset"], dict):
        raise SpecError("dataset", f"expected a table, found {type(raw['dataset']).__name__}")
    if "llm" in raw and not isinstance(raw["llm"], dict):
        raise SpecError("llm", f"expected a table, found {type(raw['llm']).__name__}")
    return JudgeSpec(
        name=name, dataset=dict(raw["dataset"]), queries=parse_queries(raw.get("queries", {})),
        pool=_parse_pool(raw.get("pool", {})), llm=raw.get("llm"),
        variants=_parse_judge(raw["judge"]) if "judge" in raw else (),
        pairwise=_parse_pairwise(raw["pairwise_study"]) if "pairwise_study" in raw else None,
        description=raw.get("description", ""), output=raw.get("output"), seed=_int(raw, "seed", "", 0),
        source=source, **_parse_agreement(raw.get("agreement", {})))


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
        if "type" not in shared:
            raise SpecError(f"{path}.type", "required key is missing (pointwise | deliberated | listwise | pairwise)")
        return ((str(shared["type"]), shared),)
    if not isinstance(variants, list) or not variants:
        raise SpecError(f"{path}.variants", "expected a non-empty array of tables ([[judge.variants]])")
    out, seen = [], set()
    for i, v in enumerate(variants):
        vpath = f"{path}.variants[{i}]"
        if not isinstance(v, dict):
            raise SpecError(vpath, f"expected a table, found {type(v).__name__}")
        options = {**shared, **{k: x for k, x in v.items() if k != "name"}}
        vname = v.get("name", options.get("type"))
        if not isinstance(vname, str) or not _NAME_RE.match(vname):
            raise SpecError(f"{vpath}.name", f"{vname!r} must be a plain name; it names a results subfolder")
        if vname in seen:
            raise SpecError(f"{vpath}.name", f"{vname!r} is used twice; give each variant its own name")
        if "type" not in options:
            raise SpecError(f"{vpath}.type", "required key is missing (here or in [judge])")
        seen.add(vname)
        out.append((vname, options))
    return tuple(out)


def _parse_pairwise(table: Any) -> dict[str, Any]:
    path = "pairwise_study"
    _keys(table, path, {"n_pairs", "seed", "choices", "fields"})
    choices = table.get("choices", list(CHOICES))
    if not isinstance(choices, list) or not choices or any(c not in CHOICES for c in choices):
        raise SpecError(f"{path}.choices", f"expected a non-empty subset of {list(CHOICES)}, found {choices!r}")
    fields = table.get("fields")
    if fields is not None:
        if not isinstance(fields, dict) or not fields:
            raise SpecError(f"{path}.fields", f"expected a table of name = [field, ...], found {fields!r}")
        for k, v in fields.items():
            if not isinstance(v, list) or not v or not all(isinstance(f, str) for f in v):
                raise SpecError(f"{path}.fields.{k}", f"expected a non-empty list of field names, found {v!r}")
    return {"n_pairs": _int(table, "n_pairs", path, 1000, 1), "seed": _int(table, "seed", path, 0),
            "choices": tuple(choices), "fields": fields}


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
