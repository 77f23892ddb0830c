"""Value types shared by the LLM client, the rerankers and the judges.

A ``ChatRequest`` is everything that determines a model response (it is what the cache keys on, with the model id);
a ``Completion`` is what came back, or a counted failure.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# A "label request" asks for ONE answer token (a grade digit, yes/no, a letter naming a product) and reads the answer
# from the probabilities of the label tokens among the first position's top alternatives. Every single-token request
# of superb (rerankers and judges alike) uses these values, so that a judge and a reranker asking the same prompt
# share one cached answer. With an endpoint that returns no logprobs, the one generated token is the answer (parsed,
# and counted as a fallback by the caller).
LABEL_MAX_TOKENS = 1
LABEL_TOP_LOGPROBS = 20  # the OpenAI API's maximum (also vLLM's default max_logprobs)


@dataclass(frozen=True)
class ChatRequest:
    messages: tuple[tuple[str, str], ...]  # ((role, content), ...): hashable and order-preserving
    template: str = ""  # prompt template id + fingerprint, e.g. "pointwise_best@3f2a9c1d"; enters the cache key
    max_tokens: int = 64
    temperature: float = 0.0
    seed: int | None = 0
    logprobs: bool = False
    top_logprobs: int = 0
    logit_bias: tuple[tuple[int, float], ...] = ()
    stop: tuple[str, ...] = ()
    tag: str = ""  # who asked (pipeline/component name): for usage accounting only, NOT part of the cache key

    @staticmethod
    def chat(system: str | None, user: str, **kw: Any) -> "ChatRequest":
        msgs = ((("system", system),) if system else ()) + (("user", user),)
        return ChatRequest(messages=msgs, **kw)

    @staticmethod
    def label(user: str, *, template: str, tag: str = "", top_logprobs: int = LABEL_TOP_LOGPROBS,
              max_tokens: int = LABEL_MAX_TOKENS) -> "ChatRequest":
        """A single-token label request (see LABEL_MAX_TOKENS): temperature 0, seed 0, top logprobs."""
        return ChatRequest.chat(None, user, template=template, max_tokens=max_tokens, temperature=0.0, seed=0,
                                logprobs=True, top_logprobs=top_logprobs, tag=tag)

    def openai_messages(self) -> list[dict[str, str]]:
        return [{"role": r, "content": c} for r, c in self.messages]


@dataclass(frozen=True)
class TokenLogprob:
    token: str
    logprob: float
    top: dict[str, float] = field(default_factory=dict)  # alternative token -> logprob at this position


@dataclass(frozen=True)
class Completion:
    text: str
    logprobs: tuple[TokenLogprob, ...] | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_prompt_tokens: int = 0  # tokens the server reused from its prompt cache (llama.cpp timings.cache_n)
    latency_s: float = 0.0
    from_cache: bool = False  # served from superb's response cache: no call was made
    failed: bool = False  # the call failed after retries and the failure policy is "record"
    error: str | None = None

    @staticmethod
    def failure(error: str) -> "Completion":
        return Completion(text="", failed=True, error=error)
