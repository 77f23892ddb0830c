"""Function-local imports of superb modules only where they defer a heavy backend.

An import inside a function hides a dependency from the reader and from the module's head; it is worth it only when
the imported module loads, at import time, a heavy third-party package (pyterrier and its JVM, pandas, scipy, the
model runtime, ...) that the importing module does not load already, so that `superb --help` or a spec check stays
quick. Everything else is imported at the top. The graph is tests/test_import_cycles.py's.
"""

from __future__ import annotations

import ast
from pathlib import Path

from test_import_cycles import _spec, import_graph


# Third-party packages whose import costs start-up time (or a JVM, a model): a function-local import of a superb
# module is allowed when that module loads one of these at import time that the importing module does not.
HEAVY = {"pyterrier", "pandas", "numpy", "scipy", "matplotlib", "ir_measures", "openai", "jinja2", "ir_datasets",
         "pyterrier_pisa", "xllamacpp", "onnxruntime", "tokenizers", "pytrec_eval", "sklearn", "httpx", "tqdm",
         "pyarrow", "jnius"}
# What a module loads at import time by CALLING code, not by an import statement the graph sees: superb.data
# registers its collections with ir_datasets when imported (test_loads_at_import_are_true checks it).
LOADS_AT_IMPORT = {"superb.data": {"ir_datasets"}}


def _module_imports(module: str, graph: dict[str, set[str]]):
    """(superb modules, third-party top-level packages) imported at module level, and (line, superb modules) of
    each function-local ``from superb... import``."""
    spec = _spec(module)
    tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
    package = module if spec.submodule_search_locations else module.rpartition(".")[0]
    top_superb, top_third, local = set(), set(), []

    def targets(node: ast.ImportFrom | ast.Import) -> list[str]:
        if isinstance(node, ast.Import):
            return [a.name for a in node.names]
        base = node.module or ""
        if node.level:
            parts = package.split(".")
            base = ".".join(parts[:len(parts) - (node.level - 1)] + ([node.module] if node.module else []))
        subs = [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in graph]
        return subs or [base]

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and getattr(child.test, "id", None) == "TYPE_CHECKING":
                continue
            inside = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                names = targets(child)
                ours = [n for n in names if n == "superb" or n.startswith("superb.")]
                if inside and ours:
                    local.append((child.lineno, ours))
                elif not inside:
                    top_superb.update(ours)
                    top_third.update(n.split(".")[0] for n in names if n not in ours)
            visit(child, inside)

    visit(tree, False)
    return top_superb, top_third, local


def heavy_loads(graph: dict[str, set[str]]) -> tuple[dict[str, set[str]], dict[str, list]]:
    """module -> the HEAVY packages importing it loads (its module-level imports, followed), and module -> its
    function-local superb imports."""
    parsed = {m: _module_imports(m, graph) for m in graph}
    loads: dict[str, set[str]] = {}

    def load(module: str, stack: tuple[str, ...] = ()) -> set[str]:
        if module in loads:
            return loads[module]
        top_superb, top_third, _ = parsed[module]
        found = (top_third & HEAVY) | LOADS_AT_IMPORT.get(module, set())
        parents = [".".join(module.split(".")[:i]) for i in range(2, module.count(".") + 1)]
        for other in [*top_superb, *parents]:
            if other in parsed and other not in stack and other != module:
                found |= load(other, stack + (module,))
        if not stack:
            loads[module] = found
        return found

    for module in parsed:
        load(module)
    return loads, {m: parsed[m][2] for m in parsed}


def test_function_local_imports_only_defer_heavy_backends():
    graph = import_graph()
    loads, local = heavy_loads(graph)
    needless = [f"{m}:{line} imports {', '.join(targets)} inside a function, which loads nothing heavy that {m} "
                f"does not load already: import it at the top"
                for m in sorted(local) for line, targets in local[m]
                if not set().union(*(loads.get(t, set()) for t in targets)) - loads[m]]
    assert not needless, "\n".join(needless)
    deferred = sum(len(v) for v in local.values())
    assert deferred > 0  # the CLI still defers pyterrier, pandas, the model: `superb --help` stays quick


def test_loads_at_import_are_true():
    import subprocess
    import sys

    for module, packages in LOADS_AT_IMPORT.items():
        code = f"import sys, {module}; print(sorted(p for p in {sorted(packages)!r} if p in sys.modules))"
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
        assert out.returncode == 0 and out.stdout.split("\n")[0] == str(sorted(packages)), (module, out.stderr)
