"""A ``pt.Transformer`` class or factory named in a spec, built into a :class:`TransformerStage`.

Its keyword parameters are its spec options: a parameter annotated ``Annotated[T, parser]`` (superb.options) is read
by that parser, any other takes the TOML value as written, and a parameter without a default is required. A
factory that takes ``**kwargs`` (``pt.text.scorer``) is given every other key of the table as written. A
parameter named ``llm`` gets the experiment's LLM client, one named ``dataset`` the data set. Besides its own, the
stage takes ``top_k`` (rerank each query's top k; default: the whole list) and ``fields`` (the document fields put
in the ``text`` column it is given; default: the data set's prompt fields). Unknown keys are refused with the
allowed ones listed, before anything is built.
"""

from __future__ import annotations

import inspect
import typing
from typing import Any, Mapping

import pyterrier as pt

from superb.errors import SpecError
from superb.options import REQUIRED, Opt, check_keys, join, positive_int, str_list
from superb.transformers.base import product_text
from superb.transformers.transformer_stage import TransformerStage

_INJECTED = ("llm", "dataset")  # filled from the build context, never from the spec
_STAGE_OPTIONS = {"top_k": Opt(None, positive_int), "fields": Opt(None, str_list)}


def _as_is(value: Any, path: str) -> Any:
    return value


def factory_options(factory: Any) -> dict[str, Opt]:
    """The spec options a transformer class or factory declares in its signature (module docstring)."""
    try:
        signature = inspect.signature(factory)
        hints = typing.get_type_hints(factory.__init__ if inspect.isclass(factory) else factory, include_extras=True)
    except (TypeError, ValueError, NameError):
        return {}
    schema: dict[str, Opt] = {}
    for name, p in signature.parameters.items():
        if name in _INJECTED or p.kind not in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD):
            continue
        parsers = [m for m in getattr(hints.get(name), "__metadata__", ()) if callable(m)]
        schema[name] = Opt(REQUIRED if p.default is p.empty else p.default, parsers[0] if parsers else _as_is)
    return schema


def takes_any(factory: Any) -> bool:
    """Whether ``factory`` takes ``**kwargs``."""
    try:
        return any(p.kind is p.VAR_KEYWORD for p in inspect.signature(factory).parameters.values())
    except (TypeError, ValueError):
        return False


def build_transformer_stage(facts: Any, options: Mapping[str, Any], context: Any, path: str) -> TransformerStage:
    """The checked stage around the transformer ``facts.cls`` makes from ``options`` (module docstring)."""
    own = factory_options(facts.cls)
    schema = {**_STAGE_OPTIONS, **own}
    table = dict(options)
    if takes_any(facts.cls):  # **kwargs: the rest of the table goes to the factory as written
        own.update((k, Opt(v, _as_is)) for k, v in table.items() if k not in schema and k != "type")
        schema = {**_STAGE_OPTIONS, **own}
    check_keys(table, path, optional=["type", *schema], what=f"option for type {options.get('type')!r}")
    values = {}
    for key, opt in schema.items():
        if key in table:
            values[key] = opt.parse(table[key], join(path, key))
        elif opt.default is REQUIRED:
            raise SpecError(join(path, key), f"missing (required): {options.get('type')!r} takes it without a "
                                             "default")
        else:
            values[key] = opt.default
    kwargs = {k: values[k] for k in own}
    params = inspect.signature(facts.cls).parameters
    for name in _INJECTED:
        if name in params:
            kwargs[name] = getattr(context, name, None)
    try:
        inner = facts.cls(**kwargs)
    except SpecError:
        raise
    except (TypeError, ValueError) as exc:
        raise SpecError(path, f"{options.get('type')!r} refused its options: {type(exc).__name__}: {exc}") from None
    if not isinstance(inner, pt.Transformer):
        raise SpecError(f"{path}.type", f"{options.get('type')!r} returned {type(inner).__name__}, not a "
                                        "pt.Transformer: a factory named in a spec must return a transformer")
    text = None
    dataset = getattr(context, "dataset", None)
    if facts.needs_text and dataset is not None:
        fields = values["fields"]
        text = product_text({} if fields is None else {"fields": fields}, context, path)
    stage = TransformerStage(inner, type_name=facts.name, tag=path, top_k=values["top_k"], text=text)
    stage.calls_llm = facts.calls_llm  # a factory given the LLM client calls it: the dry run's ceiling says unknown
    return stage
