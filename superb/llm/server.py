"""``EmbeddedServer``: llama.cpp's OpenAI-compatible HTTP server, in-process (xllamacpp), on 127.0.0.1.

The default endpoint when a spec names none: no key, no network, the pinned Qwen2.5-Coder GGUF (see model.py).
The prompt cache is on by default, so requests sharing a prefix (instructions, query) only evaluate what differs;
``prompt_cache=False`` evaluates every prompt from scratch (slower, independent of the order of requests).

    with EmbeddedServer(path, alias="qwen2.5-coder-0.5b-instruct-q4_k_m") as srv:
        LLMConfig(model=srv.alias, base_urls=(srv.base_url,))
"""

from __future__ import annotations

import gc
import json
import logging
import socket
import time
import urllib.error
import urllib.request
from pathlib import Path

from superb.errors import LLMError, MissingDependencyError

log = logging.getLogger(__name__)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class EmbeddedServer:
    def __init__(self, model_path: str | Path, alias: str, *, n_ctx: int = 4096, n_parallel: int = 1,
                 threads: int = 2, port: int | None = None, verbosity: int = 0,
                 prompt_cache: bool = True):
        self.model_path = Path(model_path)
        self.alias = alias
        self.n_ctx = n_ctx
        self.n_parallel = n_parallel
        self.threads = threads
        self.port = port
        self.verbosity = verbosity
        self.prompt_cache = prompt_cache
        self.startup_s: float | None = None
        self._server = None

    @property
    def base_url(self) -> str:
        if self._server is None:
            raise LLMError("the embedded server is not running; call start() or use it as a context manager")
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def running(self) -> bool:
        return self._server is not None

    def start(self, ready_timeout_s: float = 120.0) -> "EmbeddedServer":
        if self._server is not None:
            return self
        try:
            import xllamacpp
        except ImportError:
            raise MissingDependencyError("xllamacpp (the embedded llama.cpp server)", "pip install xllamacpp") from None
        if not self.model_path.is_file():
            raise LLMError(f"model file {self.model_path} does not exist")
        self.port = self.port or free_port()
        p = xllamacpp.CommonParams()
        p.model.path = str(self.model_path)
        p.model_alias = {self.alias}
        p.hostnames = ["127.0.0.1"]
        p.port = self.port
        p.n_ctx = self.n_ctx
        p.n_parallel = self.n_parallel
        p.cpuparams.n_threads = self.threads
        p.cpuparams_batch.n_threads = self.threads
        p.cache_prompt = self.prompt_cache
        p.verbosity = self.verbosity
        start = time.perf_counter()
        log.info("starting the embedded server: %s as %r on port %d", self.model_path.name, self.alias, self.port)
        try:
            self._server = xllamacpp.Server(p)  # returns once the model is loaded
        except Exception as e:  # xllamacpp raises plain RuntimeError/ValueError on a bad file or a busy port
            raise LLMError(f"the embedded server could not start with {self.model_path} on port {self.port}: "
                           f"{type(e).__name__}: {e}") from e
        self._wait_ready(ready_timeout_s)
        self.startup_s = time.perf_counter() - start
        return self

    def _wait_ready(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        url = f"http://127.0.0.1:{self.port}/v1/models"
        last: Exception | None = None
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(url, timeout=2) as r:  # noqa: S310 - local URL
                    json.loads(r.read())
                    return
            except (urllib.error.URLError, OSError, ValueError) as e:
                last = e
                time.sleep(0.1)
        self.stop()
        raise LLMError(f"the embedded server on port {self.port} did not answer {url} within {timeout_s:.0f} s "
                       f"(last error: {last})")

    def stop(self) -> None:
        """Stop serving and free the model's memory (xllamacpp stops when its Server object is released)."""
        if self._server is not None:
            self._server = None
            gc.collect()

    def __enter__(self) -> "EmbeddedServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = f"on {self.base_url}" if self.running else "stopped"
        return f"EmbeddedServer({self.model_path.name!r}, alias={self.alias!r}, {state})"
