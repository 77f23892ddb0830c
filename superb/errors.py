"""Exception types. Every message names the key, column or file at fault and says how to fix it."""

from __future__ import annotations

from pathlib import Path
from typing import Any


class SuperbError(Exception):
    """Base class of all errors raised on bad input or failed resources."""


class SpecError(SuperbError, ValueError):
    """An experiment spec is wrong: unknown key, wrong type, bad value. The message carries the key path."""

    def __init__(self, path: str, message: str):
        self.path = path
        super().__init__(f"{path}: {message}" if path else message)


class SpecErrors(SpecError):
    """Several independent errors of one spec, reported together (superb.run.spec reads every part it can before it
    raises). ``errors`` holds them in the spec's order; the message is one error per line, so that the CLI's
    ``superb: error: ...`` prefix introduces the first and each further one starts with its own key path."""

    def __init__(self, errors: list[SpecError]):
        self.errors = list(errors)
        first = self.errors[0]
        self.path = first.path
        lines = [str(e) for e in self.errors]
        more = f"\n({len(lines)} errors in this spec; fix them all before running)" if len(lines) > 1 else ""
        ValueError.__init__(self, "\n".join(lines) + more)


class Errors:
    """Collects the SpecErrors of independent parts of a spec, so that one reading reports them all
    (:class:`superb.errors.SpecErrors`); a part that failed gives ``None`` and the parts that depend on it are
    not checked (their errors would only repeat the first)."""

    def __init__(self) -> None:
        self.found: list[SpecError] = []

    def part(self, read: Any, *args: Any, **kw: Any) -> Any:
        try:
            return read(*args, **kw)
        except SpecErrors as many:
            self.found.extend(many.errors)
        except SpecError as err:
            self.found.append(err)
        return None

    def raise_any(self) -> None:
        if len(self.found) == 1:
            raise self.found[0]
        if self.found:
            raise SpecErrors(self.found)


class DataError(SuperbError):
    """A data file is missing, corrupt, or has the wrong columns. The message names the file and how to get it."""


class StageError(SuperbError):
    """A stage failed while it ran (a plug-in's ``score()`` raised, a transformer returned documents it was not
    given): the message names the stage by its key path and type."""


class LLMError(SuperbError):
    """An LLM call failed after its retries, or the endpoint/model could not be set up."""


class MissingDependencyError(SuperbError, ImportError):
    """An optional backend is not installed; the message carries the pip command."""

    def __init__(self, what: str, pip_command: str):
        super().__init__(f"{what} is not installed. Install it with: {pip_command}")


def utf8_error(file: Path, error: UnicodeDecodeError | None = None, column_first: bool = False) -> DataError:
    """The DataError for a file that is not UTF-8: the first bad line and column, the bytes around it, the fix
    (``column_first``: the message starts ``FILE:LINE:COLUMN:``, as TOML files' syntax errors do)."""
    with open(file, "rb") as handle:
        for number, raw in enumerate(handle, 1):  # UTF-8 never puts a newline byte inside a character
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError as bad:
                near = raw[max(0, bad.start - 30): bad.end + 30]
                place = f"{number}:{bad.start + 1}: not UTF-8 text: byte(s) {raw[bad.start:bad.end]!r}" \
                    if column_first else f"{number}: not UTF-8 text: byte(s) {raw[bad.start:bad.end]!r} at column " \
                                         f"{bad.start + 1}"
                return DataError(f"{file}:{place} ({bad.reason}), near {near!r}. Save the file as UTF-8, e.g. "
                                 f"`iconv -f latin1 -t utf-8 {file.name} > fixed.{file.name.rsplit('.', 1)[-1]}`")
    return DataError(f"{file}: not UTF-8 text ({error}). Save the file as UTF-8")
