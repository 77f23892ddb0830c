"""Open the LLM a config asks for: an external endpoint, or the embedded local model started on demand.

    with open_llm(LLMConfig.from_spec(spec.llm)) as client:   # base_urls empty => embedded server
        client.complete_many(requests)

The client is the caller's for the duration; leaving the block closes the client, the cache and the server.
"""

from __future__ import annotations

import os
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

from superb import paths
from superb.errors import SpecError
from superb.llm.cache import ResponseCache
from superb.llm.client import LLMClient
from superb.llm.config import LLMConfig
from superb.llm.usage import Usage


def embedded_model_key(config: LLMConfig) -> str:
    """Which embedded model a config means: llm.model when it names one ("qwen2.5-coder-1.5b"), else embedded_model."""
    from superb.llm.model import ALIASES

    if config.model is None or config.model_path:
        return config.embedded_model
    if config.model.lower() in ALIASES:
        return ALIASES[config.model.lower()]
    raise SpecError("llm.model", f"{config.model!r} is not an embedded model and llm.base_urls is empty. Set base_urls "
                                 f"to an endpoint serving it, or use one of: {', '.join(sorted(ALIASES))}")


def model_id(config: LLMConfig) -> str:
    """The model id requests carry (and the cache keys on). Embedded: the canonical alias of the pinned file, so
    "1.5b", "qwen2.5-coder-1.5b" and the default all share cache entries; an explicit file: llm.model or its stem."""
    if not config.embedded:
        return config.model
    explicit = config.model_path or os.environ.get("SUPERB_MODEL_PATH")
    if explicit:
        return config.model or Path(explicit).stem
    from superb.llm.model import MODELS

    return MODELS[embedded_model_key(config)].alias


def open_cache(config: LLMConfig) -> ResponseCache | None:
    if config.cache == "off":
        return None
    return ResponseCache(config.cache_path or paths.llm_cache_path(), config.cache)


def connect(config: LLMConfig, *, usage: Usage | None = None) -> tuple[LLMClient, Callable[[], None]]:
    """(client, close): starts the embedded server when base_urls is empty. Call close() when done."""
    stack = ExitStack()
    try:
        cache = open_cache(config)
        if cache is not None:
            stack.callback(cache.close)
        info: dict[str, Any] = {"cache": None if cache is None else {"path": str(cache.path), "mode": cache.mode}}
        if config.embedded:
            from superb.llm.model import resolve_model
            from superb.llm.server import EmbeddedServer

            alias = model_id(config)
            path = resolve_model(embedded_model_key(config), config.model_path)
            server = stack.enter_context(EmbeddedServer(path, alias, n_ctx=config.n_ctx, n_parallel=config.n_parallel,
                                                        threads=config.threads))
            # Queue on the client rather than in the server, so queued requests do not run down their timeout.
            config = config.with_(model=alias, base_urls=(server.base_url,),
                                  concurrency=min(config.concurrency, config.n_parallel))
            info.update(embedded=True, model_file=str(path), startup_s=round(server.startup_s or 0.0, 2),
                        n_parallel=config.n_parallel, threads=config.threads, n_ctx=config.n_ctx)
        else:
            info.update(embedded=False)
        client = LLMClient(config, cache=cache, usage=usage)
        stack.callback(client.close)
        client.info = {"model": config.model, "endpoints": list(config.base_urls), **info}
    except BaseException:
        stack.close()
        raise
    return client, stack.close


@contextmanager
def open_llm(config: LLMConfig | None = None, *, usage: Usage | None = None) -> Iterator[LLMClient]:
    client, close = connect(config or LLMConfig(), usage=usage)
    try:
        yield client
    finally:
        close()


def describe(client: Any) -> dict[str, Any]:
    """What a results folder should record about the LLM: model, endpoints (no keys), cache, embedded file."""
    info = dict(getattr(client, "info", {}) or {})
    info.setdefault("model", getattr(client, "model", None))
    return info
