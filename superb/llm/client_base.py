"""``ClientBase``: what the live client (superb.llm.client), the dry run (superb.llm.dryrun) and the batch writer
(superb.llm.batch) share: the private event loop, the sync helpers, the config's temperature/seed overrides, the
response cache and the coalescing of identical requests in flight. A subclass answers ``_fetch``."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any, Awaitable, Coroutine, Iterable, Sequence, TypeVar

from superb.llm.cache import ResponseCache
from superb.llm.cache_rows import cache_key
from superb.llm.config import LLMConfig
from superb.llm.runner import LoopThread, gather_cancelling
from superb.llm.types import ChatRequest, Completion
from superb.llm.usage import Usage

T = TypeVar("T")
PROGRESS_MIN = 20  # complete_many shows a progress bar from this many requests


class ClientBase:
    """What LLMClient and DryRunClient share: the private loop and the sync helpers."""

    config: LLMConfig
    model: str
    usage: Usage
    cache: ResponseCache | None

    def __init__(self) -> None:
        self._runner = LoopThread()
        self._in_flight: dict[str, asyncio.Future] = {}  # cache key -> the answer being fetched (private loop only)
        self.stopping = False  # True while a fault's requests in flight settle (_gather_settling): none is sent

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
        """Run coroutines concurrently on the client's loop; results in order. The first exception cancels the rest,
        after the requests already sent have come back and been cached (no new one is sent meanwhile): a fault in one
        query never makes the next run pay again for answers this one received. A Ctrl-C cancels everything at once."""
        return self._runner.run(self._gather_settling(coros))

    async def _gather_settling(self, coros: Iterable[Awaitable[T]]) -> list[T]:
        tasks = [asyncio.ensure_future(c) for c in coros]
        try:
            return list(await asyncio.gather(*tasks))
        except Exception:  # one coroutine's fault: the others stop, their requests in flight settle
            self.stopping = True  # read by _complete (keep the request) and by the live client (send no new one)
            try:
                for t in tasks:
                    t.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
                pending = [t for t in self._in_flight.values() if not t.done()]
                if pending:
                    await asyncio.wait(pending, timeout=float(getattr(self.config, "timeout_s", 60.0)) + 1.0)
            finally:
                self.stopping = False
            raise
        except BaseException:  # cancelled (a Ctrl-C): everything goes, requests in flight too
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise

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
        # the fetch is a task of its own: a caller cancelled because another query failed (``stopping``) leaves its
        # request to come back and be cached (_gather_settling); any other cancellation (a Ctrl-C) takes it along
        fetch = self._in_flight[key] = asyncio.ensure_future(self._fetch(request))
        fetch.add_done_callback(lambda done: self._fetched(key, done))
        try:
            return await asyncio.shield(fetch)
        except asyncio.CancelledError:
            if not self.stopping:
                fetch.cancel()
            raise

    def _fetched(self, key: str, done: asyncio.Future) -> None:
        if self._in_flight.get(key) is done:
            del self._in_flight[key]
        if not done.cancelled():
            done.exception()  # retrieved: no "never retrieved" warning when its caller was cancelled

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
