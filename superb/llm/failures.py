"""How a failed call is read and when a run stops: each failed attempt is classified (HTTP status, timeout,
connection, malformed body; retryable or not, the server's Retry-After and its own message), and ``Breaker`` stops a
run that cannot succeed (see superb.llm.client's docstring for the rules)."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

from superb.llm.wire import Malformed

BREAKER_FAILURES = 5  # failed calls (after retries) with no success yet that stop the run
FATAL_STATUSES = ("401", "403", "404")  # the endpoint refuses every request: stop at once
EARLY_FATAL_STATUSES = ("400", "422")  # a request shape the endpoint rejects: stop if nothing has succeeded yet


class Breaker:
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
class Attempt:
    """The outcome of one failed attempt."""

    status: str
    detail: str
    retryable: bool
    retry_after: float | None = None


def classify(error: Exception) -> Attempt:
    """Map an exception from one attempt to (status, retryable, Retry-After). Unknown errors are bugs: re-raised."""
    import openai

    if isinstance(error, openai.APIStatusError):
        status = error.status_code
        retryable = status in (408, 409, 429) or status >= 500
        return Attempt(str(status), server_message(error), retryable, retry_after(error.response.headers))
    if isinstance(error, (openai.APITimeoutError, asyncio.TimeoutError, TimeoutError)):
        return Attempt("timeout", f"no answer within the timeout ({type(error).__name__})", True)
    if isinstance(error, openai.APIConnectionError):
        return Attempt("connection", short_error(error.__cause__ or error), True)
    if isinstance(error, (openai.APIResponseValidationError, ValueError, Malformed)):
        return Attempt("malformed", f"malformed response body: {short_error(error)}", False)
    raise error


def retry_after(headers: Any) -> float | None:
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


def server_message(error: Any, limit: int = 300) -> str:
    """What the server said about an HTTP error: its JSON ``error.message`` (OpenAI, vLLM, llama.cpp all send one),
    else the body text; after the error type."""
    body = getattr(error, "body", None)
    said = None
    if isinstance(body, dict):
        inner = body.get("error", body)
        said = inner.get("message") if isinstance(inner, dict) else inner
        said = said or body.get("message") or body.get("detail")
    if not said:
        return short_error(error, limit)
    text = f"{type(error).__name__}: server said: {said}"
    return text if len(text) <= limit else text[:limit] + "..."


def short_error(error: BaseException, limit: int = 300) -> str:
    text = f"{type(error).__name__}: {error}"
    return text if len(text) <= limit else text[:limit] + "..."
