"""The OpenAI Files and Batch APIs, as far as a batch round needs them: upload, create, poll, download.

Works against any endpoint that offers /v1/files and /v1/batches (OpenAI; SGLang's server; superb/testing/fakeserver.py),
through the openai package (its auth, errors and retries). ``vllm run-batch`` has no such API: export the file and
run it yourself (README, "Running large experiments").

Prices: the OpenAI Batch API charges half the synchronous price (``BATCH_DISCOUNT``), which is what
``superb batch submit --dry-run`` applies to ``[llm].prices``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from superb.errors import LLMError

BATCH_DISCOUNT = 0.5  # OpenAI Batch API: 50% of the synchronous price for the same model
MAX_LINES = 50_000  # OpenAI: at most 50,000 requests per batch input file
MAX_BYTES = 190 * 2**20  # OpenAI: at most 200 MB per batch input file (kept under it)
COMPLETION_WINDOW = "24h"
TERMINAL = ("completed", "expired", "failed", "cancelled")


@dataclass(frozen=True)
class BatchStatus:
    id: str
    status: str
    output_file_id: str | None = None
    error_file_id: str | None = None
    counts: dict[str, int] = field(default_factory=dict)  # total, completed, failed
    errors: tuple[str, ...] = ()  # batch-level errors (validation failures)

    @property
    def done(self) -> bool:
        return self.status in TERMINAL


class BatchAPI:
    def __init__(self, base_url: str, api_key: str, *, timeout_s: float = 120.0, max_retries: int = 4):
        import openai

        self.base_url = base_url.rstrip("/")
        self._client = openai.OpenAI(base_url=self.base_url, api_key=api_key, timeout=timeout_s,
                                     max_retries=max_retries)

    def _call(self, what: str, fn, *args: Any, **kw: Any) -> Any:
        import openai

        try:
            return fn(*args, **kw)
        except openai.APIStatusError as e:
            hint = (" (does this endpoint offer the OpenAI Batch API? vLLM's server does not: use `superb batch "
                    "export` and `vllm run-batch`)" if e.status_code == 404 else "")
            raise LLMError(f"{what} at {self.base_url} failed: status {e.status_code}: {e.message}{hint}") from None
        except openai.APIConnectionError as e:
            raise LLMError(f"{what} at {self.base_url} failed: cannot connect ({e.__cause__ or e})") from None

    def upload(self, path: Path) -> str:
        with open(path, "rb") as f:
            return self._call("uploading the batch file", self._client.files.create, file=(Path(path).name, f),
                              purpose="batch").id

    def create(self, file_id: str) -> BatchStatus:
        batch = self._call("creating the batch", self._client.batches.create, input_file_id=file_id,
                           endpoint="/v1/chat/completions", completion_window=COMPLETION_WINDOW)
        return _status(batch)

    def retrieve(self, batch_id: str) -> BatchStatus:
        return _status(self._call(f"polling batch {batch_id}", self._client.batches.retrieve, batch_id))

    def download(self, file_id: str, path: Path) -> Path:
        """Stream a result file to ``path``."""
        path = Path(path)
        tmp = path.with_name(path.name + ".part")

        def fetch() -> None:
            with self._client.files.with_streaming_response.content(file_id) as response, open(tmp, "wb") as f:
                for block in response.iter_bytes():
                    f.write(block)

        self._call(f"downloading file {file_id}", fetch)
        tmp.replace(path)
        return path

    def close(self) -> None:
        self._client.close()


def _status(batch: Any) -> BatchStatus:
    counts = getattr(batch, "request_counts", None)
    errors = getattr(batch, "errors", None)
    messages = tuple(f"{getattr(e, 'code', '')}: {getattr(e, 'message', '')}"
                     for e in (getattr(errors, "data", None) or []))
    return BatchStatus(id=batch.id, status=batch.status, output_file_id=batch.output_file_id,
                       error_file_id=batch.error_file_id,
                       counts={k: int(getattr(counts, k, 0) or 0) for k in ("total", "completed", "failed")},
                       errors=messages)
