"""``LLMConfig``: which endpoint and model, how hard to try, and how to cache: the ``[llm]`` table of a spec."""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields, replace
from typing import Any
from urllib.parse import urlparse

from superb.errors import LLMError, SpecError

CACHE_MODES = ("normal", "read-only", "refresh", "off")
FAILURE_POLICIES = ("record", "fail")
EMBEDDED_MODELS = ("1.5b", "0.5b")
LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")


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
    prices: dict[str, dict[str, float]] = field(default_factory=dict)  # model -> {prompt, completion} $ per 1M tokens
    embedded_model: str = "1.5b"  # 1.5b | 0.5b, when base_urls is empty
    model_path: str | None = None  # explicit GGUF file for the embedded server (else env SUPERB_MODEL_PATH, carriers)
    n_ctx: int = 4096
    threads: int = 2
    n_parallel: int = 1  # server slots of the embedded server (see bench/llm_client.py for why 1 on 2 cores)

    def __post_init__(self) -> None:
        self.validate()

    # --- construction ------------------------------------------------------------------------------------------------
    @classmethod
    def allowed_keys(cls) -> list[str]:
        return [f.name for f in fields(cls)]

    @classmethod
    def from_spec(cls, table: dict[str, Any] | None, path: str = "llm") -> "LLMConfig":
        """Build from a spec's ``[llm]`` table; unknown keys and bad values raise SpecError naming ``path.key``."""
        from superb.spec import check_keys

        table = check_keys(table or {}, path, optional=cls.allowed_keys())
        if "base_urls" in table:
            urls = table["base_urls"]
            if isinstance(urls, str):
                urls = [urls]
            if not isinstance(urls, (list, tuple)) or not all(isinstance(u, str) for u in urls):
                raise SpecError(f"{path}.base_urls", f"expected a list of URLs, found {urls!r}")
            table["base_urls"] = tuple(urls)
        for name, kind in (("concurrency", int), ("max_retries", int), ("n_ctx", int), ("threads", int),
                           ("n_parallel", int), ("timeout_s", (int, float)), ("backoff_s", (int, float))):
            if name in table and (not isinstance(table[name], kind) or isinstance(table[name], bool)):
                raise SpecError(f"{path}.{name}", f"expected a number, found {table[name]!r}")
        try:
            return cls(**table)
        except SpecError as e:
            raise SpecError(f"{path}.{e.path}", str(e).split(": ", 1)[-1]) from None

    def validate(self) -> None:
        def bad(key: str, msg: str) -> SpecError:
            return SpecError(key, msg)

        if self.cache not in CACHE_MODES:
            raise bad("cache", f"found {self.cache!r}; expected one of {', '.join(CACHE_MODES)}")
        if self.on_failure not in FAILURE_POLICIES:
            raise bad("on_failure", f"found {self.on_failure!r}; expected one of {', '.join(FAILURE_POLICIES)}")
        if self.embedded_model not in EMBEDDED_MODELS:
            raise bad("embedded_model", f"found {self.embedded_model!r}; expected one of {', '.join(EMBEDDED_MODELS)}")
        for key in ("concurrency", "n_ctx", "threads", "n_parallel"):
            if getattr(self, key) < 1:
                raise bad(key, f"must be >= 1, found {getattr(self, key)!r}")
        if self.max_retries < 0:
            raise bad("max_retries", f"must be >= 0, found {self.max_retries!r}")
        if self.timeout_s <= 0 or self.backoff_s < 0:
            raise bad("timeout_s", f"timeout_s must be > 0 and backoff_s >= 0, found {self.timeout_s}, {self.backoff_s}")
        for url in self.base_urls:
            if urlparse(url).scheme not in ("http", "https"):
                raise bad("base_urls", f"{url!r} is not an http(s) URL, e.g. http://127.0.0.1:8080/v1")
        if self.base_urls and not self.model:
            raise bad("model", "base_urls is set, so model (the id the endpoint serves) is required")
        for model, price in self.prices.items():
            if (not isinstance(price, dict) or set(price) - {"prompt", "completion"}
                    or not all(isinstance(v, (int, float)) and v >= 0 for v in price.values())):
                raise bad(f"prices.{model}", f"expected {{prompt = $/1M, completion = $/1M}}, found {price!r}")

    def with_(self, **changes: Any) -> "LLMConfig":
        return replace(self, **changes)

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
