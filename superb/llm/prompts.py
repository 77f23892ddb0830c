"""Prompt templates: jinja2 files under superb/llm/prompts/NAME.j2, or a file of the user's (a path ending in
``.j2``, read from the current folder), each identified by name (the file's stem) and fingerprint.

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
            raise SpecError("template", f"template {self.id} ({self.path or 'inline'}): {e}; it uses "
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


def is_file_ref(value: Any) -> bool:
    """Whether a template option names a file of the user's (a path ending in ``.j2``) rather than a package name."""
    return isinstance(value, str) and value.endswith(".j2")


def _read_file(ref: str, key: str = "template") -> Template:
    """The user's template file ``ref``; SpecError at ``key`` (the spec option naming it) when the file is missing, not
    UTF-8 or not valid jinja2 (with its line)."""
    import jinja2

    path = Path(ref).expanduser()
    if not path.is_file():
        raise SpecError(key, f"prompt template file {ref!r} not found (relative paths are read from the "
                             f"current folder, {Path.cwd()}); give an existing .j2 file, or a package "
                             f"template's name: {', '.join(available())}")
    try:
        source = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise SpecError(key, f"prompt template file {path} is not UTF-8 text ({e.reason} at byte {e.start}); "
                             "save it as UTF-8") from None
    try:
        _environment().parse(source)
    except jinja2.TemplateSyntaxError as e:
        raise SpecError(key, f"{path}:{e.lineno}: not a valid jinja2 template: {e.message}") from None
    return Template(name=path.stem, source=source, path=path)


def load_template(name: Any) -> Any:
    """The template superb/llm/prompts/NAME.j2, or the user's file NAME when it ends in ``.j2`` (re-read each call, so
    an edited file gets a new fingerprint); a template object (anything that is not a string: it has ``render`` and
    ``id``) is returned as it is."""
    if not isinstance(name, str) and name is not None:
        return name
    if is_file_ref(name):
        return _read_file(name)
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(f"template name {name!r} is not a plain file stem; available: {', '.join(available())}")
    path = PROMPT_DIR / f"{name}.j2"
    if not path.is_file():
        raise FileNotFoundError(f"no prompt template {name!r} ({path}); available: {', '.join(available())}")
    return Template(name=name, source=path.read_text(encoding="utf-8"), path=path)


def file_records(table: Any, path: str = "") -> dict[str, dict[str, str]]:
    """The user's prompt files a spec table names (any ``template`` key whose value is a .j2 path, at any depth), by
    key path: the file as given, its sha256 and the template id its requests carry (for provenance.json)."""
    found: dict[str, dict[str, str]] = {}
    items = table.items() if isinstance(table, dict) else enumerate(table) if isinstance(table, list) else ()
    for key, value in items:
        where = f"{path}[{key}]" if isinstance(key, int) else f"{path}.{key}" if path else str(key)
        if key == "template" and is_file_ref(value):
            file = Path(value).expanduser()
            if file.is_file():
                found[where] = {"file": value, "sha256": hashlib.sha256(file.read_bytes()).hexdigest(),
                                "id": load_template(value).id}
            else:
                found[where] = {"file": value, "missing": "the file was gone when the results were written"}
        else:
            found.update(file_records(value, where))
    return found


def template_name(value: Any, path: str) -> str:
    """A spec option's parser (superb.options): the name of a prompt template under superb/llm/prompts/, or the path
    of a .j2 file of the user's (read and parsed here, so a missing or broken file is refused with the spec)."""
    if is_file_ref(value):
        _read_file(value, path)
        return value
    names = available()
    if not isinstance(value, str) or value not in names:
        raise SpecError(path, f"expected the name of a prompt template, one of {names}, or the path of a .j2 file "
                              f"of your own, got {value!r}")
    return value


def require_variables(template: Template, allowed: frozenset[str], path: str, filled_by: str) -> None:
    """Refuse a template that reads a variable the stage does not fill (``allowed``: those of the stage's own
    template), before any request is built: SpecError naming the variables, the file and what the stage fills."""
    extra = sorted(template.variables - allowed)
    if extra:
        raise SpecError(path, f"the prompt template {template.path or template.name} reads {extra}, which "
                              f"{filled_by} does not fill; it fills {sorted(allowed)}")


TemplateName = Annotated[str | None, template_name]  # None: the stage's default for its data set
TemplateRef = Annotated[Any, template_name]  # a template's name in a spec; from Python also a template object
