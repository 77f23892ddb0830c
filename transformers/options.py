"""Strict readers for a reranker's or a judge's spec table, written once for every stage and judge.

A reranker or judge declares its options as ``{name: Opt(default, parser)}`` and calls :func:`read_options`; each
parser takes ``(value, key_path)`` and raises :class:`superb.errors.SpecError` naming that key path and what is
allowed. Unknown keys are refused with the list of allowed ones. :func:`minmax` is the one per-query normalisation
used wherever two score scales are blended, and :func:`blend` the one blend of a stage's own score with the first
stage (option ``alpha``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from superb.errors import SpecError


@dataclass(frozen=True)
class Opt:
    """One allowed spec option: its default and a parser ``(value, key_path) -> value`` raising SpecError."""

    default: Any
    parse: Callable[[Any, str], Any]


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
    from superb.spec import check_keys

    if isinstance(options, Mapping):
        for old, (new, why) in RENAMED.items():
            if old in options and old not in schema and new in schema:
                raise SpecError(f"{path}.{old}", f"renamed to {new!r} ({why}): write {new} = {options[old]!r}")
    what = f"option for type {options.get('type')!r}" if isinstance(options, Mapping) else "option"
    check_keys(options, path, optional=["type", *schema], what=what)
    return {key: opt.parse(options[key], f"{path}.{key}") if key in options else opt.default
            for key, opt in schema.items()}


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

    return parse


def template_name(value: Any, path: str) -> str:
    """The name of a prompt template under superb/llm/prompts/ (its file stem)."""
    from superb.llm.prompts import available

    names = available()
    if not isinstance(value, str) or value not in names:
        raise SpecError(path, f"expected the name of a prompt template, one of {names}, got {value!r}")
    return value


def construct(cls: Any, path: str, *args: Any, **kw: Any) -> Any:
    """``cls(*args, **kw)`` with its errors as SpecErrors at ``path``: a nested SpecError's key goes under ``path``
    (``fields`` -> ``judge.fields``), a ValueError or FileNotFoundError is reported at ``path``."""
    try:
        return cls(*args, **kw)
    except SpecError as err:
        raise SpecError(f"{path}.{err.path}", str(err).split(": ", 1)[-1]) from None
    except (ValueError, FileNotFoundError) as err:
        raise SpecError(path, str(err)) from None


def spec_error(path: str, error: ValueError) -> SpecError:
    """A constructor's ValueError as a SpecError at ``path`` (SpecErrors pass through)."""
    return error if isinstance(error, SpecError) else SpecError(path, str(error))


def minmax(values: Sequence[float], *, constant: float = 0.0) -> np.ndarray:
    """Min-max normalised to 0..1 (float64). A query whose values are all equal, or not finite in range, maps to
    ``constant`` everywhere: no preference (the bi-encoder's blend uses 1.0, the others 0.0; per query it only
    shifts every score alike, so the order is the same either way)."""
    v = np.asarray(values, dtype=np.float64)
    if not len(v):
        return v
    lo, hi = float(v.min()), float(v.max())
    if not hi - lo > 0 or not np.isfinite(hi - lo):
        return np.full_like(v, constant)
    return (v - lo) / (hi - lo)


def blend(own: Sequence[float], first_stage: Sequence[float], alpha: float, *, constant: float = 0.0) -> np.ndarray:
    """The one blend of a stage's own score with the first stage (option ``alpha``, ``Reranker.order_values``):
    ``alpha * own + (1 - alpha) * minmax(first_stage, constant=constant)`` per query, float64; alpha = 1 is ``own``
    itself. A non-finite own score stays as it is (it sorts last), whatever alpha."""
    own = np.asarray(own, dtype=np.float64)
    if alpha >= 1.0:
        return own.copy()
    with np.errstate(invalid="ignore"):  # 0 x -inf; replaced below
        mixed = alpha * own + (1.0 - alpha) * minmax(first_stage, constant=constant)
    return np.where(np.isfinite(own), mixed, own)
