"""``LLMClient``: the one way superb talks to a model, over any OpenAI-compatible endpoint.

Bounded concurrency (``concurrency`` requests in flight per endpoint), retries with exponential backoff and jitter
on 429/5xx/connection errors/timeouts (honouring Retry-After; the openai package's own retries are off so ours
are the only ones and are counted), a persistent response cache, coalescing (identical requests in flight at once
are sent once; the others wait for that answer and are counted as ``coalesced``), usage accounting per tag, and a
failure policy: ``on_failure="fail"`` raises LLMError, ``"record"`` returns ``Completion.failure(...)`` and counts it.

A circuit breaker (``_Breaker``) stops a run that cannot succeed, under either policy, with the server's message:
a 401, 403 or 404 (wrong key, no access, no such model or route) at any time, a 400 or 422 (a request the endpoint
rejects, e.g. a parameter it does not accept) before any call has succeeded, or ``BREAKER_FAILURES`` calls failed
after their retries (e.g. 500s) with none succeeded yet. Once open, every further call raises at once. A 400 after
successful calls is about that one request: it is recorded like any other failure.

Async and sync callers both work: ``await client.acomplete(req)`` from any loop, ``client.complete_many(reqs)``
and ``client.gather_sync(coros)`` from synchronous code (a pt.Transformer), also inside Jupyter. All network work
runs on one private loop (see runner.py).
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import threading
import time
from dataclasses import dataclass, replace
from typing import Any, Awaitable, Callable, Coroutine, Iterable, Sequence, TypeVar

from superb.errors import LLMError
from superb.llm.cache import ResponseCache
from superb.llm.cache_rows import cache_key
from superb.llm.config import LLMConfig
from superb.llm.runner import LoopThread, gather_cancelling
from superb.llm.types import ChatRequest, Completion, TokenLogprob
from superb.llm.usage import Usage

T = TypeVar("T")
log = logging.getLogger(__name__)
MAX_BACKOFF_S = 60.0
MAX_RETRY_AFTER_S = 300.0
PROGRESS_MIN = 20  # complete_many shows a progress bar from this many requests
BREAKER_FAILURES = 5  # failed calls (after retries) with no success yet that stop the run
FATAL_STATUSES = ("401", "403", "404")  # the endpoint refuses every request: stop at once
EARLY_FATAL_STATUSES = ("400", "422")  # a request shape the endpoint rejects: stop if nothing has succeeded yet


class _ClientBase:
    """What LLMClient and DryRunClient share: the private loop and the sync helpers."""

    config: LLMConfig
    model: str
    usage: Usage
    cache: ResponseCache | None

    def __init__(self) -> None:
        self._runner = LoopThread()
        self._in_flight: dict[str, asyncio.Future] = {}  # cache key -> the answer being fetched (private loop only)

    async def acomplete(self, request: ChatRequest) -> Completion:
        """One completion (or a counted failure under on_failure="record"). Awaitable from any event loop."""
        return await self._runner.delegate(self._complete(self._effective(request)))

    def complete(self, request: ChatRequest) -> Completion:
        return self._runner.run(self._complete(self._effective(request)))

    def complete_many(self, requests: Iterable[ChatRequest], *, desc: str | None = None) -> list[Completion]:
        """All requests, concurrently (bounded per endpoint), results in input order; a tqdm bar with ETA when many."""
        reqs = [self._effective(r) for r in requests]
        return self._runner.run(self._many(reqs, desc))

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run a coroutine (which may await acomplete) on the client's loop from synchronous code."""
        return self._runner.run(coro)

    def gather_sync(self, coros: Iterable[Awaitable[T]]) -> list[T]:
        """Run coroutines concurrently on the client's loop; results in order. The first exception cancels the rest."""
        return self._runner.gather(coros)

    async def _many(self, requests: Sequence[ChatRequest], desc: str | None) -> list[Completion]:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(requests), desc=desc or f"LLM {self.model}", unit="call",
                   disable=len(requests) < PROGRESS_MIN, leave=False)

        counts = {"cached": 0, "failed": 0}

        async def one(request: ChatRequest) -> Completion:
            completion = await self._complete(request)
            counts["cached"] += completion.from_cache
            counts["failed"] += completion.failed
            bar.set_postfix(counts, refresh=False)
            bar.update(1)
            return completion

        try:
            return await gather_cancelling(one(r) for r in requests)
        finally:
            bar.close()

    def _effective(self, request: ChatRequest) -> ChatRequest:
        """Apply the config's temperature/seed overrides (before the request is keyed or sent)."""
        changes: dict[str, Any] = {}
        if self.config.temperature is not None and request.temperature != self.config.temperature:
            changes["temperature"] = self.config.temperature
        if self.config.seed is not None and request.seed != self.config.seed:
            changes["seed"] = self.config.seed
        return replace(request, **changes) if changes else request

    def _cached(self, request: ChatRequest) -> Completion | None:
        if self.cache is None:
            return None
        hit = self.cache.get(self.model, request)
        if hit is not None:
            self.usage.record(request.tag, self.model, cache_hits=1, saved_prompt_tokens=hit.prompt_tokens,
                              saved_completion_tokens=hit.completion_tokens)
        return hit

    async def _complete(self, request: ChatRequest) -> Completion:
        """The cache, then coalescing: a request identical (same cache key) to one in flight is not sent again; it
        waits for that answer and is counted as coalesced. So concurrent duplicates get ONE answer, as a re-run
        served from the cache gives them, and a cached re-run orders ties exactly as the live run did."""
        hit = self._cached(request)
        if hit is not None:
            return hit
        key = cache_key(self.model, request)
        pending = self._in_flight.get(key)
        if pending is not None:
            completion = await asyncio.shield(pending)
            self.usage.record(request.tag, self.model, coalesced=1, saved_prompt_tokens=completion.prompt_tokens,
                              saved_completion_tokens=completion.completion_tokens)
            return completion
        pending = self._in_flight[key] = asyncio.get_running_loop().create_future()
        try:
            completion = await self._fetch(request)
        except BaseException as exc:
            if isinstance(exc, asyncio.CancelledError):
                pending.cancel()
            else:
                pending.set_exception(exc)
                pending.exception()  # retrieved: no "never retrieved" warning when nobody waited
            raise
        finally:
            del self._in_flight[key]
        pending.set_result(completion)
        return completion

    async def _fetch(self, request: ChatRequest) -> Completion:
        """Answer a request the cache could not serve (subclasses: call the model, or count the call)."""
        raise NotImplementedError

    async def _aclose(self) -> None:
        return None

    def close(self) -> None:
        """Close connections and stop the private loop. The cache is the caller's to close."""
        if self._runner.started and not self._runner.in_loop():
            self._runner.run(self._aclose())
        self._runner.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass
