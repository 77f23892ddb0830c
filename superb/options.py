"""The spec's option readers, on the ground floor: every table of a spec (the experiment, ``[dataset]``, ``[llm]``, a
first stage, a rerank stage, a judge) is checked with these, and this module imports nothing of superb but its errors.

- :func:`check_keys` is THE unknown-key check; :func:`typed` reads one typed key.
- A parser ``(value, key_path) -> value`` raises :class:`superb.errors.SpecError` naming that key path and what is
  allowed: :func:`positive_int`, :func:`non_negative_int`, :func:`unit_float`, :func:`number`, :func:`boolean`,
  :func:`str_list`, :func:`one_of` (a prompt template's name: superb.llm.prompts.template_name).
- A class declares its spec options ONCE, in its constructor's signature: a keyword parameter annotated
  ``Annotated[T, parser]`` (aliases :data:`PositiveInt`, :data:`Flag`, ... and :func:`OneOf`) is a spec option
  whose default is the parameter's default; :func:`constructor_options` reads them, following ``**kw`` into the
  parent class, as ir_measures declares a measure's parameters once. A parameter annotated ``Annotated[T,
  Expand(Other)]`` stands for ``Other``'s own options (a reranker's ``text`` for ProductText's ``fields``,
  ``text_tokens`` and ``guard``). :func:`read_options` checks a table against the schema.
"""

from __future__ import annotations

import inspect
import re
import typing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Callable

from superb.errors import Errors, SpecError, utf8_error

_MISSING = object()
_TOML_PLACE = re.compile(r"\s*\(at line (\d+), column (\d+)\)$|\s*\(at end of document\)$")


def read_toml(path: str | Path, what: str = "spec file", hint: str = "experiments/*.toml are examples") -> dict:
    """A TOML file (a spec, a ``--hypotheses`` file...) as a dict. A missing file, bytes that are not UTF-8 and TOML
    syntax errors are SpecErrors whose message starts ``FILE:LINE:COLUMN:`` (as a compiler's), never a traceback; a
    leading UTF-8 byte-order mark is dropped."""
    import tomllib

    path = Path(path)
    if not path.is_file():
        raise SpecError("", f"{what} {path} does not exist ({hint})")
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise SpecError("", str(utf8_error(path, column_first=True))) from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        found = _TOML_PLACE.search(message)
        if found and found.group(1):
            line, column = int(found.group(1)), int(found.group(2))
        else:  # at the end of the document
            lines = text.split("\n")
            line, column = len(lines), len(lines[-1]) + 1
        reason = _TOML_PLACE.sub("", message) if found else message
        raise SpecError("", f"{path}:{line}:{column}: not valid TOML: {reason} (the {what}; TOML's syntax: "
                            "https://toml.io)") from None


def join(path: str, key: str) -> str:
    """``path.key`` (``key`` alone at the top)."""
    return f"{path}.{key}" if path else str(key)


def check_keys(table: Any, path: str, *, required: Iterable[str] = (), optional: Iterable[str] = (),
               what: str = "key") -> dict:
    """THE unknown-key check of every spec table (experiment, judge, first stage, reranker, data set, [llm]).

    ``table`` must be a table holding only ``required`` and ``optional`` keys and every ``required`` one; else a
    SpecError at the key's path: ``pipelines[0].colour: unknown key; allowed keys: ['baseline', 'first_stage']``.
    ``what`` names an unknown key in the message ("option for a pointwise judge"). Returns the table."""
    if not isinstance(table, Mapping):
        raise SpecError(path, f"expected a table, found {type(table).__name__} {table!r}")
    allowed = sorted(set(required) | set(optional))
    for key in table:
        if key not in allowed:
            raise SpecError(join(path, key), f"unknown {what}; allowed keys: {allowed}")
    for key in sorted(required):
        if key not in table:
            raise SpecError(join(path, key), "missing (required)")
    return dict(table)


