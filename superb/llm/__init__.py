"""The LLM access layer: one openai-based client with concurrency, retries, a persistent cache and usage accounting."""

from superb.llm.types import ChatRequest, Completion, TokenLogprob  # noqa: F401
