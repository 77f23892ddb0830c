"""Stage types from outside superb: a spec's ``type`` names superb's own (``RERANKERS``), a short name an installed
package registers in the entry-point group ``superb.rerankers``, or any importable object as ``"module:Attr"`` (a
dotted module importable from the current folder or the installed packages, or a ``.py`` file: ``"my_methods.py:
ThreeGrade"``, read relative to the current folder).

What the name resolves to decides how the stage is built (:func:`resolve`):

- a class with ``from_spec`` (a ``superb.transformers.Reranker`` subclass, as every built-in type): built exactly as
  superb's own, its spec options read from its constructor;
- any other ``pt.Transformer`` class, or a factory (a function) that returns a ``pt.Transformer``: its keyword
  parameters are its spec options, and the transformer it makes runs inside
  :class:`superb.transformers.transformer_stage.TransformerStage`, which checks and orders what it returns.

Every failure of the name is a SpecError at ``<path>.type`` naming the module and the reason: a module that does not
import (with the exception it raised), an attribute that is not there, an object that is not a stage. Nothing here
imports a module before a spec names it.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import re
import sys
from dataclasses import dataclass
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any, Mapping

from superb.errors import SpecError

ENTRY_POINT_GROUP = "superb.rerankers"
_DOTTED = re.compile(r"^[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*$")


@dataclass(frozen=True)
class PluginRef:
    """Where a plug-in type came from, for provenance.json: the spec's ``type``, the module (or file), and the file's
    sha256 or the installed distribution's name and version."""

    type: str
    module: str
    attr: str
    file: str | None
    sha256: str | None
    distribution: str | None = None
    version: str | None = None

    def record(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v is not None}


def is_plugin_name(type_name: str) -> bool:
    """Whether ``type_name`` names an object by ``module:Attr`` (or ``file.py:Attr``) rather than a short name."""
    return ":" in type_name


def entry_points() -> dict[str, metadata.EntryPoint]:
    """The short names installed packages register in :data:`ENTRY_POINT_GROUP` (read each call: cheap, and a package
    installed while a session runs is seen)."""
    return {ep.name: ep for ep in metadata.entry_points(group=ENTRY_POINT_GROUP)}


def load(type_name: str, path: str) -> tuple[Any, PluginRef]:
    """The object a plug-in type names, imported now, and where it came from. SpecError at ``path.type`` otherwise."""
    where = f"{path}.type" if path else "type"
    if is_plugin_name(type_name):
        module_name, _, attr = type_name.rpartition(":")
        if not module_name or not attr:
            raise SpecError(where, f"{type_name!r}: write a plug-in type as \"module:Attr\" (a class or factory "
                                   "importable from the current folder or an installed package) or \"file.py:Attr\"")
        module = _import(module_name, where)
        return _attribute(module, module_name, attr, where), _ref(type_name, module, module_name, attr)
    found = entry_points().get(type_name)
    if found is None:
        return None, None  # not a plug-in name: the registry says what is known
    try:
        obj = found.load()
    except Exception as exc:  # noqa: BLE001 - a plug-in's import error of any kind is the user's to read
        raise SpecError(where, f"type {type_name!r} is registered by an installed package as {found.value!r} (entry "
                               f"point group {ENTRY_POINT_GROUP!r}), but importing it failed: "
                               f"{type(exc).__name__}: {exc}") from None
    module_name = found.value.partition(":")[0]
    dist = getattr(found, "dist", None)
    ref = _ref(type_name, sys.modules.get(module_name), module_name, found.value.partition(":")[2])
    if dist is not None:
        ref = PluginRef(ref.type, ref.module, ref.attr, ref.file, ref.sha256, dist.metadata["Name"], dist.version)
    return obj, ref


