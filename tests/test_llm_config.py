"""[llm] values are type- and range-checked before anything runs: one test per case of issue 12.1, each naming the key
path, what was found and what is allowed; and the failure budget behind `superb run`'s exit code 3."""

from __future__ import annotations

import pytest

from superb.errors import SpecError
from superb.llm import LLMConfig


def error_of(table: dict) -> str:
    with pytest.raises(SpecError) as info:
        LLMConfig.from_spec(table)
    return str(info.value)


def test_temperature_must_be_a_number():
    assert error_of({"temperature": "hot"}) == "llm.temperature: expected a number from 0 to 2, found str 'hot'"


def test_temperature_range():
    assert error_of({"temperature": 2.5}) == "llm.temperature: must be from 0 to 2, found 2.5"
    assert LLMConfig.from_spec({"temperature": 0}).temperature == 0


def test_model_must_be_a_string():
    msg = error_of({"model": 5})
    assert msg.startswith("llm.model: expected the model id as a string") and msg.endswith("found int 5")


def test_seed_must_be_an_integer():
    assert error_of({"seed": "abc"}) == "llm.seed: expected an integer, found str 'abc'"
    assert error_of({"seed": 1.5}) == "llm.seed: expected an integer, found float 1.5"


def test_prices_must_be_a_table_of_tables():
    msg = error_of({"prices": 5})
    assert msg.startswith("llm.prices: expected a table of model = {prompt = $/1M tokens") and "found int 5" in msg
    assert error_of({"prices": {"gpt": 5}}).startswith("llm.prices.gpt: expected {prompt = $/1M, completion = $/1M}")
    assert error_of({"prices": {"gpt": {"prompt": -1}}}).startswith("llm.prices.gpt:")


def test_api_key_env_must_be_a_variable_name():
    msg = error_of({"api_key_env": 3})
    assert msg.startswith("llm.api_key_env: expected the NAME of an environment variable") and "found int 3" in msg


def test_a_key_pasted_into_api_key_env_is_refused_without_echoing_it():
    key = "sk-test-0123456789abcdefDEADBEEF"
    msg = error_of({"api_key_env": key})
    assert msg.startswith("llm.api_key_env: expected the NAME of an environment variable")
    assert key not in msg and f"a string of {len(key)} characters" in msg and "never in the spec" in msg


def test_backoff_is_reported_under_its_own_key():
    assert error_of({"backoff_s": -1}) == "llm.backoff_s: must be >= 0 seconds, found -1"
    assert error_of({"timeout_s": 0}) == "llm.timeout_s: must be > 0 seconds, found 0"


def test_integers_refuse_floats_and_bools():
    assert error_of({"concurrency": 2.0}) == "llm.concurrency: expected an integer >= 1, found float 2.0"
    assert error_of({"max_retries": True}) == "llm.max_retries: expected an integer >= 0, found bool True"
    assert error_of({"n_ctx": 100}) == "llm.n_ctx: must be >= 256 tokens, found 100"


def test_choices_list_the_allowed_values():
    assert error_of({"on_failure": "ignore"}) == "llm.on_failure: found 'ignore'; expected one of record, fail"
    assert error_of({"embedded_model": 7}) == "llm.embedded_model: expected one of 1.5b, 0.5b, found int 7"
    assert error_of({"cache_path": ""}) == "llm.cache_path: is empty; remove the key to use the default"


def test_the_spec_path_prefix_is_the_callers():
    with pytest.raises(SpecError, match=r"^judge\.llm\.seed: expected an integer"):
        LLMConfig.from_spec({"seed": "x"}, path="judge.llm")
    with pytest.raises(SpecError, match=r"^llm: expected a table, found str"):
        LLMConfig.from_spec("http://localhost:8000/v1")


def test_direct_construction_is_checked_too():
    with pytest.raises(SpecError, match=r"^temperature: expected a number"):
        LLMConfig(temperature="hot")
    assert LLMConfig(model="m", base_urls=["http://127.0.0.1:1/v1"]).base_urls == ("http://127.0.0.1:1/v1",)


def test_max_failure_share_bounds_the_accepted_failures():
    assert error_of({"max_failure_share": 1.5}) == "llm.max_failure_share: must be from 0 to 1, found 1.5"
    strict = LLMConfig()
    assert strict.failure_excess(0, 100) is None
    assert strict.failure_excess(1, 100) == ("1 of 100 LLM requests failed (1.0%), more than llm.max_failure_share = "
                                             "0; their components used counted fallbacks")
    lenient = LLMConfig(max_failure_share=0.05)
    assert lenient.failure_excess(5, 100) is None and lenient.failure_excess(6, 100) is not None


def test_prompt_cache_is_a_boolean_placement_option():
    """[llm] prompt_cache: on by default (today's embedded server), false evaluates every prompt from scratch; it says
    how the server computes, not what is asked, so it is no part of the shard spec digest (nor of the cache key)."""
    from superb.run.shards import PLACEMENT_KEYS

    assert LLMConfig().prompt_cache is True
    assert LLMConfig.from_spec({"prompt_cache": False}).prompt_cache is False
    assert "llm.prompt_cache: expected true or false, found str 'no'" in error_of({"prompt_cache": "no"})
    assert "llm.prompt_cache" in PLACEMENT_KEYS
