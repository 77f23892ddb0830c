"""Prompt templates: jinja2 files under superb/llm/prompts/NAME.j2, each identified by name and fingerprint.

``Template.id`` ("pointwise_yesno@3f2a9c1d0b") goes into every ChatRequest.template, hence into the cache key: edit
a template and its fingerprint changes, so old cached answers are not reused for the new prompt; a run's records
say exactly which prompt text produced them. Undefined variables raise (StrictUndefined) instead of rendering "".
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any

from superb.errors import SpecError

PROMPT_DIR = Path(__file__).with_name("prompts")
_NAME = re.compile(r"^[A-Za-z0-9_\-]+$")


def fingerprint(source: str) -> str:
    """Short sha256 (10 hex digits) of a template's source text."""
    return hashlib.sha256(source.encode("utf-8")).hexdigest()[:10]


@dataclass(frozen=True)
class Template:
    name: str
    source: str
    path: Path | None = None
    _compiled: Any = field(default=None, repr=False, compare=False)

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.source)

    @property
    def id(self) -> str:
        return f"{self.name}@{self.fingerprint}"

    @property
    def variables(self) -> frozenset[str]:
        """The variables the template reads (jinja2's own analysis)."""
        import jinja2
        from jinja2 import meta

        return frozenset(meta.find_undeclared_variables(jinja2.Environment().parse(self.source)))

    def render(self, **variables: Any) -> str:
        """The prompt text. A variable the template uses but was not given raises ValueError naming it."""
        import jinja2

        compiled = self._compiled
        if compiled is None:
            compiled = _environment().from_string(self.source)
            object.__setattr__(self, "_compiled", compiled)
        try:
            return compiled.render(**variables)
        except jinja2.UndefinedError as e:
            raise ValueError(f"template {self.id} ({self.path or 'inline'}): {e}; it uses "
                             f"{sorted(self.variables)}, got {sorted(variables)}") from None

    @staticmethod
    def from_string(name: str, source: str) -> "Template":
        """An inline template (tests, notebooks); same id/fingerprint rules as a file."""
        return Template(name=name, source=source)


@lru_cache(maxsize=1)
def _environment():
    import jinja2

    return jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=False, autoescape=False)


def available() -> list[str]:
    return sorted(p.stem for p in PROMPT_DIR.glob("*.j2"))


def load_template(name: Any) -> Any:
    """The template superb/llm/prompts/NAME.j2 (re-read each call, so an edited file gets a new fingerprint); a
    template object (anything that is not a string: it has ``render`` and ``id``) is returned as it is."""
    if not isinstance(name, str) and name is not None:
        return name
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(f"template name {name!r} is not a plain file stem; available: {', '.join(available())}")
    path = PROMPT_DIR / f"{name}.j2"
    if not path.is_file():
        raise FileNotFoundError(f"no prompt template {name!r} ({path}); available: {', '.join(available())}")
    return Template(name=name, source=path.read_text(encoding="utf-8"), path=path)


def template_name(value: Any, path: str) -> str:
    """A spec option's parser (superb.options): the name of a prompt template under superb/llm/prompts/."""
    names = available()
    if not isinstance(value, str) or value not in names:
        raise SpecError(path, f"expected the name of a prompt template, one of {names}, got {value!r}")
    return value


TemplateName = Annotated[str | None, template_name]  # None: the stage's default for its data set
TemplateRef = Annotated[Any, template_name]  # a template's name in a spec; from Python also a template object
