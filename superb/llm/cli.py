"""`superb llm serve` (the embedded model as a standalone OpenAI-compatible server) and `superb llm check`."""

from __future__ import annotations

import argparse
import sys
import threading
import time
from pathlib import Path
from typing import Any

from superb.errors import SpecError
from superb.options import read_toml
from superb.llm import ChatRequest, LLMConfig, open_llm
from superb.llm.model import MODELS, resolve_model
from superb.llm.server import EmbeddedServer

CHECK_PROMPT = "Is a stainless steel water bottle relevant to the search query 'water bottle'? Answer yes or no."


def register(subparsers: Any) -> None:
    llm = subparsers.add_parser("llm", help="serve or check the LLM endpoint")
    sub = llm.add_subparsers(title="llm commands", metavar="LLM_COMMAND")

    serve = sub.add_parser("serve", help="serve the embedded model on 127.0.0.1 until Ctrl-C")
    serve.add_argument("--model", choices=["1.5b", "0.5b"], default="1.5b", help="embedded model (default 1.5b)")
    serve.add_argument("--port", type=int, default=None, help="port (default: a free one)")
    serve.add_argument("--n-parallel", type=int, default=1, help="server slots (default 1: best on 2 cores)")
    serve.add_argument("--threads", type=int, default=2)
    serve.add_argument("--n-ctx", type=int, default=4096)
    serve.add_argument("--no-prompt-cache", action="store_true",
                       help="evaluate every prompt from scratch: answers independent of the order of requests, "
                            "slower ([llm] prompt_cache = false; docs/reproducibility.md)")
    serve.set_defaults(func=_serve)

    check = sub.add_parser("check", help="make one real call through the configured endpoint and report it")
    check.add_argument("--spec", type=Path, default=None, help="a TOML spec whose [llm] table to use")
    check.add_argument("--model", choices=["1.5b", "0.5b"], default=None, help="embedded model, when no spec says")
    check.set_defaults(func=_check)
    llm.set_defaults(func=lambda args: llm.print_help() or 2)


def _llm_table(spec: Path | None) -> dict[str, Any]:
    if spec is None:
        return {}
    doc = read_toml(spec)  # bad bytes or syntax: a SpecError at FILE:LINE:COLUMN
    table = doc.get("llm", {})
    if not isinstance(table, dict):
        raise SpecError("llm", f"expected a table, found {table!r}")
    return table


def _serve(args: argparse.Namespace) -> int:
    spec = MODELS[args.model]
    path = resolve_model(args.model)
    with EmbeddedServer(path, spec.alias, n_ctx=args.n_ctx, n_parallel=args.n_parallel, threads=args.threads,
                        port=args.port, prompt_cache=not args.no_prompt_cache) as server:
        print(f"serving {spec.alias} ({path}) at {server.base_url} (ready in {server.startup_s:.1f} s)", flush=True)
        print(f'use it with: [llm] model = "{spec.alias}", base_urls = ["{server.base_url}"]; Ctrl-C to stop',
              flush=True)
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            print("stopping", file=sys.stderr)
    return 0


def _check(args: argparse.Namespace) -> int:
    table = _llm_table(args.spec)
    if args.model:
        table["embedded_model"] = args.model
    config = LLMConfig.from_spec(table).with_(cache="off", on_failure="fail")  # a real call, errors shown
    where = ", ".join(config.base_urls) if config.base_urls else f"embedded {config.embedded_model} model (starting)"
    print(f"endpoint: {where}", flush=True)
    start = time.perf_counter()
    with open_llm(config) as client:
        client.ensure_endpoint()  # the embedded server starts here rather than on the first call
        opened = time.perf_counter() - start
        print(f"model: {client.model} at {', '.join(client.config.base_urls)} (ready in {opened:.1f} s)", flush=True)
        request = ChatRequest.chat(None, CHECK_PROMPT, max_tokens=4, logprobs=True, top_logprobs=3, tag="check")
        c = client.complete(request)
    top = c.logprobs[0].top if c.logprobs else {}
    print(f"answer: {c.text!r}")
    print(f"first-token alternatives: {', '.join(f'{t!r}={lp:.2f}' for t, lp in top.items()) or 'none returned'}")
    print(f"latency: {c.latency_s:.2f} s; prompt tokens {c.prompt_tokens} (server-cached {c.cached_prompt_tokens}), "
          f"completion tokens {c.completion_tokens}")
    return 0
