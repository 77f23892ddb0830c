"""A spec's [[pipelines]]: each entry read and checked (name, first stage or input, rerank stages with every option,
baseline, compare), the references between entries, and the fuse weights against the score columns that come before
them; each entry's first error is collected, so a spec's pipeline errors are reported together."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from superb.errors import Errors, SpecError
from superb.options import baseline as options_baseline
from superb.options import check_keys, typed
from superb.pipelines.options import options_from_spec
from superb.pipelines.pipeline_spec import PipelineSpec
from superb.run.spec_names import NAME_RE, SYSTEM_NAME_ROOM, check_file_names, check_name_length, file_name
from superb.transformers.registry import check_stage, score_columns


def parse_pipelines(items: Any) -> tuple[PipelineSpec, ...]:
    """Every [[pipelines]] entry; each entry's first error is collected and reading goes on with the next entry, so a
    spec's pipeline errors come together (an entry that reads a broken one is not checked further)."""
    if not isinstance(items, list) or not items:
        raise SpecError("pipelines", "must be a non-empty array of tables ([[pipelines]] entries)")
    errors = Errors()
    seen: dict[str, PipelineSpec] = {}
    broken: set[str] = set()  # names of entries with an error: entries reading them are not checked further
    for i, table in enumerate(items):
        path = f"pipelines[{i}]"
        p = errors.part(_parse_pipeline, table, path, seen, broken)
        if p is None:
            if isinstance(table, dict) and isinstance(table.get("name"), str):
                broken.add(table["name"])
            continue
        seen[p.name] = p
    for p in seen.values():
        errors.part(check_name_length, file_name(p.name), f"{p.path}.name", room=SYSTEM_NAME_ROOM,
                    what="its gain plot gain_NAME.png")
    errors.part(check_file_names, [p.name for p in seen.values()], [f"{p.path}.name" for p in seen.values()])
    for p in seen.values():
        errors.part(_check_references, p, seen, broken)
    errors.raise_any()
    return tuple(seen.values())


def _parse_pipeline(table: Any, path: str, seen: dict[str, PipelineSpec], broken: set[str]) -> PipelineSpec | None:
    """One entry; its independent parts (name, first stage or input, each rerank stage, baseline, compare) are each
    checked, and all their errors are reported together (an entry reading a broken one still has its own stages
    checked)."""
    if not isinstance(table, dict):
        raise SpecError(path, f"must be a table, got {type(table).__name__}")
    errors = Errors()
    errors.part(check_keys, table, path, required={"name"},
                optional={"first_stage", "input", "rerank", "baseline", "compare"})
    name = errors.part(_name, table, path, seen, broken)
    has_fs, has_input = "first_stage" in table, "input" in table
    if has_fs == has_input:
        errors.found.append(SpecError(path, "give exactly one of 'first_stage' (a retrieval table) or 'input' (an "
                                            "earlier pipeline's name whose run this one reranks)"))
    first_stage = errors.part(_first_stage, table, path)
    source = errors.part(typed, table, "input", str, path, default=None)
    reads_broken = source is not None and source in broken
    if source is not None and not reads_broken and source not in seen:
        errors.found.append(SpecError(f"{path}.input", f"{source!r} names no earlier pipeline; known: "
                                                       f"{sorted(seen) or 'none'}"))
    rerank = errors.part(_rerank, table, path)
    if source is not None and rerank == []:
        errors.found.append(SpecError(f"{path}.rerank", f"pipeline {name!r} takes input {source!r} but reranks "
                                                        "nothing"))
    baseline = errors.part(options_baseline, table, path)
    compare = errors.part(typed, table, "compare", list, path, default=[])
    if compare is not None and (not all(isinstance(c, str) for c in compare) or len(set(compare)) != len(compare)):
        errors.found.append(SpecError(f"{path}.compare", f"expected a list of distinct pipeline names, got "
                                                         f"{compare!r}"))
    errors.raise_any()
    if reads_broken:
        broken.add(name)
        return None
    p = PipelineSpec(name=name, path=path, first_stage=first_stage, input=source, rerank=tuple(rerank),
                     baseline=baseline, compare=tuple(compare))
    _check_fuse_weights(p, seen)
    return p


