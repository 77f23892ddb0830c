"""What identifies a cached LLM answer and how it travels between caches.

The key is the sha256 of the canonical JSON of (model id, messages, sampling and logprob parameters, template id with
its fingerprint): ``key_material``, ``canonical``, ``cache_key``. It leaves out the endpoint URL, the API key and the
tag. ``CachedRow`` is one answer as a results folder ships it or a batch result brings it (checked on the way in:
its key must be the sha256 of its request); logprobs are stored as JSON [[token, logprob, {alternative: logprob}]].
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from superb.llm.types import ChatRequest, TokenLogprob

KEY_VERSION = 1


def key_material(model: str, request: ChatRequest) -> dict:
    """What the cache key is made of. The tag is excluded on purpose (accounting only)."""
    return {
        "v": KEY_VERSION,
        "model": model,
        "messages": [list(m) for m in request.messages],
        "template": request.template,
        "max_tokens": request.max_tokens,
        "temperature": request.temperature,
        "seed": request.seed,
        "logprobs": request.logprobs,
        "top_logprobs": request.top_logprobs,
        "logit_bias": [list(b) for b in request.logit_bias],
        "stop": list(request.stop),
    }


def canonical(model: str, request: ChatRequest) -> str:
    return json.dumps(key_material(model, request), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def cache_key(model: str, request: ChatRequest) -> str:
    return hashlib.sha256(canonical(model, request).encode("utf-8")).hexdigest()


def key_of_canonical(canonical: str) -> str:
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def canonical_json(material: dict) -> str:
    """The canonical text of key material read back from JSON (the exact form ``cache_key`` hashes)."""
    return json.dumps(material, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def dump_logprobs(logprobs: tuple[TokenLogprob, ...] | None) -> str | None:
    if logprobs is None:
        return None
    return json.dumps([[t.token, t.logprob, t.top] for t in logprobs], ensure_ascii=False)


def load_logprobs(raw: str | None) -> tuple[TokenLogprob, ...] | None:
    if raw is None:
        return None
    return tuple(TokenLogprob(tok, lp, dict(top)) for tok, lp, top in check_logprobs(json.loads(raw)))


def is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == value  # NaN != NaN


def check_logprobs(value: object) -> list:
    """``value`` if it is what the cache stores as logprobs, a list of [token, logprob, {alternative: logprob}]
    (strings, numbers that are not NaN); else ValueError naming the first entry that is not."""
    if not isinstance(value, list):
        raise ValueError(f"logprobs must be a list of [token, logprob, {{alternative: logprob}}], found "
                         f"{type(value).__name__} {str(value)[:60]!r}")
    for i, entry in enumerate(value):
        if not (isinstance(entry, list) and len(entry) == 3):
            raise ValueError(f"logprobs[{i}] must be [token, logprob, {{alternative: logprob}}], found "
                             f"{str(entry)[:60]!r}")
        token, logprob, top = entry
        if not isinstance(token, str) or not is_number(logprob):
            raise ValueError(f"logprobs[{i}] must start with a token (string) and its logprob (number), found "
                             f"{str(entry)[:60]!r}")
        if not isinstance(top, dict) or not all(isinstance(k, str) and is_number(v) for k, v in top.items()):
            raise ValueError(f"logprobs[{i}][2] must map alternative tokens to logprobs (numbers), found "
                             f"{str(top)[:60]!r}")
    return value


@dataclass(frozen=True)
class CachedRow:
    """One cached answer, as it travels between caches: no latency, no timestamp, no endpoint, no key of any API."""

    key: str
    model: str
    template: str
    request: str  # canonical JSON of the key material (its sha256 is the key)
    text: str
    logprobs: str | None  # JSON [[token, logprob, {alternative: logprob}], ...] as the cache stores it
    prompt_tokens: int
    completion_tokens: int

    def to_dict(self) -> dict:
        return {"key": self.key, "model": self.model, "template": self.template,
                "request": json.loads(self.request), "text": self.text,
                "logprobs": None if self.logprobs is None else json.loads(self.logprobs),
                "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens}

    @staticmethod
    def from_dict(row: dict) -> "CachedRow":
        """A row read from a shipped file; raises ValueError naming what is wrong (missing field, key mismatch)."""
        if not isinstance(row, dict):
            raise ValueError(f"a row must be a JSON object, found {type(row).__name__}")
        missing = [f for f in ("key", "model", "template", "request", "text") if f not in row]
        if missing:
            raise ValueError(f"missing field(s) {missing}")
        for name in ("key", "model", "template", "text"):
            if not isinstance(row[name], str):
                raise ValueError(f"{name!r} must be a string, found {type(row[name]).__name__} {row[name]!r}")
        if not row["model"]:
            raise ValueError("'model' is empty")
        for name in ("prompt_tokens", "completion_tokens"):
            count = row.get(name, 0)
            if count is not None and not (isinstance(count, int) and not isinstance(count, bool) and count >= 0):
                raise ValueError(f"{name!r} must be a whole number >= 0, found {count!r}")
        material = row["request"]
        if not isinstance(material, dict):
            raise ValueError(f"'request' is not an object: {str(material)[:80]!r}")
        canonical = canonical_json(material)
        if key_of_canonical(canonical) != row["key"]:
            raise ValueError(f"key {str(row['key'])[:12]} is not the sha256 of its request (edited or corrupted row)")
        if material.get("model") != row["model"] or material.get("template") != row["template"]:
            raise ValueError("model/template differ from those inside its request")
        logprobs = row.get("logprobs")
        if logprobs is not None:
            check_logprobs(logprobs)
        return CachedRow(key=row["key"], model=row["model"], template=row["template"], request=canonical,
                         text=row["text"],
                         logprobs=None if logprobs is None else json.dumps(logprobs, ensure_ascii=False),
                         prompt_tokens=int(row.get("prompt_tokens") or 0),
                         completion_tokens=int(row.get("completion_tokens") or 0))


@dataclass
class StoreCounts:
    """What ``store_rows`` did: new rows, rows already there with the same answer, rows there with another answer
    (kept, or replaced with replace=True)."""

    stored: int = 0
    identical: int = 0
    conflicts: int = 0
    replaced: int = 0


def same_logprobs(a: str | None, b: str | None) -> bool:
    if a == b:
        return True
    if a is None or b is None:
        return False
    return json.loads(a) == json.loads(b)  # the same numbers, written with other spacing
