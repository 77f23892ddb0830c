"""The OpenAI chat-completions wire format: the request body superb sends (live, or written to a batch file) and the
answer read back into a Completion (a body that does not have that shape is ``Malformed``)."""

from __future__ import annotations

import json
from typing import Any

from superb.llm.types import ChatRequest, Completion, TokenLogprob


class Malformed(ValueError):
    """A 200 response that does not have the shape of a chat completion."""


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


def parse_body(body: str, latency: float) -> Completion:
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
        raise Malformed(f"not a chat completion ({type(e).__name__}: {e}): {str(data)[:200]!r}") from None