def _name(table: dict, path: str, seen: Mapping[str, PipelineSpec], broken: set[str]) -> str:
    name = typed(table, "name", str, path)
    if not NAME_RE.match(name):
        raise SpecError(f"{path}.name", f"{name!r}: use letters, digits, spaces and _ . + > @ ( ) = , - only")
    if name in seen or name in broken:
        raise SpecError(f"{path}.name", f"{name!r} is used by an earlier pipeline; names must be unique")
    return name


def _first_stage(table: dict, path: str) -> dict | None:
    first_stage = typed(table, "first_stage", dict, path, default=None)
    if first_stage is not None and "run" in first_stage:  # a given run: its file is read and checked now
        from superb.trec.run_files import run_options  # here: it loads pandas, which reading a spec otherwise does not

        run_options(first_stage, f"{path}.first_stage")
    elif first_stage is not None:  # a retrieval table: its options checked now (its fields when the data set opens)
        options_from_spec({k: v for k, v in first_stage.items() if k != "expand"}, path=f"{path}.first_stage")
    return first_stage


def _rerank(table: dict, path: str) -> list[dict]:
    """The entry's rerank stages, each checked on its own (every stage's errors are reported)."""
    rerank = table.get("rerank", [])
    if isinstance(rerank, dict):
        rerank = [rerank]
    if not isinstance(rerank, list) or not all(isinstance(r, dict) for r in rerank):
        raise SpecError(f"{path}.rerank", "must be a table or an array of tables, each with a 'type'")
    errors = Errors()
    for j, r in enumerate(rerank):
        if not isinstance(r.get("type"), str):
            errors.found.append(SpecError(f"{path}.rerank[{j}].type", "missing: each reranker needs a type, e.g. "
                                                                      "\"pointwise\""))
            continue
        errors.part(check_stage, r, f"{path}.rerank[{j}]")  # every option, now: no data set or model is opened
    errors.raise_any()
    return rerank


def _check_references(p: PipelineSpec, seen: Mapping[str, PipelineSpec], broken: set[str]) -> None:
    """A pipeline's baseline and compare list name other pipelines (a broken one is not reported again)."""
    if p.baseline is not None and p.baseline not in seen and p.baseline not in broken:
        raise SpecError(f"{p.path}.baseline", f"{p.baseline!r} names no pipeline; known: {sorted(seen)}")
    if p.baseline == p.name:
        raise SpecError(f"{p.path}.baseline", "a pipeline cannot be its own baseline")
    for other in p.compare:
        if other in broken:
            continue
        if other not in seen or other == p.name:
            raise SpecError(f"{p.path}.compare", f"{other!r} is not another pipeline; known: {sorted(seen)}")
        if other == p.baseline:
            raise SpecError(f"{p.path}.compare", f"{other!r} is already this pipeline's baseline")


def _check_fuse_weights(p: PipelineSpec, earlier: Mapping[str, PipelineSpec]) -> None:
    """Each ``fuse`` stage's weight keys name a score column that comes before it: ``first_stage_score`` or the
    ``<type>_score`` / ``<stage>_score`` of an earlier stage of this pipeline or of its input chain, or the
    ``<stage>_blend_score`` of one with alpha < 1 (a key may drop the ``_score``, as the fuse reads it). Checked when
    the spec is read, so that a typo costs no first stage or LLM call (the fuse itself would fail only after the stages
    before it ran). Other weight errors are left to the fuse."""
    chain: list[PipelineSpec] = []
    q: PipelineSpec | None = p
    while q is not None:
        chain.append(q)
        q = earlier.get(q.input) if q.input else None
    columns = ["first_stage_score"]
    for stage in (r for q in reversed(chain[1:]) for r in q.rerank):
        columns += score_columns(stage)
    for j, stage in enumerate(p.rerank):
        weights = stage.get("weights")
        if stage.get("type") == "fuse" and isinstance(weights, Mapping):
            known = list(dict.fromkeys(c for c in columns if c))
            for key in weights:
                if str(key) not in known and f"{key}_score" not in known:
                    raise SpecError(f"{p.path}.rerank[{j}].weights.{key}",
                                    f"no earlier stage writes {key!r} or {str(key) + '_score'!r}; the columns "
                                    f"available here are {known} (a stage's column is <type>_score, or "
                                    "<stage>_score when it sets stage = \"NAME\", and <stage>_blend_score with "
                                    "alpha < 1; a key may drop the _score)")
        columns += score_columns(stage)


