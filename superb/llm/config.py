"""``LLMConfig``: which endpoint and model, how hard to try, and how to cache: the ``[llm]`` table of a spec."""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field, fields, replace
from typing import Any
from urllib.parse import urlparse

from superb.errors import LLMError, SpecError
from superb.options import check_keys

CACHE_MODES = ("normal", "read-only", "refresh", "off")
FAILURE_POLICIES = ("record", "fail")
EMBEDDED_MODELS = ("1.5b", "0.5b")
LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_NUMBER = (int, float)
# key -> (accepted Python types, what the message says is expected); bools are refused unless listed
_TYPES: dict[str, tuple[tuple[type, ...], str]] = {
    "model": ((str,), 'the model id as a string, e.g. "Qwen/Qwen2.5-7B-Instruct"'),
    "base_urls": ((tuple, list), "a list of URLs"),
    "api_key_env": ((str,), 'the NAME of an environment variable as a string, e.g. "OPENAI_API_KEY"'),
    "concurrency": ((int,), "an integer >= 1"),
    "timeout_s": (_NUMBER, "a number of seconds > 0"),
    "max_retries": ((int,), "an integer >= 0"),
    "backoff_s": (_NUMBER, "a number of seconds >= 0"),
    "temperature": (_NUMBER, "a number from 0 to 2"),
    "seed": ((int,), "an integer"),
    "cache": ((str,), f"one of {', '.join(CACHE_MODES)}"),
    "cache_path": ((str,), "a file path as a string"),
    "on_failure": ((str,), f"one of {', '.join(FAILURE_POLICIES)}"),
    "max_failure_share": (_NUMBER, "a number from 0 to 1 (the share of LLM requests that may fail)"),
    "prices": ((dict,), "a table of model = {prompt = $/1M tokens, completion = $/1M tokens}"),
    "embedded_model": ((str,), f"one of {', '.join(EMBEDDED_MODELS)}"),
    "model_path": ((str,), "a GGUF file path as a string"),
    "n_ctx": ((int,), "an integer >= 256"),
    "threads": ((int,), "an integer >= 1"),
    "n_parallel": ((int,), "an integer >= 1"),
    "prompt_cache": ((bool,), "true or false"),
}
_OPTIONAL = frozenset({"model", "temperature", "seed", "cache_path", "model_path"})
# key, low, high, the allowed range in words (checked after the types)
_RANGES: tuple[tuple[str, float, float, str], ...] = (
    ("concurrency", 1, math.inf, ">= 1"),
    ("timeout_s", 1e-9, math.inf, "> 0 seconds"),
    ("max_retries", 0, math.inf, ">= 0"),
    ("backoff_s", 0, math.inf, ">= 0 seconds"),
    ("temperature", 0, 2, "from 0 to 2"),
    ("max_failure_share", 0, 1, "from 0 to 1"),
    ("n_ctx", 256, math.inf, ">= 256 tokens"),
    ("threads", 1, math.inf, ">= 1"),
    ("n_parallel", 1, math.inf, ">= 1"),
)


def _found(value: Any, *, secret: bool = False) -> str:
    """How a bad value is shown in a message: type and value; a string that may be a secret only by its length."""
    if secret and isinstance(value, str):
        return f"a string of {len(value)} characters"
    return f"{type(value).__name__} {value!r}"


