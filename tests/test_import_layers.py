"""No upward import: superb's modules stand in layers, and a module imports only from its own layer or below,
function-local imports included (the graph of tests/test_import_cycles.py).

  0 ground     errors, options (every spec reader), digest, paths, atomic, exit codes, interrupts, faults, run files,
               provenance, terminal (status lines, wrapping), a results folder's file names, testing (the fake
               OpenAI-compatible server, stdlib only): what everything may use
  1 services   llm (client, cache, prompts), data (collections), eval (measures, tests, tables), results folders read
               back (superb.folder; parsing a folder's spec, superb.folder.spec, is a command)
  2 stages     pipelines (first stages, systems), transformers (rerankers)
  3 studies    judges (the judge core, the studies), report (report.html), batch (batch files), extend (the public
               extension API: rerankers' and judges' bases)
  4 commands   the spec, the experiment runner, results folders, merge, shards, `superb evaluate`, the CLIs; the
               command layer of the judges (judges.commands, judges.fill, a study's ``*_run`` step of a judge spec)
               and of batch files (batch.cli, batch.collect)

A module is in the layer of the longest prefix listed; a module no prefix names fails the test, so a new folder
gets a layer when it is made (the package ``superb`` itself, its lazy top-level API, is a command).
"""

from __future__ import annotations

from test_import_cycles import import_graph

LAYERS: dict[int, tuple[str, ...]] = {
    0: ("superb.errors", "superb.options", "superb.digest", "superb.paths", "superb.atomic", "superb.exit_codes",
        "superb.interrupt", "superb.faults", "superb.trec", "superb.stage_scores", "superb.provenance",
        "superb.terminal", "superb.folder.layout", "superb.testing"),
    1: ("superb.llm", "superb.data", "superb.eval", "superb.folder"),
    2: ("superb.pipelines", "superb.transformers"),
    3: ("superb.judges", "superb.report", "superb.batch", "superb.extend"),
    4: ("superb.run", "superb.cli", "superb.folder.spec", "superb.judges.commands", "superb.judges.fill",
        "superb.judges.studies.label_run", "superb.judges.studies.calibration_run", "superb.batch.cli",
        "superb.batch.collect"),
}
PREFIXES = {prefix: layer for layer, prefixes in LAYERS.items() for prefix in prefixes}


def layer_of(module: str) -> int | None:
    if module == "superb":  # the package's __init__: the lazy top-level API (superb.load_dataset, ...)
        return 4
    matches = [p for p in PREFIXES if module == p or module.startswith(p + ".")]
    return PREFIXES[max(matches, key=len)] if matches else None


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    found = []
    for module in sorted(graph):
        for target in sorted(graph[module]):
            if layer_of(target) > layer_of(module):
                found.append(f"{module} (layer {layer_of(module)}) imports {target} (layer {layer_of(target)})")
    return found


def test_every_module_has_a_layer():
    graph = import_graph()
    unplaced = sorted(m for m in graph if layer_of(m) is None)
    assert not unplaced
    assert layer_of("superb.judges.commands.run") == 4 and layer_of("superb.judges.registry") == 3
    assert layer_of("superb.llm.prompts") == 1 and layer_of("superb") == 4


def test_an_upward_import_is_named():
    graph = {"superb.options": {"superb.llm.prompts"}, "superb.llm.prompts": {"superb.errors"}, "superb.errors": set()}
    assert upward_imports(graph) == ["superb.options (layer 0) imports superb.llm.prompts (layer 1)"]


def test_no_upward_import():
    found = upward_imports(import_graph())
    assert not found, "imports from a higher layer (function-local ones count):\n" + "\n".join(f"  {f}" for f in found)

