"""``DryRunClient``: the LLMClient interface without a model. It counts the calls a run would make and estimates
their prompt tokens, so a spec can be costed before it is run.

Each request it does not find in the cache is counted in Usage (calls, dry_run, prompt_tokens estimated,
completion_tokens = max_tokens as an upper bound) and answered with a placeholder ``Completion`` that has
failed=True and error="dry-run": callers take their counted fallback path, as for any failed call. Cached
requests are served from the cache as usual (they would cost nothing), and a request identical to one in flight is
coalesced as the real client does (superb.llm.client), so the count is what the real run would send.

Prompt tokens: the server's /tokenize when ``tokenize_url`` is given (e.g. http://127.0.0.1:PORT, llama.cpp),
else characters / 4; plus 4 tokens per message for the chat template.
"""

from __future__ import annotations

import asyncio
import json
import urllib.request

from superb.errors import LLMError
from superb.llm.cache import ResponseCache
from superb.llm.client import _ClientBase
from superb.llm.config import LLMConfig
from superb.llm.types import ChatRequest, Completion
from superb.llm.usage import Usage

PER_MESSAGE_TOKENS = 4
DRY_RUN_ERROR = "dry-run"


def estimate_tokens(text: str) -> int:
    return (len(text) + 3) // 4


class DryRunClient(_ClientBase):
    def __init__(self, config: LLMConfig | None = None, *, cache: ResponseCache | None = None,
                 usage: Usage | None = None, tokenize_url: str | None = None):
        super().__init__()
        from superb.llm.connect import model_id

        self.config = config or LLMConfig()
        self.model = model_id(self.config)  # the id a real run would key its cache on
        self.cache = cache
        self.usage = usage if usage is not None else Usage()
        self.tokenize_url = tokenize_url.rstrip("/") if tokenize_url else None
        self.info = {"model": self.model, "endpoints": [], "dry_run": True}

    def __repr__(self) -> str:
        return f"DryRunClient(model={self.model!r}, usage={self.usage})"

    def _cached(self, request: ChatRequest) -> Completion | None:
        try:
            return super()._cached(request)
        except LLMError:  # a read-only cache miss: in a dry run, that is just a call the real run would make
            return None

    async def _fetch(self, request: ChatRequest) -> Completion:
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