class _Endpoint:
    url: str
    in_flight: int = 0  # requests assigned here, waiting or sent
    sem: asyncio.Semaphore | None = None
    api: Any = None  # openai.AsyncOpenAI, created on the client's loop


class _Breaker:
    """Counts live successes and failures; says when a run cannot succeed (see the module docstring)."""

    def __init__(self) -> None:
        self.successes = 0
        self.failures = 0
        self.reason: str | None = None  # set once open: the message every later call raises

    def success(self) -> None:
        self.successes += 1

    def failure(self, status: str, message: str) -> str | None:
        """Record one failed call; return the error to raise when this failure opens the breaker."""
        self.failures += 1
        if self.reason is not None:
            return self.reason
        if status in FATAL_STATUSES:
            why = f"the endpoint refuses requests (status {status})"
        elif status in EARLY_FATAL_STATUSES and self.successes == 0:
            why = f"the endpoint rejected the first request(s) (status {status}) and none has succeeded"
        elif self.successes == 0 and self.failures >= BREAKER_FAILURES:
            why = f"the first {self.failures} calls all failed after their retries and none has succeeded"
        else:
            return None
        self.reason = (f"stopping the run: {why}, so every call would fail; fix the cause and run again (calls "
                       f"that succeeded are in the response cache unless llm.cache = \"off\"). Last failure: {message}")
        return self.reason


@dataclass
class _Attempt:
    """The outcome of one failed attempt."""

    status: str
    detail: str
    retryable: bool
    retry_after: float | None = None


class LLMClient(_ClientBase):
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
        self.breaker = _Breaker()

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
                    start = time.perf_counter()
                    try:
                        async with _timeout(self.config.timeout_s + 1.0):
                            # The low-level post with the JSON text back: the same client, auth, error types and
                            # timeouts as chat.completions.create, without its per-call request transform and
                            # response model building (about 2 ms per call here; see bench/llm_client.py).
                            body = await ep.api.post("/chat/completions", cast_to=str, body=kwargs,
                                                     options={"timeout": self.config.timeout_s})
                        completion = _parse(body, time.perf_counter() - start)
                        outcome = None
                    except Exception as e:  # classified below; anything unexpected is re-raised by _classify
                        completion, outcome = None, _classify(e)
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


