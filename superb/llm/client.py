"""``LLMClient``: the one way superb talks to a model, over any OpenAI-compatible endpoint.

Bounded concurrency (``concurrency`` requests in flight per endpoint), retries with exponential backoff and jitter
on 429/5xx/connection errors/timeouts (honouring Retry-After; the openai package's own retries are off so ours
are the only ones and are counted), a persistent response cache, coalescing (identical requests in flight at once
are sent once; the others wait for that answer and are counted as ``coalesced``), usage accounting per tag, and a
failure policy: ``on_failure="fail"`` raises LLMError, ``"record"`` returns ``Completion.failure(...)`` and counts it.

A circuit breaker (``Breaker``, superb.llm.failures) stops a run that cannot succeed, under either policy, with the
server's message: a 401, 403 or 404 (wrong key, no access, no such model or route) at any time, a 400 or 422 (a
request the endpoint rejects, e.g. a parameter it does not accept) before any call has succeeded, or
``BREAKER_FAILURES`` calls failed after their retries (e.g. 500s) with none succeeded yet. Once open, every further
call raises at once. A 400 after successful calls is about that one request: it is recorded like any other failure.

Async and sync callers both work: ``await client.acomplete(req)`` from any loop, ``client.complete_many(reqs)``
and ``client.gather_sync(coros)`` from synchronous code (a pt.Transformer), also inside Jupyter. All network work
runs on one private loop (see runner.py).
"""

from __future__ import annotations

import asyncio
import logging
import random
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

from superb.errors import LLMError
from superb.llm.cache import ResponseCache
from superb.llm.cache_rows import cache_key
from superb.llm.client_base import ClientBase
from superb.llm.config import LLMConfig
from superb.llm.failures import Breaker, classify
from superb.llm.types import ChatRequest, Completion
from superb.llm.usage import Usage
from superb.llm.wire import chat_body, parse_body

log = logging.getLogger(__name__)
MAX_BACKOFF_S = 60.0
MAX_RETRY_AFTER_S = 300.0


@dataclass
class _Endpoint:
    url: str
    in_flight: int = 0  # requests assigned here, waiting or sent
    sem: asyncio.Semaphore | None = None
    api: Any = None  # openai.AsyncOpenAI, created on the client's loop


