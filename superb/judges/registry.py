"""The judge types a spec names, built-in and plug-in, and the facts each declares: ONE registry.

``type`` in a ``[[judge.variants]]`` table (or in [judge]) names:

- a built-in type: ``pointwise``, ``deliberated`` (superb.judges.pointwise), ``listwise``, ``pairwise``
  (superb.judges.listwise); ``ensemble`` is no judge but the mean of earlier variants' normalised scores
  (superb.judges.studies.calibration.Ensemble), read by the spec reader;
- a judge of one's own: ``"file.py:Class"`` or ``"module:Class"`` (a ``superb.extend.Judge`` subclass; the file
  relative to the current folder), or a short name an installed package registers in the entry-point group
  ``superb.judges``. Anything else is a spec error naming it, and nothing of it is called.

``preset`` is a spec's shorthand for a table of options (PRESETS); on a passage data set the passage form of a preset
applies (PASSAGE_PRESETS: "umbrela" is then UMBRELA's own zero-shot prompt, superb/llm/prompts/NOTICE.md). Options
are read against the type's constructor (superb.options.constructor_options): unknown keys, renamed keys and wrong
types are refused with the key path when the spec is read, before any data set or model is opened.

A judge's facts: ``output`` ("score": calibrated into labels; "label": reported as written), and the most
calls ``max_calls(pairs, queries)`` that ``--dry-run`` prints beside its count.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

from superb.errors import SpecError
from superb.judges.base import Judge
from superb.judges.listwise import ListwiseJudge, PairwiseJudge
from superb.judges.pointwise import DeliberatedJudge, PointwiseJudge
from superb.llm.prompts import template_name
from superb.transformers.plugins import check_claims, load
from superb.options import REQUIRED, Opt, constructor_options, construct, one_of, read_options

ENTRY_POINT_GROUP = "superb.judges"
JUDGE_TYPES: dict[str, type[Judge]] = {c.kind: c for c in (PointwiseJudge, DeliberatedJudge, ListwiseJudge,
                                                           PairwiseJudge)}
ENSEMBLE = "ensemble"

PRESETS: dict[str, dict[str, str]] = {
    "superb_product": {"type": "pointwise", "template": "pointwise_best_product", "reading": "expected_grade"},
    "superb": {"type": "pointwise", "template": "pointwise_best", "reading": "expected_grade"},
    "umbrela": {"type": "pointwise", "template": "judge_umbrela", "reading": "expected_grade"},
    "yesno_product": {"type": "pointwise", "template": "pointwise_yesno_product", "reading": "p_yes"},
    "yesno": {"type": "pointwise", "template": "pointwise_yesno", "reading": "p_yes"},
    "deliberated": {"type": "deliberated", "template": "deliberated_label", "reading": "expected_grade"},
    "umbrela_written": {"type": "pointwise", "template": "judge_umbrela", "reading": "written"},
}
# The passage form of a preset, merged over its keys (under the spec's own). "umbrela" on passages is UMBRELA's own
# zero-shot prompt, whose answer "##final score: N" is read at the grade it writes: by its label probabilities (the
# expected grade, calibrated) or, "umbrela_written", as UMBRELA reads it. Both ask the same request (8 answer tokens),
# so one answer serves both.
UMBRELA_PASSAGE = {"template": "umbrela_zeroshot_bing", "answer_tokens": 8, "cue": "final score"}
PASSAGE_PRESETS: dict[str, dict[str, Any]] = {
    "umbrela": UMBRELA_PASSAGE,
    "umbrela_written": UMBRELA_PASSAGE,
    "yesno": {"template": "pointwise_yesno_passage"},
}


def schema(cls: type) -> dict[str, Opt]:
    """The spec options of a judge class: its constructor's, plus ``preset`` (a table of them); a ``template`` may come
    from the preset, so a table need not give it (checked by :func:`read_judge_options`)."""
    options = {"preset": Opt(None, one_of(*PRESETS)), **constructor_options(cls)}
    if "template" in options:
        default = options["template"].default
        options["template"] = Opt(None if default is REQUIRED else default, template_name)
    return options


def judge_class(type_name: Any, path: str) -> type[Judge]:
    """The class a ``type`` names (module docstring); SpecError at ``path.type`` otherwise."""
    return resolve(type_name, path)[0]


def resolve(type_name: Any, path: str) -> tuple[type[Judge], dict | None]:
    """(class, plug-in record or None) of a ``type``: for provenance, a plug-in's file (relative to the current
    folder) and sha256, or its distribution and version."""
    where = f"{path}.type"
    if type_name in JUDGE_TYPES:
        check_claims(type_name, path, builtin=f"{JUDGE_TYPES[type_name].__module__}:"
                                              f"{JUDGE_TYPES[type_name].__name__}", group=ENTRY_POINT_GROUP)
        return JUDGE_TYPES[type_name], None
    if not isinstance(type_name, str):
        raise SpecError(where, f"expected a judge type name, found {type_name!r}")
    obj, ref = load(type_name, path, group=ENTRY_POINT_GROUP)
    if ref is None:
        raise SpecError(where, f"unknown judge type {type_name!r}; built-in types: {sorted(JUDGE_TYPES)} "
                               f"(and {ENSEMBLE!r}), or a judge of your own as \"file.py:Class\", \"module:Class\" or "
                               f"a name registered in the entry-point group {ENTRY_POINT_GROUP!r}")
    if not (inspect.isclass(obj) and issubclass(obj, Judge)):
        raise SpecError(where, f"{type_name!r} is {_what(obj)}, not a judge: name a subclass of superb.extend.Judge "
                               "(docs/extending.md, a judge of your own); nothing else a judge spec names is called")
    return obj, ref.record()


def _what(obj: Any) -> str:
    return f"the class {obj.__name__}" if inspect.isclass(obj) else f"an instance of {type(obj).__name__}"


def read_judge_options(options: str | Mapping[str, Any], path: str = "judge", text_kind: str = "product"
                       ) -> tuple[type[Judge], str | None, dict[str, Any]]:
    """(class, preset, constructor keywords) of a preset name or a table ``{preset?, type, ...}``: the preset's keys
    first, its passage form's over them when ``text_kind`` is "passage", the table's over both; read against the
    class's options. Needs no data set or model."""
    if isinstance(options, str):
        options = {"preset": options}
    if not isinstance(options, Mapping):
        raise SpecError(path, f"expected a preset name or a table, found {type(options).__name__}")
    table = dict(options)
    preset = table.get("preset")
    if preset is not None:
        if preset not in PRESETS:
            raise SpecError(f"{path}.preset", f"unknown judge preset {preset!r}; choose one of {sorted(PRESETS)}")
        passage = {}
        if text_kind == "passage" and "template" not in table:
            if preset not in PASSAGE_PRESETS:
                raise SpecError(f"{path}.preset", f"the data set holds passages and preset {preset!r} asks a "
                                                  f"product prompt; passage presets: {sorted(PASSAGE_PRESETS)} (or "
                                                  "name a template)")
            passage = PASSAGE_PRESETS[preset]
        table = {**PRESETS[preset], **passage, **table}
    cls = judge_class(table.setdefault("type", "pointwise"), path)
    kw = read_options(table, path, schema(cls))
    kw.pop("preset", None)
    if "template" in kw and kw["template"] is None:
        raise SpecError(f"{path}.template", "missing: name the grading prompt template (or use a preset)")
    return cls, preset, kw


def build_judge(options: str | Mapping[str, Any], *, llm: Any, dataset: Any, name: str | None = None,
                path: str = "judge") -> Judge:
    """A judge from a preset name or a table (:func:`read_judge_options`) on ``dataset``, named ``name`` (default: the
    preset's name, else the template's or the type's); a bad field name raises SpecError naming ``path``."""
    cls, preset, kw = read_judge_options(options, path, getattr(dataset, "text_kind", "product"))
    judge = construct(cls, path, llm, dataset, name=name or preset, **kw)
    if cls not in JUDGE_TYPES.values():
        judge.plugin = resolve(dict({"type": "pointwise"}, **({"preset": options} if isinstance(options, str)
                                                               else options)).get("type"), path)[1]
    return judge


