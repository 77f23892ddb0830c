"""A deterministic fake OpenAI-compatible server for offline tests and benchmarks.

Serves ``POST /v1/chat/completions``, ``GET /v1/models`` and ``POST /tokenize`` on 127.0.0.1 (stdlib
``http.server``, one thread per connection, HTTP/1.1 keep-alive). What it answers is pluggable:

* ``responder(request_json) -> str | Reply``: the reply text (and optionally per-token logprobs) for a request.
  The default echoes a fixed word. Reranker/judge tests write responders that parse their own prompts.
* ``faults``: a script of faults consumed one per chat request, in arrival order (``None`` = answer normally):
  ``Fault.delay(s)``, ``Fault.rate_limit(retry_after)``, ``Fault.error(500)``, ``Fault.hang()``, ``Fault.malformed()``,
  ``Fault.drop()``. After the script runs out every request is answered normally.
* ``latency``: a fixed delay before every answer (the benchmark's model time).

Counters for assertions: ``requests`` (chat requests received, faults included), ``max_in_flight``, ``received``
(the request bodies, in arrival order); over HTTP as ``GET /stats`` (reset with ``POST /reset``).

Run standalone (own process, so its work does not share the client's GIL; used by bench/llm_client.py):
``python tests/fakeserver.py --latency 0.2`` prints ``PORT <n>`` and serves until stdin closes.

    with FakeServer(responder=lambda req: "yes") as srv:
        client = LLMClient(LLMConfig(model="fake", base_urls=(srv.base_url,)), cache=None, usage=None)
"""

from __future__ import annotations

import json
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable


@dataclass(frozen=True)
class Reply:
    """A reply: its text, and optionally per-token logprobs as (token, logprob, {alternative: logprob})."""

    text: str
    logprobs: tuple[tuple[str, float, dict[str, float]], ...] | None = None


@dataclass(frozen=True)
class Fault:
    kind: str  # "delay" | "429" | "500" | "hang" | "malformed" | "drop"
    seconds: float = 0.0
    status: int = 0

    @staticmethod
    def delay(seconds: float) -> "Fault":
        return Fault("delay", seconds=seconds)

    @staticmethod
    def rate_limit(retry_after: float = 0.0) -> "Fault":
        return Fault("429", seconds=retry_after, status=429)

    @staticmethod
    def error(status: int = 500) -> "Fault":
        return Fault("500", status=status)

    @staticmethod
    def hang(seconds: float = 60.0) -> "Fault":
        """Accept the request and answer nothing for `seconds` (released at once when the server stops)."""
        return Fault("hang", seconds=seconds)

    @staticmethod
    def malformed() -> "Fault":
        return Fault("malformed")

    @staticmethod
    def drop() -> "Fault":
        return Fault("drop")


def echo_responder(request: dict[str, Any]) -> Reply:
    """Default: answer "ok"; with logprobs requested, one token "ok" with two alternatives."""
    if request.get("logprobs"):
        return Reply("ok", (("ok", -0.1, {"ok": -0.1, "no": -2.5}),))
    return Reply("ok")


