"""Open the LLM a config asks for: an external endpoint, or the embedded local model started on demand.

    with open_llm(LLMConfig.from_spec(spec.llm)) as client:   # base_urls empty => embedded server
        client.complete_many(requests)

The client is the caller's for the duration; leaving the block closes the client, the cache and the server. The
embedded server starts on the first request the cache cannot answer, so a fully cached run starts no model.
"""

from __future__ import annotations

import logging
import os
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

from superb import paths
from superb.errors import LLMError
from superb.llm.cache import ResponseCache
from superb.llm.client import LLMClient
from superb.llm.config import LLMConfig
from superb.llm.dryrun import DryRunClient
from superb.llm.model import embedded_model_key, model_id
from superb.llm.model import resolve_model
from superb.llm.server import EmbeddedServer
from superb.llm.usage import Usage

log = logging.getLogger(__name__)


def check_table(table: dict[str, Any] | None, path: str = "llm") -> LLMConfig:
    """A spec's ``[llm]`` checked as opening it would check it (keys, types, ranges, an embedded model's name),
    without opening anything: for specs whose pipelines make no LLM call, whose [llm] is checked all the same."""
    config = LLMConfig.from_spec(table or {}, path=path)
    if config.embedded:
        embedded_model_key(config)
    return config


def open_cache(config: LLMConfig) -> ResponseCache | None:
    if config.cache == "off":
        return None
    return ResponseCache(config.cache_path or paths.llm_cache_path(), config.cache)


def connect(config: LLMConfig, *, usage: Usage | None = None) -> tuple[LLMClient, Callable[[], None]]:
    """(client, close). With base_urls empty the embedded server starts on the first call the cache cannot answer
    (``client.ensure_endpoint()`` starts it at once). Call close() when done."""
    stack = ExitStack()
    try:
        cache = open_cache(config)
        if cache is not None:
            stack.callback(cache.close)
        info: dict[str, Any] = {"cache": None if cache is None else {"path": str(cache.path), "mode": cache.mode}}
        start = None
        if config.embedded:
            key = embedded_model_key(config)  # a bad llm.model fails here, at open, not at the first call
            # Queue on the client rather than in the server, so queued requests do not run down their timeout.
            config = config.with_(model=model_id(config), concurrency=min(config.concurrency, config.n_parallel))
            info = {"model": config.model, "endpoints": [], **info, "embedded": True, "server_started": False,
                    "n_parallel": config.n_parallel, "threads": config.threads, "n_ctx": config.n_ctx,
                    "prompt_cache": config.prompt_cache}
            start = _embedded_starter(config, key, stack, info)
        else:
            info = {"model": config.model, "endpoints": list(config.base_urls), **info, "embedded": False}
        client = LLMClient(config, cache=cache, usage=usage, start=start)
        stack.callback(client.close)
        client.info = info  # updated in place when the embedded server starts
    except BaseException:
        stack.close()
        raise
    return client, stack.close


EMBEDDED_URL_ENV = "SUPERB_EMBEDDED_URL"


def running_embedded_server(alias: str) -> tuple[str, ...] | None:
    """The URLs of the embedded model already served by ``superb llm serve`` (SUPERB_EMBEDDED_URL: one URL, or several
    separated by commas, e.g. one one-thread server per core, which then share the load), each checked to serve
    ``alias``; None when the variable is unset. Serve once, run many specs: each spec then starts no server."""
    urls = [u.strip().rstrip("/") for u in os.environ.get(EMBEDDED_URL_ENV, "").split(",") if u.strip()]
    if not urls:
        return None
    import json
    import urllib.request

    for url in urls:
        try:
            with urllib.request.urlopen(f"{url}/models", timeout=10.0) as answer:
                listed = json.loads(answer.read())
        except (OSError, ValueError) as exc:
            raise LLMError(f"{EMBEDDED_URL_ENV}: no OpenAI-compatible server answers at {url}/models ({exc}); start "
                           f"one with `superb llm serve`, or unset {EMBEDDED_URL_ENV} to let superb start its own"
                           ) from None
        ids = {str(m.get("id")) for m in listed.get("data", []) if isinstance(m, dict)}
        if alias not in ids:
            raise LLMError(f"{EMBEDDED_URL_ENV}: {url} serves {sorted(ids)}, not the spec's embedded model {alias!r}; "
                           f"start `superb llm serve --model ...` with that model, or unset {EMBEDDED_URL_ENV}")
    return tuple(urls)


