"""Spec ``type`` -> stage class, the facts of each type, and ``build_reranker``.

A type is one of superb's own (:data:`RERANKERS`), a short name an installed package registers (entry-point group
``superb.rerankers``) or "module:Class" / "file.py:Class" (superb.transformers.plugins): all three are built and
described the same way. Each class is imported only when a spec asks for it, so that importing
``superb.transformers`` stays cheap and a reranker with an optional backend fails only when it is used. A stage class
exposes ``from_spec(options: dict, context: BuildContext, path: str) -> pt.Transformer`` (the base class's reads the
options its constructor declares); any other pt.Transformer class or factory runs inside TransformerStage.
"""

from __future__ import annotations

import importlib
import inspect
import re
from dataclasses import dataclass
from typing import Any, Mapping

from superb.errors import SpecError, SuperbError
from superb.faults import described, is_fault
from superb.transformers import plugins

#: superb's own stage types: spec ``type`` -> "module:Class", imported when a spec names it. What each type is (does it
#: call the LLM, read the documents' text, keep a score column, which prompt it asks by default) is declared on its
#: class, as a plug-in's is (:class:`StageFacts`).
RERANKERS: dict[str, str] = {
    "pointwise": "superb.transformers.pointwise:PointwiseReranker",
    "deliberated": "superb.transformers.deliberated:DeliberatedReranker",
    "listwise": "superb.transformers.listwise:ListwiseReranker",
    "sliding": "superb.transformers.sliding:SlidingWindowReranker",
    "shuffle": "superb.transformers.controls:Shuffle",
    "random": "superb.transformers.controls:RandomReranker",
    "pairwise": "superb.transformers.pairwise:PairwiseReranker",
    "rubric": "superb.transformers.rubric:RubricReranker",
    "biencoder": "superb.transformers.biencoder:BiEncoderReranker",
    # small-model rerankers that read label probabilities (issue 8), and score fusion
    "pairwise_prob": "superb.transformers.pairwise_prob:PairwiseProbReranker",
    "setwise": "superb.transformers.setwise:SetwiseReranker",
    "fuse": "superb.transformers.fuse:Fuse",
    # query rewriting (issue 26): LLM expansion, the query restored, and BM25 rescoring with the rewritten query
    "expand": "superb.transformers.expansion:QueryExpansion",
    "reset": "superb.transformers.expansion:RestoreQuery",
    "bm25": "superb.transformers.bm25_rescore:BM25Rescore",
}


@dataclass(frozen=True)
class StageFacts:
    """What a stage type is, read from its class (built-in and plug-in alike), each with a default for a class that
    does not say: ``calls_llm`` (class attribute; default: its constructor takes ``llm``), ``needs_text`` (it reads
    the documents' text; default True), ``writes_score`` (it keeps a raw-score column ``<name>_score`` of its own;
    default True), ``name`` (the class's ``type_name``: names that column and the requests' tag; a plug-in without
    one gets its attribute's name in snake_case), ``needs_documents`` (it reads the data set's entry of each document:
    its text, or its index entry; default ``needs_text``) and ``default_template`` (``cls.default_template(options)``: the
    prompt a stage table asks with when it names none, the product form; None for a type without a prompt)."""

    cls: Any
    kind: str  # "stage" (from_spec), "transformer" or "factory" (run inside TransformerStage)
    calls_llm: bool
    needs_text: bool
    writes_score: bool
    name: str
    plugin: Any = None  # plugins.PluginRef for a type from outside superb
    needs_documents: bool = True  # reads the data set's documents (their text, or their index entry: ``bm25``)
    model: str | None = None  # a model of its own (not the LLM's), named beside its rows: the class's ``model_name``

    def default_template(self, options: Mapping[str, Any]) -> str | None:
        method = getattr(self.cls, "default_template", None) if self.kind == "stage" else None
        return method(options) if callable(method) else None


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name.split(".")[-1]).lower()