def count_tokens(text: str) -> int:
    """The fake tokenizer: one token per 4 characters, at least one."""
    return max(1, len(text) // 4)


@dataclass
class FakeServer:
    responder: Callable[[dict[str, Any]], "str | Reply"] = echo_responder
    faults: list[Fault | None] = field(default_factory=list)
    latency: float = 0.0
    model: str = "fake-model"

    def __post_init__(self) -> None:
        self.requests = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.received: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._port: int | None = None

    # --- lifecycle -------------------------------------------------------------------------------------------------
    def start(self) -> "FakeServer":
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _make_handler(self))
        self._httpd.daemon_threads = True
        self._port = self._httpd.server_address[1]
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,), name="fakeserver", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> "FakeServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError("FakeServer is not started")
        return self._port  # still known after stop(), for messages

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def reset_counters(self) -> None:
        with self._lock:
            self.requests = 0
            self.max_in_flight = 0
            self.received.clear()

    # --- request handling ------------------------------------------------------------------------------------------
    def _next_fault(self, body: dict[str, Any]) -> Fault | None:
        with self._lock:
            self.requests += 1
            self.received.append(body)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            return self.faults.pop(0) if self.faults else None

    def _done(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def _completion(self, body: dict[str, Any]) -> dict[str, Any]:
        reply = self.responder(body)
        if isinstance(reply, str):
            reply = Reply(reply)
        prompt = "".join(m.get("content") or "" for m in body.get("messages", []))
        prompt_n = count_tokens(prompt)
        choice: dict[str, Any] = {
            "index": 0,
            "finish_reason": "stop",
            "message": {"role": "assistant", "content": reply.text},
            "logprobs": None,
        }
        if reply.logprobs is not None:
            choice["logprobs"] = {
                "content": [
                    {
                        "token": tok,
                        "logprob": lp,
                        "bytes": None,
                        "top_logprobs": [{"token": t, "logprob": v, "bytes": None} for t, v in top.items()],
                    }
                    for tok, lp, top in reply.logprobs
                ]
            }
        completion_n = count_tokens(reply.text)
        return {
            "id": f"chatcmpl-fake-{self.requests}",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", self.model),
            "choices": [choice],
            "usage": {"prompt_tokens": prompt_n, "completion_tokens": completion_n,
                      "total_tokens": prompt_n + completion_n},
            "timings": {"prompt_n": prompt_n, "cache_n": 0},  # llama.cpp-style extra field
        }


def _make_handler(server: FakeServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        wbufsize = -1  # buffered: headers and body leave in one segment (no Nagle/delayed-ACK 40 ms stalls)

        def setup(self) -> None:
            super().setup()
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            return

        def _send(self, status: int, payload: bytes, headers: dict[str, str] | None = None) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(payload)

        def _json(self, status: int, obj: Any, headers: dict[str, str] | None = None) -> None:
            self._send(status, json.dumps(obj).encode(), headers)

        def _read_body(self) -> dict[str, Any]:
            length = int(self.headers.get("Content-Length") or 0)
            return json.loads(self.rfile.read(length) or b"{}")

        def do_GET(self) -> None:
            if self.path.rstrip("/") == "/stats":  # counters, for a server running in another process
                self._json(200, {"requests": server.requests, "max_in_flight": server.max_in_flight})
            elif self.path.rstrip("/") == "/v1/models":
                self._json(200, {"object": "list", "data": [{"id": server.model, "object": "model", "owned_by": "fake"}]})
            else:
                self._json(404, {"error": {"message": f"no route {self.path}"}})

        def do_POST(self) -> None:
            body = self._read_body()
            path = self.path.rstrip("/")
            if path == "/reset":
                server.reset_counters()
                self._json(200, {})
                return
            if path == "/tokenize":
                self._json(200, {"tokens": list(range(count_tokens(body.get("content", ""))))})
                return
            if path != "/v1/chat/completions":
                self._json(404, {"error": {"message": f"no route {self.path}"}})
                return
            fault = server._next_fault(body)
            try:
                self._answer(body, fault)
            finally:
                server._done()

        def _answer(self, body: dict[str, Any], fault: Fault | None) -> None:
            if server.latency:
                time.sleep(server.latency)
            if fault is None:
                self._json(200, server._completion(body))
            elif fault.kind == "delay":
                time.sleep(fault.seconds)
                self._json(200, server._completion(body))
            elif fault.kind == "429":
                self._json(429, {"error": {"message": "rate limited", "type": "rate_limit"}},
                           {"Retry-After": f"{fault.seconds:g}"})
            elif fault.kind == "500":
                self._json(fault.status, {"error": {"message": "internal error", "type": "server_error"}})
            elif fault.kind == "hang":
                server._stopping.wait(fault.seconds)
                self.close_connection = True
            elif fault.kind == "malformed":
                self._send(200, b'{"id": "x", "choices": [ this is not json')
            elif fault.kind == "drop":
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
            else:
                raise ValueError(f"unknown fault kind {fault.kind!r}")

    return Handler


def main() -> None:
    import argparse
    import sys

    ap = argparse.ArgumentParser(description="a fake OpenAI-compatible server answering 'ok'")
    ap.add_argument("--latency", type=float, default=0.0)
    args = ap.parse_args()
    with FakeServer(latency=args.latency) as srv:
        print(f"PORT {srv.port}", flush=True)
        sys.stdin.read()  # until the parent closes our stdin


if __name__ == "__main__":
    main()
