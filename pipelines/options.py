"""First-stage options: defaults, allowed values, and validation against a spec table.

Every check raises :class:`superb.errors.SpecError` whose path names the offending key (``pipelines[0].first_stage.k1``)
and whose message lists what is allowed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from superb.errors import SpecError
from superb.options import check_keys, join, number, one_of, positive_int

ENGINES = ("terrier", "pisa")
MODELS = ("bm25", "rm3")

#: BM25 parameters used by both engines unless a spec says otherwise (Robertson's classic values, Terrier's
#: defaults). PISA's own defaults (k1=0.9, b=0.4) are NOT used, so the two engines rank with the same formula.
BM25_DEFAULTS = {"k1": 1.2, "b": 0.75}
#: RM3 parameters (Terrier's defaults, also PyTerrier's ``pt.rewrite.RM3``). ``fb_lambda`` is the weight of the
#: original query in the interpolation; ``1 - fb_lambda`` goes to the relevance model.
RM3_DEFAULTS = {"fb_docs": 3, "fb_terms": 10, "fb_lambda": 0.6}
DEPTH_DEFAULT = 100

#: Keys accepted in a spec's ``first_stage`` table.
FIRST_STAGE_KEYS = ("engine", "model", "depth", "fields", *BM25_DEFAULTS, *RM3_DEFAULTS)


@dataclass(frozen=True)
class FirstStageOptions:
    """Validated first-stage settings. ``fields`` is the tuple of document fields indexed, ``("text",)`` by default."""

    engine: str = "terrier"
    model: str = "bm25"
    depth: int = DEPTH_DEFAULT
    fields: tuple[str, ...] = ("text",)
    k1: float = BM25_DEFAULTS["k1"]
    b: float = BM25_DEFAULTS["b"]
    fb_docs: int = RM3_DEFAULTS["fb_docs"]
    fb_terms: int = RM3_DEFAULTS["fb_terms"]
    fb_lambda: float = RM3_DEFAULTS["fb_lambda"]


def _choice(value: Any, allowed: tuple[str, ...], key: str) -> str:
    """``one_of`` with the case folded (``engine = "PISA"`` is pisa)."""
    return one_of(*allowed)(value.lower() if isinstance(value, str) else value, key)


def _fields(value: Any, available: tuple[str, ...] | None, key: str) -> tuple[str, ...]:
    if value is None:
        return ("text",)
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)) or not value or not all(isinstance(f, str) for f in value):
        raise SpecError(key, f"expected a non-empty list of field names, found {value!r}")
    if len(set(value)) != len(value):
        raise SpecError(key, f"field names repeat in {list(value)}; list each field once")
    if available is not None:
        missing = [f for f in value if f not in available]
        if missing:
            raise SpecError(key, f"unknown field(s) {missing}; this data set has {list(available)}")
    return tuple(value)


def validate_options(
    *,
    engine: Any = "terrier",
    model: Any = "bm25",
    depth: Any = DEPTH_DEFAULT,
    fields: Any = None,
    bm25: Mapping[str, Any] | None = None,
    rm3: Mapping[str, Any] | None = None,
    available_fields: tuple[str, ...] | None = None,
    path: str = "first_stage",
) -> FirstStageOptions:
    """Check every option, name the key at fault, and return the resolved :class:`FirstStageOptions`."""
    engine = _choice(engine, ENGINES, join(path, "engine"))
    model = _choice(model, MODELS, join(path, "model"))
    depth = positive_int(depth, join(path, "depth"))
    chosen_fields = _fields(fields, available_fields, join(path, "fields"))
    bm25 = dict(bm25 or {})
    check_keys(bm25, path, optional=BM25_DEFAULTS, what="option")
    params = {**BM25_DEFAULTS, **bm25}
    k1 = number(0.0)(params["k1"], join(path, "k1"))
    b = number(0.0, 1.0)(params["b"], join(path, "b"))
    rm3 = dict(rm3 or {})
    check_keys(rm3, path, optional=RM3_DEFAULTS, what="option")
    if rm3 and model != "rm3":
        raise SpecError(join(path, sorted(rm3)[0]),
                        f"RM3 options {sorted(rm3)} need model = 'rm3', found model = {model!r}")
    fb = {**RM3_DEFAULTS, **rm3}
    return FirstStageOptions(
        engine=engine,
        model=model,
        depth=depth,
        fields=chosen_fields,
        k1=k1,
        b=b,
        fb_docs=positive_int(fb["fb_docs"], join(path, "fb_docs")),
        fb_terms=positive_int(fb["fb_terms"], join(path, "fb_terms")),
        fb_lambda=number(0.0, 1.0)(fb["fb_lambda"], join(path, "fb_lambda")),
    )


def options_from_spec(
    table: Mapping[str, Any], *, available_fields: tuple[str, ...] | None = None, path: str = "first_stage"
) -> FirstStageOptions:
    """Validate a spec's ``first_stage`` table ({engine, model, depth, fields, k1, b, fb_docs, fb_terms, fb_lambda})."""
    check_keys(table, path, optional=FIRST_STAGE_KEYS, what="option")
    return validate_options(
        engine=table.get("engine", "terrier"),
        model=table.get("model", "bm25"),
        depth=table.get("depth", DEPTH_DEFAULT),
        fields=table.get("fields"),
        bm25={k: table[k] for k in BM25_DEFAULTS if k in table},
        rm3={k: table[k] for k in RM3_DEFAULTS if k in table},
        available_fields=available_fields,
        path=path,
    )