def typed(table: Mapping, key: str, kind: type | tuple[type, ...], path: str, default: Any = _MISSING,
          minimum: int | float | None = None) -> Any:
    """``table[key]`` checked against ``kind`` (and ``>= minimum``), or ``default`` when absent (no default: the key
    is required). TOML booleans are not numbers. Errors name the key path and what was found."""
    where = join(path, key)
    if key not in table:
        if default is _MISSING:
            raise SpecError(where, "missing (required)")
        return default
    value = table[key]
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if isinstance(value, bool) and bool not in kinds:  # TOML true/false are not numbers
        raise SpecError(where, f"expected {_kind_name(kinds)}, got a boolean")
    if not isinstance(value, kinds):
        raise SpecError(where, f"expected {_kind_name(kinds)}, got {type(value).__name__} {value!r}")
    if minimum is not None and value < minimum:
        raise SpecError(where, f"expected {_kind_name(kinds)} >= {minimum}, got {value!r}")
    return value


def _kind_name(kinds: tuple[type, ...]) -> str:
    names = {dict: "a table", list: "an array", str: "a string", int: "an integer", float: "a number", bool: "true/false"}
    return " or ".join(names.get(k, k.__name__) for k in kinds)


# ---- parsers: (value, key_path) -> value, or a SpecError naming the key and what is allowed ----------------------

def baseline(table: Mapping, path: str) -> str | None:
    """A pipeline's baseline by the spec's one rule, read the same way from a spec (superb.run.spec_pipelines) and
    from a results folder's provenance (superb.folder.run_folder): the pipeline ``baseline`` names, none for
    ``baseline = false``, else the ``input`` it reranks (a first stage has none)."""
    if "baseline" not in table:
        source = table.get("input")  # a bad input is its own key's error
        return source if isinstance(source, str) else None
    value = table["baseline"]
    if value is False:
        return None
    if not isinstance(value, str):
        raise SpecError(f"{path}.baseline", f"must be a pipeline name or false, got {value!r}")
    return value


