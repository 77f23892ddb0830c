"""Spec texts for end-to-end `superb run` tests on the Chorus data set: a PISA BM25 first stage and LLM rerankers on
the fake OpenAI server (superb/testing/fakeserver.py), over a handful of Chorus queries."""

from __future__ import annotations

QUERIES = ["laptop", "bluetooth speaker", "aa battery", "hdmi cable", "monitor", "tablet"]


def chorus_spec(name: str, base_url: str, cache, rerankers: str, *, queries=QUERIES, description: str | None = None,
                evaluation: str = "n_resamples = 200", model: str = "fake-model", llm: str = "max_retries = 0",
                first_stage: str = "BM25", depth: int = 20) -> str:
    """A spec named ``name`` on the Chorus ``queries``.

    [evaluation]: P@5 and nDCG@10, then the lines ``evaluation``. [llm]: ``model`` at ``base_url``, the API key in
    SUPERB_TEST_KEY, the response cache at ``cache``, then the lines ``llm``. Pipelines: PISA BM25 to ``depth`` named
    ``first_stage``, then ``rerankers`` (the spec's other [[pipelines]] tables, as TOML text).
    """
    subset = ", ".join(f'"{q}"' for q in queries)
    described = f'description = "{description}"\n' if description is not None else ""
    return f"""
name = "{name}"
{described}[dataset]
name = "chorus"
[queries]
subset = [{subset}]
[evaluation]
measures = ["P@5", "nDCG@10"]
{evaluation}
[llm]
model = "{model}"
base_urls = ["{base_url}"]
api_key_env = "SUPERB_TEST_KEY"
cache_path = "{cache}"
{llm}
[[pipelines]]
name = "{first_stage}"
first_stage = {{ engine = "pisa", model = "bm25", depth = {depth} }}
{rerankers}"""
