"""The spec of the end-to-end `superb run` tests, written in one place: a local data set (tests/local_data.py's
``dataset_table``), BM25 on PISA, and BM25 >> a pointwise yes/no reranker of its top k titles (the fake OpenAI server
answers it with ``fakeserver.yes``). Each keyword changes one part; ``pipelines`` replaces both pipelines."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from local_data import dataset_table


def toml_value(value: Any) -> str:
    """A TOML value: a dict as an inline table, a list as an array, a str, number or bool as JSON (TOML reads it)."""
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {toml_value(v)}" for k, v in value.items()) + " }"
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return json.dumps(value)


def toml_lines(settings: dict[str, Any]) -> str:
    return "".join(f"{k} = {toml_value(v)}\n" for k, v in settings.items())


def bm25(depth: int = 10) -> dict[str, Any]:
    return {"name": "BM25", "first_stage": {"engine": "pisa", "model": "bm25", "depth": depth}}


def pointwise(name: str = "BM25 >> pointwise", top_k: int = 3, **options: Any) -> dict[str, Any]:
    """The yes/no pointwise reranker of BM25's top ``top_k`` titles (``options``: more reranker keys)."""
    return {"name": name, "input": "BM25",
            "rerank": [{"type": "pointwise", "variant": "yesno", "top_k": top_k, "fields": ["title"], **options}]}


def write_spec(folder: Path, *, name: str, llm: dict[str, Any] | None = None, top_k: int = 3,
               reranked: str = "BM25 >> pointwise", pipelines: list[dict[str, Any]] | None = None,
               evaluation: dict[str, Any] | None = None, queries: dict[str, Any] | None = None,
               description: str | None = None, file: str = "spec.toml") -> Path:
    """Writes ``folder/file`` reading the data set in ``folder``. ``evaluation`` defaults to nDCG@10 (``{}``: no
    [evaluation]); ``llm`` and ``queries`` are written when given (``{}``: an empty table)."""
    top = {"name": name, **({"description": description} if description is not None else {})}
    evaluation = {"measures": ["nDCG@10"]} if evaluation is None else evaluation
    tables = [f"[{header}]\n{toml_lines(settings)}" for header, settings in
              (("queries", queries), ("evaluation", evaluation or None), ("llm", llm)) if settings is not None]
    pipelines = [bm25(), pointwise(reranked, top_k)] if pipelines is None else pipelines
    path = folder / file
    path.write_text(toml_lines(top) + dataset_table(folder) + "\n" + "".join(tables)
                    + "".join(f"[[pipelines]]\n{toml_lines(p)}" for p in pipelines))
    return path