def _facts(obj: Any, kind: str, type_name: str, plugin: Any) -> StageFacts:
    declared = obj.__dict__.get("type_name") if isinstance(obj, type) else None
    if plugin is None:
        name = declared or type_name
    else:  # a plug-in's own type_name, else its entry-point name, else its attribute's name in snake_case
        name = declared or (type_name if ":" not in type_name else _snake(getattr(obj, "__name__", "stage")))
    try:
        takes_llm = "llm" in inspect.signature(obj.__init__ if kind == "stage" else obj).parameters
    except (TypeError, ValueError):  # a callable without a signature Python can read: it takes no llm by name
        takes_llm = False
    writes = bool(getattr(obj, "writes_score", True)) if kind == "stage" else True
    text = bool(getattr(obj, "needs_text", True))
    return StageFacts(obj, kind, bool(getattr(obj, "calls_llm", takes_llm)), text, writes, name, plugin,
                      bool(getattr(obj, "needs_documents", text)), getattr(obj, "model_name", None))


def stage_facts(type_name: str, path: str = "") -> StageFacts:
    """The facts of the stage type a spec names (importing its class now): superb's own type, an entry point of
    group ``superb.rerankers``, or "module:Attr" (superb.transformers.plugins). SpecError at ``path.type`` for a
    name that is none of these."""
    if not isinstance(type_name, str) or not type_name:
        raise SpecError(f"{path}.type" if path else "type", f"expected a type name, got {type_name!r}; one of "
                                                            f"{sorted(RERANKERS)} or \"module:Class\"")
    if type_name in RERANKERS:
        plugins.check_claims(type_name, path, builtin=RERANKERS[type_name])  # an installed package shadowing it
        module, _, name = RERANKERS[type_name].partition(":")
        return _facts(getattr(importlib.import_module(module), name), "stage", type_name, None)
    obj, ref = plugins.load(type_name, path)
    if obj is None:
        installed = sorted(plugins.entry_points())
        raise SpecError(f"{path}.type" if path else "type",
                        f"unknown reranker type {type_name!r}; known types: {sorted(RERANKERS)}"
                        + (f", installed plug-ins: {installed}" if installed else "")
                        + "; or name your own class as \"module:Class\" or \"file.py:Class\" (docs/extending.md)")
    return _facts(obj, plugins.kind_of(obj, type_name, path), type_name, ref)


def needs_llm(type_name: Any) -> bool:
    """Whether a stage of this type calls the LLM (a type that cannot be resolved counts as one; the spec check
    refuses it with its reason)."""
    try:
        return stage_facts(type_name).calls_llm
    except SpecError:
        return True


def score_column(options: Mapping[str, Any]) -> str | None:
    """The raw-score column a spec stage table writes (``<stage>_score`` when it names its stage, else
    ``<type>_score``), or None for a type that scores nothing of its own (or a type that cannot be resolved)."""
    try:
        facts = stage_facts(options.get("type"))
    except SpecError:
        return None
    if not facts.writes_score:
        return None
    stage = options.get("stage")
    return f"{stage if isinstance(stage, str) and stage else facts.name}_score"


def score_columns(options: Mapping[str, Any]) -> list[str]:
    """Every score column a spec stage table writes: its raw-score column (:func:`score_column`), and with a blending
    weight ``alpha`` below 1 also the blend its head is ordered by (``<stage>_blend_score``: base.Reranker)."""
    own = score_column(options)
    if own is None:
        return []
    alpha = options.get("alpha", 1.0)
    blended = not isinstance(alpha, bool) and isinstance(alpha, (int, float)) and alpha < 1.0
    return [own, f"{own[:-len('_score')]}_blend_score"] if blended else [own]


@dataclass
class BuildContext:
    """What a reranker may need from the experiment: the dataset (product text), the LLM client, the run seed."""

    dataset: Any = None
    llm: Any = None
    seed: int = 0


def reranker_class(type_name: str, path: str = "") -> Any:
    """The class (or factory) a spec ``type`` names, imported now (:func:`stage_facts`)."""
    return stage_facts(type_name, path).cls