def positive_int(value: Any, path: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise SpecError(path, f"expected an integer >= 1, got {value!r}")
    return value


def non_negative_int(value: Any, path: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise SpecError(path, f"expected an integer >= 0, got {value!r}")
    return value


def unit_float(value: Any, path: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= float(value) <= 1.0:
        raise SpecError(path, f"expected a number between 0 and 1, got {value!r}")
    return float(value)


def number(low: float, high: float | None = None) -> Callable[[Any, str], float]:
    """A parser of a number in ``[low, high]`` (``high`` None: no upper bound); NaN and booleans refused."""
    def parse(value: Any, path: str) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
            raise SpecError(path, f"expected a number, found {value!r}")
        if value < low or (high is not None and value > high):
            bound = f"between {low} and {high}" if high is not None else f">= {low}"
            raise SpecError(path, f"expected a number {bound}, found {value!r}")
        return float(value)

    return parse


def boolean(value: Any, path: str) -> bool:
    if not isinstance(value, bool):
        raise SpecError(path, f"expected true or false, got {value!r}")
    return value


def str_list(value: Any, path: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)) or not value or not all(isinstance(v, str) and v for v in value):
        raise SpecError(path, f"expected a non-empty list of field names, e.g. [\"title\"], got {value!r}")
    return tuple(value)


def one_of(*choices: str) -> Callable[[Any, str], str]:
    def parse(value: Any, path: str) -> str:
        if value not in choices:
            raise SpecError(path, f"expected one of {list(choices)}, got {value!r}")
        return value

    parse.choices = choices  # type: ignore[attr-defined]
    return parse


# ---- options declared once, in a constructor's signature ----------------------------------------------------------

PositiveInt = Annotated[int, positive_int]
NonNegativeInt = Annotated[int, non_negative_int]
UnitFloat = Annotated[float, unit_float]
Flag = Annotated[bool, boolean]
FieldNames = Annotated[tuple[str, ...] | None, str_list]
TopK = Annotated[int | None, positive_int]


def OneOf(*choices: str) -> Any:  # noqa: N802 - used as a type in annotations
    """``Annotated[str, one_of(*choices)]``: a spec option that takes one of ``choices``."""
    return Annotated[str, one_of(*choices)]


REQUIRED = object()  # the default of an option the table must give (a constructor parameter without a default)


@dataclass(frozen=True)
class Opt:
    """One allowed spec option: its default and a parser ``(value, key_path) -> value`` raising SpecError."""

    default: Any
    parse: Callable[[Any, str], Any]


@dataclass(frozen=True)
class Expand:
    """Annotation metadata: the parameter is built from ``cls``'s own spec options (``Annotated[ProductText | None,
    Expand(ProductText)]``: a reranker's ``text`` from ``fields``, ``text_tokens``, ``guard``)."""

    cls: type


def _declared(cls: type):
    """(parameter, its annotation metadata) of every keyword parameter of ``cls``'s constructors, the first class
    that names a parameter deciding; a ``**kw`` constructor goes on into the parent class's."""
    seen: set[str] = set()
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None:
            continue
        hints = typing.get_type_hints(init, include_extras=True)
        params = inspect.signature(init).parameters
        for name, p in params.items():
            if name in seen or p.kind not in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD) or name == "self":
                continue
            seen.add(name)
            yield p, getattr(hints.get(name), "__metadata__", ())
        if not any(p.kind is p.VAR_KEYWORD for p in params.values()):
            return


def constructor_options(cls: type) -> dict[str, Opt]:
    """The spec options ``cls`` declares in its constructor: each keyword parameter annotated ``Annotated[T,
    parser]``, its default the parameter's (none: a required option); an ``Expand`` parameter adds its class's
    options. A ``**kw`` constructor goes on into the parent class's; the first class that names a parameter decides
    (an unannotated parameter hides the parent's option of that name)."""
    schema: dict[str, Opt] = {}
    for p, metadata in _declared(cls):
        for meta in metadata:
            if isinstance(meta, Expand):
                schema.update((k, v) for k, v in constructor_options(meta.cls).items() if k not in schema)
            elif callable(meta):
                schema[p.name] = Opt(REQUIRED if p.default is p.empty else p.default, meta)
    return schema


def expanded(cls: type) -> dict[str, type]:
    """``{parameter: class}`` of ``cls``'s ``Expand`` parameters (following ``**kw`` as constructor_options)."""
    return {p.name: meta.cls for p, metadata in _declared(cls) for meta in metadata if isinstance(meta, Expand)}


# Options renamed because one name meant two things: old key -> (new key, why). An old key is refused with the new
# name when the new one is in the stage's schema (``expand`` keeps its own ``max_tokens``: the generation length).
RENAMED: dict[str, tuple[str, str]] = {
    "max_tokens": ("text_tokens", "the product-text budget per product in estimated tokens; max_tokens read as the "
                                  "generation length elsewhere"),
    "label": ("question", "the question of the second step: \"grade\", \"yesno\" or \"checklist\"; label is a "
                          "relevance label elsewhere"),
    "fusion": ("alpha", "the weight of the stage's own score, 1 - alpha on the min-max first-stage score, as the "
                        "bi-encoder calls it; a separate `fuse` stage blends named columns"),
}


def read_options(options: Mapping[str, Any], path: str, schema: Mapping[str, Opt]) -> dict[str, Any]:
    """Check ``options`` (a reranker's or judge's spec table) against ``schema``; unknown keys raise SpecError
    listing the allowed, and a renamed key (:data:`RENAMED`) names its new name."""
    if isinstance(options, Mapping):
        for old, (new, why) in RENAMED.items():
            if old in options and old not in schema and new in schema:
                raise SpecError(f"{path}.{old}", f"renamed to {new!r} ({why}): write {new} = {options[old]!r}")
    what = f"option for type {options.get('type')!r}" if isinstance(options, Mapping) else "option"
    errors = Errors()  # each key is independent: every wrong one is reported at once
    errors.part(check_keys, options, path, optional=["type", *schema], what=what)
    values: dict[str, Any] = {}
    for key, opt in schema.items():
        if opt.default is REQUIRED and key not in options:
            what = (opt.parse.__doc__ or "").strip().split("\n")[0]
            errors.found.append(SpecError(join(path, key), f"missing (required): {what}" if what else
                                          "missing (required)"))
            continue
        values[key] = errors.part(opt.parse, options[key], join(path, key)) if key in options else opt.default
    errors.raise_any()
    return values


def construct(cls: Any, path: str, *args: Any, **kw: Any) -> Any:
    """``cls(*args, **kw)`` with its errors as SpecErrors at ``path``: a nested SpecError's key goes under ``path``
    (``fields`` -> ``judge.fields``), a ValueError or FileNotFoundError is reported at ``path``."""
    try:
        return cls(*args, **kw)
    except SpecError as err:
        raise SpecError(join(path, err.path), str(err).split(": ", 1)[-1]) from None
    except (ValueError, FileNotFoundError) as err:
        raise SpecError(path, str(err)) from None


