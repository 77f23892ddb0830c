"""``DryRunClient``: the LLMClient interface without a model. It counts the calls a run would make and estimates
their prompt tokens, so a spec can be costed before it is run.

Each request it does not find in the cache is counted in Usage (calls, dry_run, prompt_tokens estimated,
completion_tokens = max_tokens as an upper bound) and answered with a placeholder ``Completion`` that has
failed=True and error="dry-run": callers take their counted fallback path, as for any failed call. Cached
requests are served from the cache as usual (they would cost nothing), a request identical to one in flight is
coalesced as the real client does (superb.llm.client), and a request identical to one counted earlier in this dry
run is counted as coalesced, not as a call (the real run caches the first answer and serves the repeat from it).
So the count is what the real run would send, for rerankers whose questions do not depend on the answers; for
those whose questions do (``Reranker.calls_depend_on_answers``: setwise heap, pairwise sort or sliding), the
count follows the path the placeholder answers (failed calls, each reranker's counted fallback) take through the
search, which real answers may shorten or lengthen: an estimate, not a bound (``superb run --dry-run`` says so).

Prompt tokens: the server's /tokenize when ``tokenize_url`` is given (e.g. http://127.0.0.1:PORT, llama.cpp),
else characters / 4; plus 4 tokens per message for the chat template.
"""

from __future__ import annotations

import asyncio
import json
import urllib.request

from superb.llm.cache import CacheMiss, ResponseCache
from superb.llm.cache_rows import cache_key
from superb.llm.client_base import ClientBase
from superb.llm.config import LLMConfig
from superb.llm.model import model_id
from superb.llm.types import ChatRequest, Completion
from superb.llm.usage import Usage

PER_MESSAGE_TOKENS = 4
DRY_RUN_ERROR = "dry-run"


def estimate_tokens(text: str) -> int:
    return (len(text) + 3) // 4


class DryRunClient(ClientBase):
    def __init__(self, config: LLMConfig | None = None, *, cache: ResponseCache | None = None,
                 usage: Usage | None = None, tokenize_url: str | None = None):
        super().__init__()
        self.config = config or LLMConfig()
        self.model = model_id(self.config)  # the id a real run would key its cache on
        self.cache = cache
        self.usage = usage if usage is not None else Usage()
        self.tokenize_url = tokenize_url.rstrip("/") if tokenize_url else None
        self.info = {"model": self.model, "endpoints": [], "dry_run": True}
        self._counted: set[str] = set()  # cache keys of the requests counted as calls

    def __repr__(self) -> str:
        return f"DryRunClient(model={self.model!r}, usage={self.usage})"

    def _cached(self, request: ChatRequest) -> Completion | None:
        try:
            return super()._cached(request)
        except CacheMiss:  # a read-only cache miss: in a dry run, that is just a call the real run would make
            return None

    async def _fetch(self, request: ChatRequest) -> Completion:
        key = cache_key(self.model, request)
        if key in self._counted:  # the real run would serve it from the answer it cached for the first one
            self.usage.record(request.tag, self.model, coalesced=1)
            return Completion(text="", failed=True, error=DRY_RUN_ERROR)
        self._counted.add(key)
        tokens = await self.count_prompt_tokens(request)
        self.usage.record(request.tag, self.model, calls=1, dry_run=1, prompt_tokens=tokens,
                          completion_tokens=request.max_tokens)
        return Completion(text="", prompt_tokens=tokens, failed=True, error=DRY_RUN_ERROR)

    async def count_prompt_tokens(self, request: ChatRequest) -> int:
        overhead = PER_MESSAGE_TOKENS * len(request.messages)
        if self.tokenize_url is None:
            return overhead + sum(estimate_tokens(content) for _, content in request.messages)
        counts = await asyncio.gather(*(asyncio.to_thread(self._tokenize, c) for _, c in request.messages))
        return overhead + sum(counts)

    def _tokenize(self, text: str) -> int:
        body = json.dumps({"content": text}).encode()
        req = urllib.request.Request(f"{self.tokenize_url}/tokenize", data=body,
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as r:  # noqa: S310 - a local server URL given by the caller
            return len(json.loads(r.read())["tokens"])