def chat_body(model: str, request: ChatRequest) -> dict[str, Any]:
    """The JSON body of a /chat/completions request: what the live client sends and what a batch file holds."""
    kw: dict[str, Any] = {"model": model, "messages": request.openai_messages(),
                          "max_tokens": request.max_tokens, "temperature": request.temperature}
    if request.seed is not None:
        kw["seed"] = request.seed
    if request.logprobs:
        kw["logprobs"] = True
        if request.top_logprobs:
            kw["top_logprobs"] = request.top_logprobs
    if request.logit_bias:
        kw["logit_bias"] = {str(tok): bias for tok, bias in request.logit_bias}
    if request.stop:
        kw["stop"] = list(request.stop)
    return kw


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


class _Malformed(ValueError):
    """A 200 response that does not have the shape of a chat completion."""


def _classify(error: Exception) -> _Attempt:
    """Map an exception from one attempt to (status, retryable, Retry-After). Unknown errors are bugs: re-raised."""
    import openai

    if isinstance(error, openai.APIStatusError):
        status = error.status_code
        retryable = status in (408, 409, 429) or status >= 500
        return _Attempt(str(status), _server_message(error), retryable, _retry_after(error.response.headers))
    if isinstance(error, (openai.APITimeoutError, asyncio.TimeoutError, TimeoutError)):
        return _Attempt("timeout", f"no answer within the timeout ({type(error).__name__})", True)
    if isinstance(error, openai.APIConnectionError):
        return _Attempt("connection", _short(error.__cause__ or error), True)
    if isinstance(error, (openai.APIResponseValidationError, ValueError, _Malformed)):
        return _Attempt("malformed", f"malformed response body: {_short(error)}", False)
    raise error


def _retry_after(headers: Any) -> float | None:
    raw = headers.get("retry-after") if headers is not None else None
    if raw is None:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:  # an HTTP date: rare from model servers
        from email.utils import parsedate_to_datetime

        try:
            return max(0.0, parsedate_to_datetime(raw).timestamp() - time.time())
        except (TypeError, ValueError):
            return None


def _server_message(error: Any, limit: int = 300) -> str:
    """What the server said about an HTTP error: its JSON ``error.message`` (OpenAI, vLLM, llama.cpp all send one),
    else the body text; after the error type."""
    body = getattr(error, "body", None)
    said = None
    if isinstance(body, dict):
        inner = body.get("error", body)
        said = inner.get("message") if isinstance(inner, dict) else inner
        said = said or body.get("message") or body.get("detail")
    if not said:
        return _short(error, limit)
    text = f"{type(error).__name__}: server said: {said}"
    return text if len(text) <= limit else text[:limit] + "..."


def _short(error: BaseException, limit: int = 300) -> str:
    text = f"{type(error).__name__}: {error}"
    return text if len(text) <= limit else text[:limit] + "..."


def _parse(body: str, latency: float) -> Completion:
    """A chat.completion JSON body -> Completion (text, logprobs with top alternatives, tokens, server cache reuse)."""
    return completion_from_json(json.loads(body), latency)  # a JSONDecodeError (a ValueError): malformed


def completion_from_json(data: Any, latency: float = 0.0) -> Completion:
    """A parsed chat.completion object -> Completion; a ValueError when it does not have that shape."""
    try:
        choice = data["choices"][0]
        text = (choice.get("message") or {}).get("content")
        content = (choice.get("logprobs") or {}).get("content")
        logprobs = None if content is None else tuple(
            TokenLogprob(t["token"], float(t["logprob"]),
                         {a["token"]: float(a["logprob"]) for a in (t.get("top_logprobs") or [])})
            for t in content
        )
        usage = data.get("usage") or {}
        timings = data.get("timings")  # llama.cpp: prompt_n evaluated, cache_n reused from its prompt cache
        if isinstance(timings, dict) and "cache_n" in timings:
            cached = int(timings["cache_n"])
        else:
            cached = int((usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0)
        return Completion(text=text or "", logprobs=logprobs, prompt_tokens=int(usage.get("prompt_tokens") or 0),
                          completion_tokens=int(usage.get("completion_tokens") or 0), cached_prompt_tokens=cached,
                          latency_s=latency)
    except (KeyError, IndexError, TypeError, AttributeError) as e:
        raise _Malformed(f"not a chat completion ({type(e).__name__}: {e}): {str(data)[:200]!r}") from None
