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

The OpenAI Files and Batch APIs (``POST /v1/files`` multipart upload, ``GET /v1/files/{id}`` and ``/content``,
``POST /v1/batches``, ``GET /v1/batches/{id}``, ``POST /v1/batches/{id}/cancel``): a batch answers every line with
the responder (``batch_output_line``), after ``batch_polls`` status polls in "in_progress". ``batch_faults`` is a
script consumed one per created batch (``None`` = all lines answered): ``BatchFault.failed_lines(n)`` (every n-th
line gets a 400 in the error file), ``BatchFault.expired(k)`` (only the first k lines answered; the rest are
"batch_expired" errors in the error file, status "expired"), ``BatchFault.failed()`` (status "failed", no output).
Counters: ``files_created``, ``batches_created``, ``batch_lines`` (lines answered in batches; not in ``requests``).
``batch_output_line(server, line, style)`` also writes result lines offline, in the formats of OpenAI ("openai"),
``vllm run-batch`` ("vllm") and SGLang ("sglang").

Run standalone (own process, so its work does not share the client's GIL; used by bench/llm_client.py):
``python tests/fakeserver.py --latency 0.2`` prints ``PORT <n>`` and serves until stdin closes.

    with FakeServer(responder=lambda req: "yes") as srv:
        client = LLMClient(LLMConfig(model="fake", base_urls=(srv.base_url,)), cache=None, usage=None)
"""

from __future__ import annotations

import json
import math
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
    message: str = "internal error"  # the error message of an HTTP error reply

    @staticmethod
    def delay(seconds: float) -> "Fault":
        return Fault("delay", seconds=seconds)

    @staticmethod
    def rate_limit(retry_after: float = 0.0) -> "Fault":
        return Fault("429", seconds=retry_after, status=429)

    @staticmethod
    def error(status: int = 500, message: str = "internal error") -> "Fault":
        return Fault("500", status=status, message=message)

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


@dataclass(frozen=True)
class BatchFault:
    kind: str  # "failed_lines" | "expired" | "failed"
    n: int = 0

    @staticmethod
    def failed_lines(every: int) -> "BatchFault":
        """Every ``every``-th line (1-based) fails with a 400 in the error file; the others are answered."""
        return BatchFault("failed_lines", every)

    @staticmethod
    def expired(answered: int) -> "BatchFault":
        """Only the first ``answered`` lines are answered; the batch expires with the rest as errors."""
        return BatchFault("expired", answered)

    @staticmethod
    def failed() -> "BatchFault":
        """The batch fails validation: status "failed", no output file."""
        return BatchFault("failed")


def echo_responder(request: dict[str, Any]) -> Reply:
    """Default: answer "ok"; with logprobs requested, one token "ok" with two alternatives."""
    if request.get("logprobs"):
        return Reply("ok", (("ok", -0.1, {"ok": -0.1, "no": -2.5}),))
    return Reply("ok")


def yes(request: dict[str, Any]) -> Reply:
    """A yes/no reranker's or judge's "yes", P(yes) = 0.8, with its logprobs."""
    return Reply("yes", (("yes", math.log(0.8), {"yes": math.log(0.8), "no": math.log(0.2)}),))


def count_tokens(text: str) -> int:
    """The fake tokenizer: one token per 4 characters, at least one."""
    return max(1, len(text) // 4)


@dataclass
class FakeServer:
    responder: Callable[[dict[str, Any]], "str | Reply"] = echo_responder
    faults: list[Fault | None] = field(default_factory=list)
    latency: float = 0.0
    model: str = "fake-model"
    batch_faults: list[BatchFault | None] = field(default_factory=list)
    batch_polls: int = 1  # status polls a batch spends "in_progress" before it ends

    def __post_init__(self) -> None:
        self.files: dict[str, dict[str, Any]] = {}  # id -> {"purpose", "filename", "content": bytes}
        self.batches: dict[str, dict[str, Any]] = {}
        self.files_created = 0
        self.batches_created = 0
        self.batch_lines = 0
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


    # --- files and batches ---------------------------------------------------------------------------------------
    def _new_file(self, content: bytes, purpose: str, filename: str) -> dict[str, Any]:
        with self._lock:
            self.files_created += 1
            fid = f"file-fake-{self.files_created}"
            self.files[fid] = {"purpose": purpose, "filename": filename, "content": content}
        return self._file_object(fid)

    def _file_object(self, fid: str) -> dict[str, Any]:
        f = self.files[fid]
        return {"id": fid, "object": "file", "bytes": len(f["content"]), "created_at": 0,
                "filename": f["filename"], "purpose": f["purpose"]}

    def _new_batch(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        fid = body.get("input_file_id")
        if fid not in self.files:
            return 404, {"error": {"message": f"no file {fid}", "type": "invalid_request_error"}}
        with self._lock:
            self.batches_created += 1
            bid = f"batch_fake_{self.batches_created}"
            fault = self.batch_faults.pop(0) if self.batch_faults else None
            self.batches[bid] = {"id": bid, "object": "batch", "endpoint": body.get("endpoint"),
                                 "input_file_id": fid, "completion_window": body.get("completion_window"),
                                 "status": "validating", "output_file_id": None, "error_file_id": None,
                                 "errors": None, "created_at": 0, "request_counts": {"total": 0, "completed": 0,
                                                                                     "failed": 0},
                                 "_polls": 0, "_fault": fault}
        return 200, self._batch_object(bid)

    def _batch_object(self, bid: str) -> dict[str, Any]:
        return {k: v for k, v in self.batches[bid].items() if not k.startswith("_")}

    def _poll_batch(self, bid: str) -> dict[str, Any]:
        b = self.batches[bid]
        if b["status"] in ("validating", "in_progress"):
            b["_polls"] += 1
            b["status"] = "in_progress"
            if b["_polls"] > self.batch_polls:
                self._run_batch(b)
        return self._batch_object(bid)

    def _run_batch(self, b: dict[str, Any]) -> None:
        fault: BatchFault | None = b["_fault"]
        if fault is not None and fault.kind == "failed":
            b["status"] = "failed"
            b["errors"] = {"object": "list", "data": [{"code": "invalid_file", "message": "fake validation failure"}]}
            return
        lines = [ln for ln in self.files[b["input_file_id"]]["content"].decode("utf-8").splitlines() if ln.strip()]
        out, err = [], []
        for i, raw in enumerate(lines, 1):
            line = json.loads(raw)
            if fault is not None and fault.kind == "expired" and i > fault.n:
                err.append({"id": f"batch_req_{i}", "custom_id": line["custom_id"], "response": None,
                            "error": {"code": "batch_expired", "message": "This request could not be executed "
                                      "before the completion window expired."}})
            elif fault is not None and fault.kind == "failed_lines" and i % fault.n == 0:
                err.append({"id": f"batch_req_{i}", "custom_id": line["custom_id"],
                            "response": {"status_code": 400, "request_id": f"req_{i}",
                                         "body": {"error": {"message": "fake bad request", "type":
                                                            "invalid_request_error", "code": None}}},
                            "error": None})
            else:
                out.append(batch_output_line(self, line, "openai", index=i))
        b["request_counts"] = {"total": len(lines), "completed": len(out), "failed": len(err)}
        b["status"] = "expired" if fault is not None and fault.kind == "expired" else "completed"
        if out:
            b["output_file_id"] = self._new_file(_jsonl(out), "batch_output", "output.jsonl")["id"]
        if err:
            b["error_file_id"] = self._new_file(_jsonl(err), "batch_output", "errors.jsonl")["id"]


def _jsonl(objs: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(o) + "\n" for o in objs).encode("utf-8")


def batch_output_line(server: FakeServer, line: dict[str, Any], style: str = "openai", index: int = 0) -> dict:
    """The result line an engine writes for one batch input ``line``, answered by ``server``'s responder:
    "openai" (OpenAI Batch API), "vllm" (``vllm run-batch``: ids "vllm-...", request_id "vllm-batch-...") or
    "sglang" (its batch body holds "choices" as one object)."""
    with server._lock:
        server.batch_lines += 1
    body = server._completion(line["body"])
    if style == "vllm":
        return {"id": f"vllm-{index:032x}", "custom_id": line["custom_id"],
                "response": {"status_code": 200, "request_id": f"vllm-batch-{index:032x}", "body": body},
                "error": None}
    if style == "sglang":
        body = {**body, "choices": body["choices"][0], "system_fingerprint": None}
        body.pop("timings", None)
        return {"id": f"batch_req_{index}", "custom_id": line["custom_id"],
                "response": {"status_code": 200, "request_id": body["id"], "body": body}, "error": None}
    if style != "openai":
        raise ValueError(f"unknown batch output style {style!r}; use openai, vllm or sglang")
    return {"id": f"batch_req_{index}", "custom_id": line["custom_id"],
            "response": {"status_code": 200, "request_id": f"req_{index}", "body": body}, "error": None}


def answer_batch_file(server: FakeServer, in_path, out_path, style: str = "openai") -> int:
    """Answer every line of a batch input file into a result file (as ``vllm run-batch -i IN -o OUT`` would)."""
    n = 0
    with open(in_path, encoding="utf-8") as src, open(out_path, "w", encoding="utf-8") as dst:
        for raw in src:
            if raw.strip():
                n += 1
                dst.write(json.dumps(batch_output_line(server, json.loads(raw), style, index=n)) + "\n")
    return n


def _multipart(content_type: str, data: bytes) -> dict[str, tuple[str | None, bytes]]:
    """The parts of a multipart/form-data body: name -> (filename, bytes)."""
    from email.parser import BytesParser
    from email.policy import HTTP

    msg = BytesParser(policy=HTTP).parsebytes(f"Content-Type: {content_type}\r\n\r\n".encode() + data)
    parts = {}
    for part in msg.iter_parts():
        name = part.get_param("name", header="content-disposition")
        parts[name] = (part.get_filename(), part.get_payload(decode=True) or b"")
    return parts


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
            data = self.rfile.read(length) or b"{}"
            try:
                return json.loads(data)
            except ValueError:  # not JSON (e.g. a multipart upload to a route that does not exist): answered 404
                return {}

        def _files_and_batches_get(self, path: str) -> bool:
            parts = path.split("/")  # "", "v1", "files"|"batches", id, ["content"]
            if len(parts) >= 4 and parts[1] == "v1" and parts[2] == "files" and parts[3] in server.files:
                if len(parts) == 5 and parts[4] == "content":
                    self._send(200, server.files[parts[3]]["content"], {"Content-Type": "application/jsonl"})
                else:
                    self._json(200, server._file_object(parts[3]))
                return True
            if len(parts) == 4 and parts[1] == "v1" and parts[2] == "batches" and parts[3] in server.batches:
                self._json(200, server._poll_batch(parts[3]))
                return True
            return False

        def do_GET(self) -> None:
            if self._files_and_batches_get(self.path.split("?")[0].rstrip("/")):
                return
            if self.path.rstrip("/") == "/stats":  # counters, for a server running in another process
                self._json(200, {"requests": server.requests, "max_in_flight": server.max_in_flight})
            elif self.path.rstrip("/") == "/v1/models":
                self._json(200, {"object": "list", "data": [{"id": server.model, "object": "model", "owned_by": "fake"}]})
            else:
                self._json(404, {"error": {"message": f"no route {self.path}"}})

        def do_POST(self) -> None:
            path = self.path.split("?")[0].rstrip("/")
            if path == "/v1/files":
                length = int(self.headers.get("Content-Length") or 0)
                parts = _multipart(self.headers.get("Content-Type", ""), self.rfile.read(length))
                if "file" not in parts:
                    self._json(400, {"error": {"message": "no file part", "type": "invalid_request_error"}})
                    return
                purpose = parts.get("purpose", (None, b""))[1].decode()
                self._json(200, server._new_file(parts["file"][1], purpose, parts["file"][0] or "upload.jsonl"))
                return
            body = self._read_body()
            if path == "/v1/batches":
                self._json(*server._new_batch(body))
                return
            if path.startswith("/v1/batches/") and path.endswith("/cancel"):
                bid = path.split("/")[3]
                if bid not in server.batches:
                    self._json(404, {"error": {"message": f"no batch {bid}"}})
                    return
                server.batches[bid]["status"] = "cancelled"
                self._json(200, server._batch_object(bid))
                return
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
                self._json(fault.status, {"error": {"message": fault.message, "type": "server_error"}})
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