def _embedded_starter(config: LLMConfig, key: str, stack: ExitStack,
                      info: dict[str, Any]) -> Callable[[], LLMConfig]:
    """Starts the embedded server (resolving, and if need be downloading, the model file) when the client first needs
    it; a run answered entirely from the cache never does. The server stops with the client's other resources. With
    SUPERB_EMBEDDED_URL set, the model already served there is used instead (see running_embedded_server)."""

    def start() -> LLMConfig:
        served = running_embedded_server(config.model)
        if served is not None:
            # the serving process chose its own threads, context and slots: not this spec's (unknown here)
            info.update(server_started=False, endpoints=list(served), served_by=f"{EMBEDDED_URL_ENV} (superb llm serve)",
                        threads=None, n_ctx=None, n_parallel=None, prompt_cache=None)
            return config.with_(base_urls=served)

        path = resolve_model(key, config.model_path)
        server = stack.enter_context(EmbeddedServer(path, config.model, n_ctx=config.n_ctx,
                                                    n_parallel=config.n_parallel, threads=config.threads,
                                                    prompt_cache=config.prompt_cache))
        info.update(server_started=True, endpoints=[server.base_url], model_file=str(path),
                    startup_s=round(server.startup_s or 0.0, 2))
        return config.with_(base_urls=(server.base_url,))

    return start


@contextmanager
def open_llm(config: LLMConfig | None = None, *, usage: Usage | None = None) -> Iterator[LLMClient]:
    client, close = connect(config or LLMConfig(), usage=usage)
    try:
        yield client
    finally:
        close()


def describe(client: Any) -> dict[str, Any]:
    """What a results folder should record about the LLM: model, endpoints (no keys), cache, embedded file. The
    client's own dict: an embedded server started later (on the first cache miss) shows up in it."""
    info = getattr(client, "info", None)
    if not isinstance(info, dict):
        info = {}
    info.setdefault("model", getattr(client, "model", None))
    return info


def open_for_spec(table: dict[str, Any] | None, stack: ExitStack, *, dry_run: bool = False,
                  path: str = "llm") -> tuple[Any, dict[str, Any]]:
    """THE way `superb run` and `superb judge` open the LLM of a spec's ``[llm]`` table: (client, what the results
    record about it), entered on ``stack``.

    ``dry_run``: a DryRunClient that consults the response cache (opened read-only, never written; absent, off or
    refresh: no cache) and counts only the requests the cache cannot serve: those a real run would send."""
    config = LLMConfig.from_spec(table or {}, path=path)
    if not dry_run:
        client = stack.enter_context(open_llm(config))
        return client, describe(client)
    cache = None
    cache_file = Path(config.cache_path or paths.llm_cache_path())
    empty = cache_file.is_file() and cache_file.stat().st_size == 0
    if empty and config.cache in ("normal", "read-only"):  # opening it would make SQLite write a header: left alone
        log.warning("superb: the LLM response cache %s is an empty file (0 bytes): it serves no request, so every "
                    "request counts as a call; a real run takes it as a new cache (restore it first if it held "
                    "answers)", cache_file)
    elif config.cache in ("normal", "read-only") and cache_file.exists():  # a directory is refused, not skipped
        cache = stack.enter_context(ResponseCache(cache_file, "read-only"))
    client = stack.enter_context(DryRunClient(config, cache=cache))
    return client, {"model": client.model, "endpoint": "dry-run",
                    "cache": None if cache is None else {"path": str(cache.path), "mode": "read-only (dry run)"}}