def build_reranker(options: Mapping[str, Any], *, context: BuildContext, path: str = "rerank"):
    """Build the stage a spec table describes, e.g. ``{"type": "pointwise", "top_k": 20}`` or ``{"type":
    "my_methods:ThreeGrade"}``. Every reranking type takes ``stage = "NAME"``: its raw-score column is ``NAME_score``
    instead of ``<type>_score``, so two stages of one type (e.g. two pointwise prompts) keep both columns for a later
    ``fuse``."""
    if not isinstance(options, Mapping):
        raise SpecError(path, f"expected a table with a 'type' key, got {type(options).__name__}")
    if "type" not in options:
        raise SpecError(f"{path}.type", f"missing; one of {sorted(RERANKERS)} or \"module:Class\"")
    options = dict(options)
    stage = options.pop("stage", None)
    facts = stage_facts(options["type"], path)
    try:
        if facts.kind == "stage":
            reranker = facts.cls.from_spec(options, context, path)
        else:
            from superb.transformers.plugin_build import build_transformer_stage

            reranker = build_transformer_stage(facts, options, context, path)
    except BaseException as exc:  # noqa: BLE001 - a plug-in's constructor error is reported at its stage, never raw
        if isinstance(exc, SuperbError) or not is_fault(exc):
            raise
        if not isinstance(exc, Exception):  # SystemExit, its own KeyboardInterrupt: never "checked at build time"
            raise SpecError(path, f"building {options['type']!r} failed: {_described(exc, facts)}") from None
        if facts.plugin is None or context.llm is _NO_LLM:
            raise
        raise SpecError(path, f"building {options['type']!r} failed: {_described(exc, facts)}") from None
    if facts.plugin is not None:
        reranker.plugin = facts.plugin  # provenance.json records where a type from outside superb came from
        if getattr(reranker, "type_name", None) in (None, "reranker"):
            reranker.type_name = facts.name
            if getattr(reranker, "tag", None) in (None, "", "reranker"):
                reranker.tag = path
    if stage is not None:
        if not facts.writes_score:
            raise SpecError(f"{path}.stage", f"a {options['type']} stage keeps no score column of its own to name; "
                                             "remove 'stage'")
        if not isinstance(stage, str) or not stage.isidentifier():
            raise SpecError(f"{path}.stage", f"expected a name such as \"umbrela\" (letters, digits, _), found "
                                             f"{stage!r}: the stage's score column becomes <stage>_score")
        reranker.stage = stage
    return reranker


def _described(exc: BaseException, facts: StageFacts) -> str:
    """The exception a stage's constructor raised, with the line of the plug-in's own file (superb.faults)."""
    return described(exc, [getattr(facts.plugin, "origin", None), facts.cls])


def plugin_records(pipelines: Any) -> dict[str, dict[str, Any]]:
    """Where each stage type from outside superb that ``pipelines`` (a spec's PipelineSpecs) names came from, by key
    path: for provenance.json (the module, and the file's sha256 or the distribution's version)."""
    found: dict[str, dict[str, Any]] = {}
    for p in pipelines:
        for j, stage in enumerate(p.rerank):
            type_name = stage.get("type")
            if isinstance(type_name, str) and type_name not in RERANKERS:
                ref = stage_facts(type_name, f"{p.path}.rerank[{j}]").plugin
                if ref is not None:
                    found[f"{p.path}.rerank[{j}]"] = ref.record()
    return found


class _Unopened:
    """The data set of a spec check: nothing is opened. Its fields are unknown (checked when the stage is built),
    its documents are products (a passage data set's templates are checked when the stage is built)."""

    name = "(not opened)"
    fields = None
    text_kind = "product"
    prompt_fields = ("title",)


_NO_LLM = object()  # the model of a spec check: never called (a stage that calls it at construction is not checked)


def check_stage(options: Any, path: str, *, seed: int = 0) -> None:
    """Check a spec's rerank table when the spec is read, before any data set or model is opened: its type, every
    option's name, type and value, and the cross-option rules (each class's ``from_spec`` with an unopened context).
    A SpecError names the key; what needs the data or the model (product fields, a passage template) is checked when
    the stage is built, still before any LLM call."""
    try:
        build_reranker(options, context=BuildContext(dataset=_Unopened(), llm=_NO_LLM, seed=seed), path=path)
    except SpecError:
        raise
    except Exception:  # noqa: BLE001 - a constructor that needs the opened data or model: checked at build time
        return
