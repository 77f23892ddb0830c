"""Stage types from outside superb: a spec's ``type`` names superb's own (``RERANKERS``), a short name an installed
package registers in the entry-point group ``superb.rerankers``, or any importable object as ``"module:Attr"`` (a
dotted module importable from the current folder or the installed packages, or a ``.py`` file: ``"my_methods.py:
ThreeGrade"``, read relative to the current folder).

What the name resolves to decides how the stage is built (:func:`kind_of`), and superb calls it only when it says
that it makes a stage:

- a ``pt.Transformer`` class with ``from_spec`` (a ``superb.transformers.Reranker`` subclass, as every built-in type):
  built exactly as superb's own, its spec options read from its constructor;
- any other ``pt.Transformer`` class, or a function that declares it returns one: its return annotation is
  ``pt.Transformer`` or a subclass (as ``pyterrier.text:scorer`` declares), or it carries :func:`stage_factory`
  (``@superb.extend.stage_factory``). Its keyword parameters are its spec options, and the transformer it makes runs
  inside :class:`superb.transformers.transformer_stage.TransformerStage`, which checks and orders what it returns.

Anything else (``os:system``, ``shutil:rmtree``, a class that is not a transformer, a function without that
annotation, a lambda, a built-in) is a SpecError naming the type and why, and is never called, dry run or not. A
string annotation (``from __future__ import annotations``) is read as a dotted name looked up in the function's module,
never evaluated. Importing the module is still needed to look at the object: a spec names code, and that code's
module runs when it is imported (docs/extending.md: a spec is code; a results folder's spec imports no plug-in unless
allowed, superb.run.spec).

Every failure of the name is a SpecError at ``<path>.type`` naming the module and the reason: a module that does not
import (with the exception it raised and the file:line, SystemExit included), an attribute that is not there, an
object that is not a stage, an entry-point name two installed packages claim or that shadows a built-in type. Nothing
here imports a module before a spec names it.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import re
import sys
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any, Mapping

from superb.errors import SpecError
from superb.faults import described, is_fault

ENTRY_POINT_GROUP = "superb.rerankers"
_DOTTED = re.compile(r"^[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*$")
STAGE_FACTORY = "__superb_stage_factory__"  # set by stage_factory: the function says it makes a stage


def stage_factory(func: Any) -> Any:
    """Mark a function as one that makes a stage (a ``pt.Transformer``), so that a spec may name it as a ``type``
    although its return annotation does not say so (docs/extending.md). Returns ``func`` itself."""
    if not inspect.isfunction(func):
        raise TypeError(f"stage_factory marks a function (def ...), got {type(func).__name__}")
    func.__dict__[STAGE_FACTORY] = True
    return func


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
    origin: str | None = field(default=None, compare=False)  # the module's file, absolute: for messages, not recorded

    def record(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v is not None and k != "origin"}


def is_plugin_name(type_name: str) -> bool:
    """Whether ``type_name`` names an object by ``module:Attr`` (or ``file.py:Attr``) rather than a short name."""
    return ":" in type_name


def entry_points(group: str = ENTRY_POINT_GROUP) -> dict[str, metadata.EntryPoint]:
    """The short names installed packages register in ``group`` (rerankers: :data:`ENTRY_POINT_GROUP`; judges:
    ``superb.judges``), each with the first package that registers it (:func:`claims` has them all). Read once per
    ``sys.path`` (it scans every installed package)."""
    return {name: found[0] for name, found in claims(group).items()}


def claims(group: str = ENTRY_POINT_GROUP) -> dict[str, list[metadata.EntryPoint]]:
    """Every registration of ``group``, by name: a name two packages claim has two entries."""
    return _claims(tuple(sys.path), group)


@lru_cache(maxsize=8)
def _claims(path: tuple[str, ...], group: str) -> dict[str, list[metadata.EntryPoint]]:
    found: dict[str, list[metadata.EntryPoint]] = {}
    for ep in metadata.entry_points(group=group):
        found.setdefault(ep.name, []).append(ep)
    return found


def _package(ep: metadata.EntryPoint) -> str:
    dist = getattr(ep, "dist", None)
    name = f"{dist.metadata['Name']} {dist.version}" if dist is not None else "an unnamed package"
    return f"{name} ({ep.value})"


def check_claims(type_name: str, path: str, *, builtin: str | None = None,
                 group: str = ENTRY_POINT_GROUP) -> None:
    """A SpecError at ``path.type`` when the spec's ``type_name`` is claimed twice in ``group``: by two installed
    packages, or by one and superb's own type (``builtin``, its "module:Class"). Both are named; superb picks
    neither."""
    found = claims(group).get(type_name, [])
    where = f"{path}.type" if path else "type"
    fix = (f"uninstall one of them, or name the class itself (type = \"module:Class\") instead of the short name "
           f"(entry-point group {group!r})")
    if builtin is not None and found:
        raise SpecError(where, f"type {type_name!r} is superb's own ({builtin}) and is also registered by "
                               f"{', '.join(_package(ep) for ep in found)}: superb does not pick one; {fix}")
    if len({ep.value for ep in found}) > 1:
        raise SpecError(where, f"type {type_name!r} is registered by several installed packages: "
                               f"{' and '.join(_package(ep) for ep in found)}; superb does not pick one: {fix}")


def load(type_name: str, path: str, group: str = ENTRY_POINT_GROUP) -> tuple[Any, PluginRef]:
    """The object a plug-in type names ("module:Attr", "file.py:Attr", or a short name of entry-point ``group``),
    imported now, and where it came from; (None, None) for a short name no package registers. SpecError at
    ``path.type`` otherwise."""
    where = f"{path}.type" if path else "type"
    if is_plugin_name(type_name):
        module_name, _, attr = type_name.rpartition(":")
        if not module_name or not attr:
            raise SpecError(where, f"{type_name!r}: write a plug-in type as \"module:Attr\" (a class or factory "
                                   "importable from the current folder or an installed package) or \"file.py:Attr\"")
        module = _import(module_name, where)
        return _attribute(module, module_name, attr, where), _ref(type_name, module, module_name, attr)
    check_claims(type_name, path, group=group)
    found = entry_points(group).get(type_name)
    if found is None:
        return None, None  # not a plug-in name: the registry says what is known
    try:
        obj = found.load()
    except BaseException as exc:  # noqa: BLE001 - a plug-in's import error of any kind (SystemExit too) is the user's
        if not is_fault(exc):
            raise
        raise SpecError(where, f"type {type_name!r} is registered by an installed package as {found.value!r} (entry "
                               f"point group {group!r}), but importing it failed: "
                               f"{described(exc)}") from None
    module_name = found.value.partition(":")[0]
    dist = getattr(found, "dist", None)
    ref = _ref(type_name, sys.modules.get(module_name), module_name, found.value.partition(":")[2])
    if dist is not None:
        ref = PluginRef(ref.type, ref.module, ref.attr, ref.file, ref.sha256, dist.metadata["Name"], dist.version,
                        ref.origin)
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
        raise SpecError(where, f"plug-in module {module_name!r} failed to import: {described(exc)}") from None
    except BaseException as exc:  # noqa: BLE001 - SyntaxError, SystemExit at its import time: the module's
        if not is_fault(exc):
            raise
        raise SpecError(where, f"plug-in module {module_name!r} failed to import: {described(exc)}") from None


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
    except BaseException as exc:  # noqa: BLE001 - the file's own error (SystemExit too), reported with its place
        del sys.modules[name]
        if not is_fault(exc):
            raise
        raise SpecError(where, f"plug-in file {str(file)!r} failed to import: {described(exc)}") from None
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
    origin = str(Path(file).resolve()) if file else None
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
    return PluginRef(type_name, module_name, attr, file, sha, dist, version, origin)


@lru_cache(maxsize=1)
def _distributions() -> Mapping[str, list[str]]:
    """Top-level module -> the installed distributions providing it (read once: it scans every installed package)."""
    return metadata.packages_distributions()


def kind_of(obj: Any, type_name: str, path: str) -> str:
    """``"stage"`` (a pt.Transformer class with ``from_spec``), ``"transformer"`` (another pt.Transformer class) or
    ``"factory"`` (a function that declares it makes a stage: :func:`makes_stage`); else a SpecError saying what a
    stage must be. ``obj`` is looked at, never called."""
    import pyterrier as pt

    if inspect.isclass(obj):
        if issubclass(obj, pt.Transformer):
            return "stage" if callable(getattr(obj, "from_spec", None)) else "transformer"
        why = f"the class {obj.__name__}, which is not a pt.Transformer"
    elif inspect.isfunction(obj) or inspect.ismethod(obj):
        if makes_stage(obj):
            return "factory"
        name = getattr(obj, "__name__", "")
        why = ("a lambda, which cannot declare that it makes a stage" if name == "<lambda>" else
               f"the function {name}, which does not declare that it makes a stage (no return annotation "
               "pt.Transformer, no @superb.extend.stage_factory)")
    elif inspect.isbuiltin(obj) or inspect.isroutine(obj):
        why = f"the built-in {getattr(obj, '__name__', type(obj).__name__)}, not a stage"
    else:
        why = f"an instance of {type(obj).__name__}, not a stage"
    raise SpecError(f"{path}.type" if path else "type",
                    f"{type_name!r} is {why}: superb calls only a superb.transformers.Reranker subclass, a "
                    "pt.Transformer class, or a function annotated to return a pt.Transformer (-> pt.Transformer) "
                    "or marked @superb.extend.stage_factory; nothing was called (docs/extending.md)")


def makes_stage(func: Any) -> bool:
    """Whether a function says it makes a stage: it carries :func:`stage_factory`'s mark, or its return annotation is
    ``pt.Transformer`` or a subclass. A string annotation is resolved as a dotted name in the function's module (then
    builtins), attribute by attribute, and never evaluated: one that is not a plain dotted name says nothing."""
    import builtins

    import pyterrier as pt

    func = getattr(func, "__func__", func)  # a bound method: its function
    if not inspect.isfunction(func):
        return False
    if func.__dict__.get(STAGE_FACTORY) is True:
        return True
    annotation = (getattr(func, "__annotations__", None) or {}).get("return")
    if isinstance(annotation, str):
        text = annotation.strip()
        if not _DOTTED.match(text):
            return False
        first, *rest = text.split(".")
        scope = getattr(func, "__globals__", {})
        annotation = scope[first] if first in scope else getattr(builtins, first, None)
        for part in rest:
            annotation = getattr(annotation, part, None) if annotation is not None else None
    return inspect.isclass(annotation) and issubclass(annotation, pt.Transformer)