def _import(module_name: str, where: str) -> Any:
    if module_name.endswith(".py"):
        return _import_file(Path(module_name).expanduser(), where)
    if not _DOTTED.match(module_name):
        raise SpecError(where, f"{module_name!r} is not a module name (dotted identifiers, e.g. my_methods or "
                               "mypkg.rerankers) nor a .py file")
    cwd = str(Path.cwd())
    if cwd not in sys.path and "" not in sys.path:
        sys.path.append(cwd)  # "importable from the current folder", as `python -m` has it (after the packages)
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and (exc.name == module_name or module_name.startswith(exc.name + ".")):  # itself, not a dep
            raise SpecError(where, f"plug-in module {module_name!r} not found: it must be importable from the "
                                   f"current folder ({cwd}) or an installed package (pip install ...)") from None
        raise SpecError(where, f"plug-in module {module_name!r} failed to import: ModuleNotFoundError: {exc}") \
            from None
    except Exception as exc:  # noqa: BLE001 - SyntaxError, an error at its import time: the module's, not superb's
        raise SpecError(where, f"plug-in module {module_name!r} failed to import: {type(exc).__name__}: {exc}") \
            from None


def _import_file(file: Path, where: str) -> Any:
    if not file.is_file():
        raise SpecError(where, f"plug-in file {str(file)!r} not found (relative paths are read from the current "
                               f"folder, {Path.cwd()})")
    digest = hashlib.sha256(file.read_bytes()).hexdigest()
    name = f"superb_plugin_{file.stem}_{digest[:12]}"  # an edited file is a new module; the same file imports once
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, file)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # noqa: BLE001 - the file's own error, reported with its name
        del sys.modules[name]
        raise SpecError(where, f"plug-in file {str(file)!r} failed to import: {type(exc).__name__}: {exc}") from None
    return module


def _attribute(module: Any, module_name: str, attr: str, where: str) -> Any:
    obj = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            names = sorted(n for n in dir(module) if not n.startswith("_"))
            raise SpecError(where, f"plug-in module {module_name!r} has no attribute {attr!r}; it defines {names}")
        obj = getattr(obj, part)
    return obj


def _ref(type_name: str, module: Any, module_name: str, attr: str) -> PluginRef:
    """The record of a plug-in: its file relative to the current folder when it lies there (no machine's absolute path
    is recorded: an installed module is named by its distribution), and the file's sha256."""
    file = getattr(module, "__file__", None)
    sha = hashlib.sha256(Path(file).read_bytes()).hexdigest() if file and Path(file).is_file() else None
    if file:
        try:
            file = Path(file).resolve().relative_to(Path.cwd().resolve()).as_posix()
        except ValueError:
            file = None
    dist = None
    top = module_name.split(".")[0]
    for name in _distributions().get(top, []) if not module_name.endswith(".py") else []:
        dist = name
        break
    version = None
    if dist is not None:
        try:
            version = metadata.version(dist)
            file = None  # an installed module is named by its distribution and version, not by where it lies
        except metadata.PackageNotFoundError:
            dist = None
    return PluginRef(type_name, module_name, attr, file, sha, dist, version)


@lru_cache(maxsize=1)
def _distributions() -> Mapping[str, list[str]]:
    """Top-level module -> the installed distributions providing it (read once: it scans every installed package)."""
    return metadata.packages_distributions()


def kind_of(obj: Any, type_name: str, path: str) -> str:
    """``"stage"`` (a class with ``from_spec``), ``"transformer"`` (a pt.Transformer class) or ``"factory"`` (a
    function); else a SpecError saying what a stage must be."""
    import pyterrier as pt

    if inspect.isclass(obj):
        if callable(getattr(obj, "from_spec", None)):
            return "stage"
        if issubclass(obj, pt.Transformer):
            return "transformer"
    elif callable(obj) and not isinstance(obj, pt.Transformer):
        return "factory"
    what = f"an instance of {type(obj).__name__}" if not inspect.isclass(obj) else f"the class {obj.__name__}"
    raise SpecError(f"{path}.type" if path else "type",
                    f"{type_name!r} is {what}, not a stage: name a superb.transformers.Reranker subclass, a "
                    "pt.Transformer class, or a function that returns a pt.Transformer (docs/extending.md)")
