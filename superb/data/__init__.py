"""superb.data: product search test collections behind one interface (superb.data.base.Dataset).

``load_dataset("chorus")`` (or the spec form ``load_dataset({"name": "chorus"})``) returns a Dataset; each loader
checks its own option keys (``load_dataset("local", docs=..., queries=..., qrels=...)``). Loaders:

  chorus            Chorus Icecat electronics, pinned upstream files fetched and sha256-checked (superb.data.chorus)
  esci              Amazon Shopping Queries, user-provided parquet files (superb.data.esci)
  wands             Wayfair WANDS, user-provided tab-separated files (superb.data.wands)
  superb-triplets   (query, product, label) triplets over ESCI products (superb.data.triplets)
  local             JSONL docs + TSV queries + TREC qrels (superb.data.local)
  irds              any ir_datasets collection by its id (superb.data.irds)
  trec-dl           TREC DL 2019/2020 passages: rank_llm's BM25 top-100 candidates, NIST qrels (superb.data.trec_dl)
  candidates        any rank_llm candidates file: its queries, passages and ranking, given qrels (superb.data.candidates)

More loaders (e.g. a generated benchmark folder) plug in with :func:`register_loader`.

Importing this package registers the data sets with ir_datasets (``pt.get_dataset("irds:superb/chorus")``; cheap:
no file is read until asked for). Importing superb or its other layers does not.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from superb.data.registry import register_all
from superb.errors import SpecError

if TYPE_CHECKING:
    from superb.data.base import Dataset

__all__ = ["load_dataset", "register_loader", "loader_names"]

# name -> "module:function" (imported on first use) or a callable(config, path) -> Dataset
_LOADERS: dict[str, str | Callable[[Mapping[str, Any], str], "Dataset"]] = {
    "chorus": "superb.data.chorus:load",
    "esci": "superb.data.esci:load",
    "wands": "superb.data.wands:load",
    "superb-triplets": "superb.data.triplets:load",
    "local": "superb.data.local:load",
    "trec-dl": "superb.data.trec_dl:load",
    "candidates": "superb.data.candidates:load",
    "irds": "superb.data.irds:load",
}


def register_loader(name: str, loader: str | Callable[[Mapping[str, Any], str], "Dataset"]) -> None:
    """Add a data set loader: ``loader(config, path) -> Dataset`` or its "module:function" name."""
    _LOADERS[name] = loader


def loader_names() -> list[str]:
    return sorted(_LOADERS)


def load_dataset(config: str | Mapping[str, Any], path: str = "dataset", **options: Any) -> "Dataset":
    """The data set named ``config`` (``"chorus"``) or described by it (a spec's [dataset] table, ``{"name":
    "chorus", ...}``); keyword ``options`` are the loader's option keys. Errors carry ``path``-prefixed keys."""
    if isinstance(config, str):
        config = {"name": config}
    if not isinstance(config, Mapping):
        raise SpecError(path, f"expected a data set name such as \"chorus\" or a table with a `name` key, got "
                              f"{type(config).__name__}")
    if options:
        both = sorted(set(options) & set(config))
        if both:
            raise SpecError(f"{path}.{both[0]}", "given both in the table and as a keyword argument; give it once")
        config = {**config, **options}
    name = config.get("name")
    if name not in _LOADERS:
        raise SpecError(f"{path}.name", f"unknown data set {name!r}; known: {loader_names()}")
    loader = _LOADERS[name]
    if isinstance(loader, str):
        module, _, function = loader.partition(":")
        loader = getattr(importlib.import_module(module), function)
    return loader(config, path)


def _register_irds() -> None:
    register_all()


_register_irds()
