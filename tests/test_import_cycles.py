"""No import cycle among superb's modules, function-local imports included.

A cycle hidden behind a function-local import still ties two modules together: neither can be read, tested or
moved without the other. The graph is built from the installed package's files on disk with ast (nothing is
imported but the packages themselves, to find their folders): every ``import superb...`` and ``from ... import``
of a superb module, at any depth of the file (functions, methods, try blocks), relative imports resolved. Imports
under ``if TYPE_CHECKING:`` are left out: they never run. An import names the module it loads, not its parent
packages (``import superb.llm.cache`` is an edge to superb.llm.cache only), and ``from superb.llm import X`` is an
edge to superb.llm.X when that is a module, else to the package superb.llm (its __init__).
"""

from __future__ import annotations

import ast
import importlib.util
import pkgutil
from pathlib import Path

ROOT = "superb"


def _spec(name: str):
    try:
        return importlib.util.find_spec(name)
    except (ImportError, ValueError):  # a name below a plain module (superb.x.attr): not a module
        return None


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST, module: str, is_package: bool) -> list[tuple[str, list[str]]]:
    """(imported module, candidate submodules) for every import statement outside ``if TYPE_CHECKING:``."""
    found: list[tuple[str, list[str]]] = []
    package = module if is_package else module.rpartition(".")[0]

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.extend((alias.name, []) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            found.append((target, [alias.name for alias in node.names]))
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def import_graph() -> dict[str, set[str]]:
    """Module name -> the superb modules it imports, over every module of every superb package reached: the
    packages found on disk below ``superb`` and those its code imports (superb.pipelines and superb.transformers
    live in folders of their own at the top of the repository)."""
    files: dict[str, tuple[Path, bool]] = {}
    pending = [ROOT]
    while pending:
        name = pending.pop()
        if name in files:
            continue
        spec = _spec(name)
        if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
            continue
        is_package = spec.submodule_search_locations is not None
        files[name] = (Path(spec.origin), is_package)
        if is_package:
            pending.extend(f"{name}.{info.name}" for info in pkgutil.iter_modules(spec.submodule_search_locations))
        tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"), filename=spec.origin)
        for target, names in _imports(tree, name, is_package):
            if target == ROOT or target.startswith(ROOT + "."):
                pending.append(target)
                pending.extend(f"{target}.{n}" for n in names if n != "*")
    modules = set(files)
    graph: dict[str, set[str]] = {}
    for name, (path, is_package) in files.items():
        edges: set[str] = set()
        for target, names in _imports(ast.parse(path.read_text(encoding="utf-8")), name, is_package):
            if target not in modules:
                continue
            subs = {f"{target}.{n}" for n in names} & modules
            edges |= subs
            if len(subs) < len(names) or not names:  # `import target`, or names that are attributes of target
                edges.add(target)
        edges.discard(name)
        graph[name] = edges
    return graph


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle (first module repeated at the end) per strongly connected component of more than one module
    (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(sorted(component))
    return [_cycle_in(graph, set(c), c[0]) for c in sorted(components)]


def _cycle_in(graph: dict[str, set[str]], component: set[str], start: str) -> list[str]:
    """A shortest path start -> ... -> start inside one component (breadth first)."""
    previous: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for child in sorted(graph[node] & component):
                if child == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(previous[path[-1]])
                    return [start, *reversed(path[:-1]), start] if node != start else [start, start]
                if child not in previous:
                    previous[child] = node
                    following.append(child)
        frontier = following
    raise AssertionError(f"no cycle through {start} in {sorted(component)}")


def test_walks_every_superb_package():
    graph = import_graph()
    packages = {name.rpartition(".")[0] for name in graph if name.count(".") >= 2}
    assert {"superb.pipelines", "superb.transformers", "superb.llm", "superb.judges", "superb.eval"} <= packages
    assert "superb.trec.runs" in graph and "superb.llm.dryrun" in graph["superb.llm.connect"]
    # function-local imports are edges too: results.py imports superb.eval.evaluate inside a function
    assert "superb.eval.evaluate" in graph["superb.run.results"]


def test_find_cycles_names_the_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"d"}}
    assert find_cycles(graph) == [["a", "b", "c", "a"]]
    assert find_cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle():
    cycles = find_cycles(import_graph())
    assert not cycles, "import cycles among superb modules (function-local imports count):\n" + "\n".join(
        "  " + " -> ".join(cycle) for cycle in cycles)
