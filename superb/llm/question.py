"""``LabelQuestion``: THE way superb asks about one document, for rerankers and judges alike.

A one-token label request (``ChatRequest.label``: temperature 0, seed 0, top logprobs) on a prompt template filled
with the query, the document's text and any further variables, named by the template's id (name@fingerprint, which
keys the response cache), and the reader that turns its answer into a value (superb.llm.answers). The pointwise and
deliberated rerankers, the scoring judges and a plug-in ask through it, so the same prompt on the same document is
the same request everywhere, answered once from the cache.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from superb.llm.answers import Reading
from superb.llm.types import LABEL_MAX_TOKENS, ChatRequest


@dataclass
class LabelQuestion:
    """``template`` (a superb.llm.prompts.Template), ``reader`` (superb.llm.answers: YesProbability, ExpectedGrade),
    the answer length and the requests' tag."""

    template: Any
    reader: Any
    max_tokens: int = LABEL_MAX_TOKENS
    tag: str = ""

    def request(self, query: str, product: str, *, tag: str | None = None, **variables: Any) -> ChatRequest:
        """The label request about ``product`` (its text) for ``query`` (``tag``: the asker's, else the question's)."""
        prompt = self.template.render(query=query, product=product, **variables)
        return ChatRequest.label(prompt, template=self.template.id, max_tokens=self.max_tokens,
                                 tag=self.tag if tag is None else tag)

    def read(self, completion: Any) -> Reading:
        return self.reader.read(completion)