@dataclass(frozen=True)
class LLMConfig:
    model: str | None = None  # the model id sent to the endpoint (and in the cache key); None => the embedded model
    base_urls: tuple[str, ...] = ()  # several URLs serving the same model share the load; empty => embedded server
    api_key_env: str = "OPENAI_API_KEY"  # the NAME of the variable holding the key; the key itself is never stored
    concurrency: int = 4  # requests in flight per endpoint
    timeout_s: float = 300.0  # per attempt; a small local model needs ~30 s for a 20-product window
    max_retries: int = 4  # retries after the first attempt, on 429, 5xx, connection errors and timeouts
    backoff_s: float = 0.5  # first retry delay; doubles each retry, with jitter, capped at 60 s
    temperature: float | None = None  # when set, overrides every request's temperature (before cache keying)
    seed: int | None = None  # when set, overrides every request's seed
    cache: str = "normal"  # normal | read-only | refresh | off
    cache_path: str | None = None  # default: superb.paths.llm_cache_path()
    on_failure: str = "record"  # record: a counted failed Completion; fail: raise LLMError
    max_failure_share: float = 0.0  # record: failed requests / requests a run may have and still exit 0 (see cli)
    prices: dict[str, dict[str, float]] = field(default_factory=dict)  # model -> {prompt, completion} $ per 1M tokens
    embedded_model: str = "1.5b"  # 1.5b | 0.5b, when base_urls is empty
    model_path: str | None = None  # explicit GGUF file for the embedded server (else env SUPERB_MODEL_PATH, carriers)
    n_ctx: int = 4096
    threads: int = 2
    n_parallel: int = 1  # server slots of the embedded server (see bench/llm_client.py for why 1 on 2 cores)
    # embedded server: reuse the KV cache of the previous request's common prefix. Faster, but an answer's logprobs
    # then depend on which request came before (the prefix is not re-evaluated in the same batches); false evaluates
    # every prompt from scratch, so a re-run in another order or from a partly filled cache gives the same numbers
    # (bench/drift.py measures both: results/bench/drift.md)
    prompt_cache: bool = True

    def __post_init__(self) -> None:
        self.validate()
        object.__setattr__(self, "base_urls", tuple(self.base_urls))

    # --- construction ------------------------------------------------------------------------------------------------
    @classmethod
    def allowed_keys(cls) -> list[str]:
        return [f.name for f in fields(cls)]

    @classmethod
    def from_spec(cls, table: dict[str, Any] | None, path: str = "llm") -> "LLMConfig":
        """Build from a spec's ``[llm]`` table; unknown keys and bad values raise SpecError naming ``path.key``."""
        table = check_keys(table or {}, path, optional=cls.allowed_keys())
        if "base_urls" in table:
            urls = table["base_urls"]
            if isinstance(urls, str):
                urls = [urls]
            if not isinstance(urls, (list, tuple)) or not all(isinstance(u, str) for u in urls):
                raise SpecError(f"{path}.base_urls", f"expected a list of URLs, found {_found(urls)}")
            table["base_urls"] = tuple(urls)
        try:
            return cls(**table)
        except SpecError as e:
            detail = str(e)[len(e.path) + 2:] if e.path else str(e)
            raise SpecError(f"{path}.{e.path}", detail) from None

    def validate(self) -> None:
        """Types first (a TOML typo such as ``temperature = "hot"`` must not reach an endpoint), then ranges. Each
        error is a SpecError whose path is the key and whose message gives what was found and what is allowed."""
        for key, (kinds, expected) in _TYPES.items():
            value = getattr(self, key)
            if value is None and key in _OPTIONAL:
                continue
            if isinstance(value, bool) and bool not in kinds or not isinstance(value, kinds):
                raise SpecError(key, f"expected {expected}, found {_found(value, secret=key == 'api_key_env')}")
        for key, allowed in (("cache", CACHE_MODES), ("on_failure", FAILURE_POLICIES),
                             ("embedded_model", EMBEDDED_MODELS)):
            if getattr(self, key) not in allowed:
                raise SpecError(key, f"found {getattr(self, key)!r}; expected one of {', '.join(allowed)}")
        for key, low, high, what in _RANGES:
            value = getattr(self, key)
            if value is not None and not (low <= value <= high):
                raise SpecError(key, f"must be {what}, found {value!r}")
        if not _ENV_NAME.match(self.api_key_env):
            raise SpecError("api_key_env", f"expected the NAME of an environment variable (letters, digits, _), "
                                           f"found {_found(self.api_key_env, secret=True)}; put the key itself in "
                                           f"that variable, never in the spec")
        for key in ("model", "cache_path", "model_path"):
            if getattr(self, key) is not None and not getattr(self, key).strip():
                raise SpecError(key, "is empty; remove the key to use the default")
        for url in self.base_urls:
            if urlparse(url).scheme not in ("http", "https"):
                raise SpecError("base_urls", f"{url!r} is not an http(s) URL, e.g. http://127.0.0.1:8080/v1")
        if self.base_urls and not self.model:
            raise SpecError("model", "base_urls is set, so model (the id the endpoint serves) is required")
        for model, price in self.prices.items():
            if (not isinstance(price, dict) or set(price) - {"prompt", "completion"} or not all(
                    isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0 for v in price.values())):
                raise SpecError(f"prices.{model}", f"expected {{prompt = $/1M, completion = $/1M}} (numbers >= 0), "
                                                   f"found {price!r}")

    def with_(self, **changes: Any) -> "LLMConfig":
        return replace(self, **changes)

    def failure_excess(self, failures: int, requests: int) -> str | None:
        """None when ``failures`` among ``requests`` (calls made + cache hits) are acceptable under this config,
        else why not: any failure is too many unless ``max_failure_share`` allows it (policy "record")."""
        if failures <= 0:
            return None
        share = failures / max(requests, 1)
        if share <= self.max_failure_share:
            return None
        return (f"{failures} of {requests} LLM requests failed ({share:.1%}), more than llm.max_failure_share = "
                f"{self.max_failure_share:g}; their components used counted fallbacks")

    # --- derived -----------------------------------------------------------------------------------------------------
    @property
    def embedded(self) -> bool:
        """True when no endpoint is given: superb serves a local model itself."""
        return not self.base_urls

    @property
    def is_local(self) -> bool:
        return self.embedded or all(urlparse(u).hostname in LOCAL_HOSTS for u in self.base_urls)

    def api_key(self) -> str:
        """Read the key from the environment at call time (never stored). Local endpoints need none."""
        value = os.environ.get(self.api_key_env)
        if value:
            return value
        if self.is_local:
            return "not-needed"
        raise LLMError(
            f"no API key for {', '.join(self.base_urls)}: environment variable {self.api_key_env} is not set. "
            f"Export it, or set llm.api_key_env to the variable that holds the key."
        )
