"""``EmbeddedServer``: llama.cpp's OpenAI-compatible HTTP server (xllamacpp), in a child process, on 127.0.0.1.

The default endpoint when a spec names none: no key, no network, the pinned Qwen2.5-Coder GGUF (see model.py).
The prompt cache is on by default, so requests sharing a prefix (instructions, query) only evaluate what differs;
``prompt_cache=False`` evaluates every prompt from scratch (slower, independent of the order of requests).

    with EmbeddedServer(path, alias="qwen2.5-coder-0.5b-instruct-q4_k_m") as srv:
        LLMConfig(model=srv.alias, base_urls=(srv.base_url,))

Why a child process (issue 23.1): xllamacpp builds and destroys its server holding the GIL, the destructor after the
batch llama.cpp is computing. In-process, a Ctrl-C during the model load or during a long prompt could not even run
Python's signal handler, and the stop on the interrupt path waited tens of seconds on a loaded machine. The child
holds its own GIL: the parent stays responsive, and stopping is a SIGTERM (the OS frees the model). The child runs
in its own session, so a terminal's Ctrl-C reaches only superb, which stops it; it ends by itself when its parent
dies (it watches its parent's pid).
"""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

from superb.errors import LLMError, MissingDependencyError
from superb import interrupt

log = logging.getLogger(__name__)

STOP_TIMEOUT_S = 5.0  # after SIGTERM, before SIGKILL
PARENT_POLL_S = 0.5  # how often the child checks that its parent is alive


_CHILDREN: set[subprocess.Popen] = set()  # started and not yet stopped: killed by kill_children()


def kill_children() -> None:
    """SIGKILL every embedded server child still running (superb.interrupt, before the process ends without
    cleanup: the child would otherwise serve on until its model load is done and it notices its parent is gone)."""
    for proc in list(_CHILDREN):
        if proc.poll() is None:
            proc.kill()
        _CHILDREN.discard(proc)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _interrupting() -> bool:
    return interrupt.requested()


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
        self._proc: subprocess.Popen | None = None
        self._log = None  # the child's stderr (llama.cpp's messages), read when it fails

    @property
    def base_url(self) -> str:
        if self._proc is None:
            raise LLMError("the embedded server is not running; call start() or use it as a context manager")
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def pid(self) -> int | None:
        return None if self._proc is None else self._proc.pid

    def start(self, ready_timeout_s: float = 300.0) -> "EmbeddedServer":
        """Start the child and return once it answers /v1/models (the model is loaded), or raise LLMError with the
        child's last messages; a Ctrl-C meanwhile (superb.interrupt) stops it and raises LLMError at once."""
        if self._proc is not None:
            return self
        import importlib.util

        if importlib.util.find_spec("xllamacpp") is None:
            raise MissingDependencyError("xllamacpp (the embedded llama.cpp server)", "pip install xllamacpp")
        if not self.model_path.is_file():
            raise LLMError(f"model file {self.model_path} does not exist")
        self.port = self.port or free_port()
        params = {"model": str(self.model_path), "alias": self.alias, "port": self.port, "n_ctx": self.n_ctx,
                  "n_parallel": self.n_parallel, "threads": self.threads, "verbosity": self.verbosity,
                  "prompt_cache": self.prompt_cache, "parent": os.getpid()}
        start = time.perf_counter()
        log.info("starting the embedded server: %s as %r on port %d", self.model_path.name, self.alias, self.port)
        self._log = tempfile.TemporaryFile()
        self._proc = subprocess.Popen([sys.executable, "-m", "superb.llm.server", json.dumps(params)],
                                      stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self._log,
                                      start_new_session=True)
        _CHILDREN.add(self._proc)
        try:
            self._wait_ready(ready_timeout_s)
        except BaseException:
            self.stop()
            raise
        self.startup_s = time.perf_counter() - start
        return self

    def _wait_ready(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        url = f"http://127.0.0.1:{self.port}/v1/models"
        last: Exception | None = None
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise LLMError(f"the embedded server could not start with {self.model_path} on port {self.port} "
                               f"(exit status {self._proc.returncode}): {self._child_messages()}")
            if _interrupting():
                raise LLMError("the embedded server's start was interrupted")
            try:
                with urllib.request.urlopen(url, timeout=2) as r:  # noqa: S310 - local URL
                    json.loads(r.read())
                    return
            except (urllib.error.URLError, OSError, ValueError) as e:
                last = e
                time.sleep(0.1)
        raise LLMError(f"the embedded server on port {self.port} did not answer {url} within {timeout_s:.0f} s "
                       f"(last error: {last}; its messages: {self._child_messages()})")

    def _child_messages(self, lines: int = 5) -> str:
        if self._log is None:
            return "none"
        self._log.seek(0)
        text = self._log.read().decode("utf-8", "replace").strip().splitlines()
        return " | ".join(text[-lines:]) or "none"

    def stop(self) -> None:
        """Stop serving: SIGTERM to the child (SIGKILL after STOP_TIMEOUT_S); the OS frees the model's memory.
        Quick whatever the server is computing, so it is the same on a Ctrl-C as at the end of a run."""
        proc, self._proc = self._proc, None
        _CHILDREN.discard(proc)
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                log.warning("the embedded server (pid %d) did not stop within %.0f s of SIGTERM: killed", proc.pid,
                            STOP_TIMEOUT_S)
                proc.kill()
                proc.wait(timeout=STOP_TIMEOUT_S)
        if self._log is not None:
            self._log.close()
            self._log = None

    def __enter__(self) -> "EmbeddedServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __del__(self) -> None:  # a server started without a `with` and never stopped must not outlive its owner
        proc = getattr(self, "_proc", None)
        if proc is not None and proc.poll() is None:
            proc.kill()

    def __repr__(self) -> str:
        state = f"on {self.base_url}" if self.running else "stopped"
        return f"EmbeddedServer({self.model_path.name!r}, alias={self.alias!r}, {state})"


def _serve(params: dict) -> int:
    """The child: load the model, serve until SIGTERM or until the parent is gone."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when the server stops
    import xllamacpp

    p = xllamacpp.CommonParams()
    p.model.path = params["model"]
    p.model_alias = {params["alias"]}
    p.hostnames = ["127.0.0.1"]
    p.port = params["port"]
    p.n_ctx = params["n_ctx"]
    p.n_parallel = params["n_parallel"]
    p.cpuparams.n_threads = params["threads"]
    p.cpuparams_batch.n_threads = params["threads"]
    p.cache_prompt = bool(params.get("prompt_cache", True))
    p.verbosity = params["verbosity"]
    try:
        server = xllamacpp.Server(p)  # noqa: F841 - serves while referenced; returns once the model is loaded
    except Exception as e:  # xllamacpp raises plain RuntimeError/ValueError on a bad file or a busy port
        print(f"{type(e).__name__}: {e}", file=sys.stderr, flush=True)
        return 1
    while os.getppid() == params["parent"]:
        time.sleep(PARENT_POLL_S)
    os._exit(0)  # the parent is gone: end without running llama.cpp's destructor


if __name__ == "__main__":
    sys.exit(_serve(json.loads(sys.argv[1])))
