"""The prompt template a reranker asks with: its own default (the passage form on a passage data set), a package
template named in the spec, or a .j2 file of the user's (e.g. another tool's prompt, for a model trained on it).

A user's file may read only the variables the stage fills, which are those of the stage's own template: checked when
the stage is built, before any request, so a typo in a variable is a SpecError naming it, not a failed run. How the
answer is read does not change with the prompt (a pointwise ``yesno`` stage still reads P(yes) at the first token),
so a file must ask for the same answer as the template it replaces; answers that do not follow are counted as
repaired or failed like any others. The file's stem and fingerprint name its requests in the cache, so an edited
file never reuses the old file's answers.
"""

from __future__ import annotations

from typing import Any

from superb.errors import SpecError
from superb.llm.prompts import is_file_ref, load_template, require_variables

#: the passage form of each product template that has one (TREC DL: the papers' prompts, no shop wording)
PASSAGE_TEMPLATES = {
    "pointwise_yesno": "pointwise_yesno_passage",
    "listwise_rankgpt": "listwise_rankgpt_passage",
    "listwise_first": "listwise_first_passage",
    "setwise_best": "setwise_best_passage",
    "pairwise_ab": "pairwise_ab_passage",
}


def default_template(name: str, dataset: Any) -> str:
    """The default template ``name`` for ``dataset`` (a reranker's ``text.dataset``): its passage form when it holds
    passages (``text_kind = "passage"``); a product template that has no passage form is refused there, so that a
    shop prompt is never put to passages unasked."""
    kind = getattr(dataset, "text_kind", "product")
    if kind != "passage":
        return name
    if name not in PASSAGE_TEMPLATES:
        raise SpecError("template",
                        f"the data set holds passages and the default template {name!r} is written for products; "
                        f"name a template (passage templates: {sorted(PASSAGE_TEMPLATES.values())})")
    return PASSAGE_TEMPLATES[name]


def stage_template(given: str | None, default: str, dataset: Any, stage: str) -> str:
    """The template ``stage`` (a type name, for messages) asks with: ``given`` when the spec names one, else its
    ``default`` for ``dataset`` (``default_template``). A user's .j2 file is read now and refused if it reads a
    variable the default does not."""
    if given is None:
        return default_template(default, dataset)
    if is_file_ref(given):
        require_variables(load_template(given), load_template(default).variables, "template",
                          f"a {stage} stage")
    return given