class LLMClient(ClientBase):
    """``start``: for a config without base_urls (the embedded model), a function that starts the endpoint and
    returns the config with its URL; it is called on the first call the cache cannot answer (``ensure_endpoint``),
    so a run served entirely from the cache (replayed responses, imported batches) starts and downloads nothing."""

    def __init__(self, config: LLMConfig, *, cache: ResponseCache | None = None, usage: Usage | None = None,
                 start: Callable[[], LLMConfig] | None = None):
        super().__init__()
        if not config.base_urls and start is None:
            raise LLMError("LLMClient needs llm.base_urls; to use the embedded local model, open the client with "
                           "superb.llm.open_llm(config), which starts the server and fills in its URL")
        if not config.model:
            raise LLMError("LLMClient needs llm.model: the model id the endpoint serves")
        config.api_key()  # fail now, naming the variable, if a remote endpoint has no key (the value is not kept)
        self.config = config
        self.model = config.model
        self.cache = cache
        self.usage = usage if usage is not None else Usage()
        self.endpoints = [_Endpoint(url.rstrip("/")) for url in config.base_urls]
        self._next = 0
        self._start = start
        self._start_lock = threading.Lock()
        self.breaker = Breaker()

    def ensure_endpoint(self) -> tuple[str, ...]:
        """Start the endpoint now if it is started on demand (blocking; once); returns the endpoint URLs."""
        with self._start_lock:
            if not self.endpoints:
                self.config = self._start()
                self.endpoints = [_Endpoint(url.rstrip("/")) for url in self.config.base_urls]
        return tuple(e.url for e in self.endpoints)

    def __repr__(self) -> str:
        return f"LLMClient(model={self.model!r}, endpoints={[e.url for e in self.endpoints]}, usage={self.usage})"

    # --- endpoints ---------------------------------------------------------------------------------------------------
    def _pick(self) -> _Endpoint:
        """Least in-flight endpoint; ties go round-robin."""
        n = len(self.endpoints)
        self._next = (self._next + 1) % n
        order = self.endpoints[self._next:] + self.endpoints[: self._next]
        ep = min(order, key=lambda e: e.in_flight)
        if ep.api is None:
            import openai

            ep.sem = asyncio.Semaphore(self.config.concurrency)
            ep.api = openai.AsyncOpenAI(base_url=ep.url, api_key=self.config.api_key(), max_retries=0,
                                        timeout=self.config.timeout_s)
        return ep

    async def _aclose(self) -> None:
        for ep in self.endpoints:
            if ep.api is not None:
                await ep.api.close()
                ep.api = ep.sem = None

    # --- one request ---------------------------------------------------------------------------------------------------
    async def _fetch(self, request: ChatRequest) -> Completion:
        claims = getattr(self.cache, "claims", None)
        if claims is None:
            return await self._fetch_now(request)
        # another process on the same cache may be asking the same request: claim it first (superb/llm/claims.py)
        completion, by_other = await claims.fetch(cache_key(self.model, request), self.model, request,
                                                  lambda: self._fetch_now(request))
        if by_other:
            self.usage.record(request.tag, self.model, cache_hits=1, saved_prompt_tokens=completion.prompt_tokens,
                              saved_completion_tokens=completion.completion_tokens)
        if isinstance(getattr(self, "info", None), dict):
            self.info["claims"] = claims.summary()
        return completion

    async def _fetch_now(self, request: ChatRequest) -> Completion:
        completion = await self._call(request)
        if self.cache is not None:
            self.cache.put(self.model, request, completion)
        return completion

    def _kwargs(self, request: ChatRequest) -> dict[str, Any]:
        return chat_body(self.model, request)

    async def _call(self, request: ChatRequest) -> Completion:
        if not self.endpoints:  # the embedded server starts on the first call the cache could not answer
            await asyncio.to_thread(self.ensure_endpoint)
        kwargs = self._kwargs(request)
        attempts, waited = 0, 0.0
        while True:
            attempts += 1
            ep = self._pick()
            ep.in_flight += 1
            try:
                async with ep.sem:
                    if self.breaker.reason is not None:  # the run is stopping: no new attempt
                        raise LLMError(self.breaker.reason)
                    if self.stopping:  # a fault stops the run: the requests in flight settle, none is sent
                        raise LLMError("not sent: the run is stopping on an error")
                    start = time.perf_counter()
                    try:
                        async with _timeout(self.config.timeout_s + 1.0):
                            # The low-level post with the JSON text back: the same client, auth, error types and
                            # timeouts as chat.completions.create, without its per-call request transform and
                            # response model building (about 2 ms per call here; see bench/llm_client.py).
                            body = await ep.api.post("/chat/completions", cast_to=str, body=kwargs,
                                                     options={"timeout": self.config.timeout_s})
                        completion = parse_body(body, time.perf_counter() - start)
                        outcome = None
                    except Exception as e:  # classified below; anything unexpected is re-raised by classify
                        completion, outcome = None, classify(e)
                    waited += time.perf_counter() - start
            finally:
                ep.in_flight -= 1
            if completion is not None:
                self.breaker.success()
                self.usage.record(request.tag, self.model, calls=1, retries=attempts - 1, wait_s=waited,
                                  prompt_tokens=completion.prompt_tokens,
                                  completion_tokens=completion.completion_tokens,
                                  server_cached_tokens=completion.cached_prompt_tokens)
                return completion
            if not outcome.retryable or attempts > self.config.max_retries:
                break
            delay = self._delay(attempts, outcome.retry_after)
            log.info("retry %d/%d in %.2f s: %s, model %s, status %s", attempts, self.config.max_retries, delay,
                     ep.url, self.model, outcome.status)
            await asyncio.sleep(delay)
        self.usage.record(request.tag, self.model, calls=1, failures=1, retries=attempts - 1, wait_s=waited)
        message = (f"LLM call failed after {attempts} attempt(s): endpoint {ep.url}, model {self.model}, "
                   f"status {outcome.status}: {outcome.detail}")
        stop = self.breaker.failure(outcome.status, message)
        if stop is not None:
            raise LLMError(stop)
        if self.config.on_failure == "fail":
            raise LLMError(message)
        return Completion.failure(message)

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, MAX_RETRY_AFTER_S) + random.uniform(0, 0.05)
        base = min(MAX_BACKOFF_S, self.config.backoff_s * 2 ** (attempt - 1))
        return base * random.uniform(0.5, 1.0)


def _timeout(seconds: float):
    """asyncio.timeout (3.11+), or an equivalent for 3.10."""
    if hasattr(asyncio, "timeout"):
        return asyncio.timeout(seconds)

    class _Compat:  # pragma: no cover - python 3.10 only
        async def __aenter__(self):
            task = asyncio.current_task()
            self._handle = asyncio.get_running_loop().call_later(seconds, task.cancel)

        async def __aexit__(self, exc_type, exc, tb):
            self._handle.cancel()
            if exc_type is asyncio.CancelledError:
                raise asyncio.TimeoutError() from exc
            return False

    return _Compat()
