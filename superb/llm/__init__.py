"""The LLM access layer: one openai-based client with concurrency, retries, a persistent cache and usage accounting.

    from superb.llm import LLMConfig, open_llm, ChatRequest
    with open_llm(LLMConfig()) as client:          # no base_urls: starts the embedded local model
        [c] = client.complete_many([ChatRequest.chat(None, "Say yes.", max_tokens=2)])

Importing this package is cheap: openai and xllamacpp load on first use.
"""

from superb.llm.types import ChatRequest, Completion, TokenLogprob  # noqa: F401
from superb.llm.config import LLMConfig  # noqa: F401
from superb.llm.cache import ResponseCache  # noqa: F401
from superb.llm.cache_rows import cache_key  # noqa: F401
from superb.llm.usage import Usage  # noqa: F401
from superb.llm.client import LLMClient  # noqa: F401
from superb.llm.connect import describe, open_llm  # noqa: F401  (superb.llm.connect.connect -> (client, close))
from superb.llm.dryrun import DryRunClient  # noqa: F401
from superb.llm.prompts import Template, load_template  # noqa: F401
