"""What `superb judge --fill results/NAME` writes into the folder (superb.judges.fill.label labels the targets): the LLM
qrels apart from the human ones, the table with the view "filled", the sentence on changed conclusions, the label
study, the merged shipped responses and the provenance record.

THE LABEL STUDY (label_study.md / .csv / label_study_verdicts.csv): the folder's systems over all its queries,
evaluated under the human qrels (full view: unjudged = non-relevant) and under

- "llm": the LLM labels alone (scope "all": every product in any system's top ``depth`` is labelled),
- "same pairs" (scope "all"): the LLM labels of the pairs that have a human label, and no others: both label sets
  then cover exactly the same (query, product) pairs, so a difference in the ordering comes from the labels alone and
  not from the human pool's holes (which "llm" fills and the human qrels count as non-relevant). The human qrels'
  extra pairs (judged products below every system's top ``depth``) change no measure with a cut-off <= ``depth``.
- "filled": human labels where they exist, LLM labels elsewhere;

per measure of the spec whose cut-off is at most ``depth`` (deeper ones would count unlabelled ranks): Kendall's
tau-b between the system orderings (by mean) with a 95% interval from resampling queries
(superb.judges.bootstrap.tau_intervals), and every tested verdict (system against its baseline, the spec's test and
correction) under both label sets, a FLIP being a changed conclusion (better / worse / no significant difference).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pandas as pd

from superb.errors import SpecError
from superb.transformers.registry import stage_facts
from superb.judges.fill.inputs import README_BEGIN, README_END, Folder, FillOptions
from superb.atomic import replacing
from superb.llm.cache import ResponseCache
from superb.llm.ship import SHIPPED_FILE, parts_sha256, read_lines, row_line, write_lines
from superb.provenance import folder_files, record_code
from superb.folder import layout

FILL_PATCH = "source.fill.patch"  # the uncommitted code of the last fill, when there was any (superb.provenance)

log = logging.getLogger(__name__)


def filled_qrels(human: pd.DataFrame, llm: pd.DataFrame) -> pd.DataFrame:
    """Human labels where they exist, LLM labels for the other pairs (qid, docno, label)."""
    keys = human[["qid", "docno"]].astype(str)
    extra = llm.astype({"qid": str, "docno": str}).merge(keys, on=["qid", "docno"], how="left", indicator=True)
    extra = extra[extra["_merge"] == "left_only"][["qid", "docno", "label"]]
    return pd.concat([human[["qid", "docno", "label"]].astype({"qid": str, "docno": str}), extra],
                     ignore_index=True)


def study_measures(measures, depth: int) -> list:
    """The spec's measures whose cut-off is at most ``depth`` (a measure without a cut-off is left out)."""
    return [m for m in measures if (m.params.get("cutoff") or depth + 1) <= depth]


def label_study_rows(folder: Folder, ev_measures, views: dict[str, pd.DataFrame], depth: int, bootstrap: int,
                     seed: int) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, list[str]]:
    """(tau rows, every verdict row, every pair of systems with both verdicts, markdown sections) of human vs each
    view in ``views`` (name -> qrels)."""
    from superb.judges.bootstrap import QueryBootstrap
    from superb.judges.pair_agreement import markdown_cells, markdown_header
    from superb.judges.studies.label import label_study
    from superb.judges.studies.label import all_verdicts

    measures = study_measures(ev_measures, depth)
    if not measures:
        empty = pd.DataFrame()
        return empty, empty, empty, [f"No measure of the spec has a cut-off <= {depth}: no label study."]
    ev = folder.spec.evaluation
    judge_ranked = folder.spec.llm_ranked()  # the fill's judge runs on the folder spec's own LLM
    queries = sorted(set(folder.topics["qid"]) & set(folder.qrels["qid"].astype(str)))
    taus, verdicts, pairs, sections = [], [], [], []
    for name, qrels in views.items():
        # a query none of whose labelled pairs the view keeps (same pairs: no human-judged product in any top
        # `depth`) is left out of that view's comparison, on both sides, and the row's n_queries says so
        labelled = set(qrels["qid"].astype(str))
        kept = [q for q in queries if q in labelled]
        study = label_study(folder.runs, folder.qrels, qrels, measures, folder.spec.baselines,
                            names=("human", "judge"), queries=kept, test=ev.test, correction=ev.correction,
                            alpha=ev.alpha, seed=folder.spec.seed, n_resamples=ev.n_resamples,
                            bootstrap=QueryBootstrap(bootstrap, seed=seed),
                            judge_ranked=judge_ranked)
        every = all_verdicts(study)
        taus.append(study.tau.assign(labels=name, n_queries=len(kept)))
        verdicts.append(every.assign(labels=name))
        pairs.append(study.pairs.assign(labels=name))
        flips = every[every["flipped"]]
        lines = [f"## human vs {name}", "", f"| measure | Kendall's tau [95% CI] | discordant pairs | "
                 f"{markdown_header(name, self_preference=True)} | order (human) | order ({name}) |",
                 "|---|---:|---:|---:|---:|---|---|"]
        for r in study.tau.itertuples(index=False):
            tau = "n/a (ties)" if pd.isna(r.tau) else f"{r.tau:.3f} [{r.tau_low:.2f}, {r.tau_high:.2f}]"
            lines.append(f"| {r.measure} | {tau} | {r.discordant_pairs} | {markdown_cells(r)} | {r.order_human} | "
                         f"{r.order_judge} |")
        if len(kept) < len(queries):
            lines += ["", f"{len(kept)} of the {len(queries)} queries: the others have no pair in this view."]
        lines += ["", f"Verdicts against the baseline: {len(every)} tested, {len(flips)} flipped."]
        lines += [f"- {r.system} vs {r.baseline}, {r.measure}: {r.verdict_human} (human) -> {r.verdict_judge} "
                  f"({name})" for r in flips.itertuples(index=False)]
        sections.append("\n".join(lines) + "\n")
    return (pd.concat(taus, ignore_index=True), pd.concat(verdicts, ignore_index=True),
            pd.concat(pairs, ignore_index=True), sections)


def write_fill(folder: Folder, targets: pd.DataFrame, fingerprint: dict, run: dict, *, log: Any,
               options: FillOptions, out: str | Path | None = None) -> dict:
    """Write the fill's files into a copy of the folder and swap it in at ``out`` (default: the folder itself;
    superb.atomic: a failure or Ctrl-C leaves the target as it was)."""
    import shutil

    target = Path(out) if out is not None else folder.path
    with replacing(target) as tmp:
        shutil.copytree(folder.path, tmp, dirs_exist_ok=True)
        return {**_write_into(tmp, folder, targets, fingerprint, run, log=log, options=options),
                "folder": str(target)}


def _write_into(out: Path, folder: Folder, targets: pd.DataFrame, fingerprint: dict, run: dict, *, log: Any,
                options: FillOptions) -> dict:
    from superb.eval.evaluate import View
    from superb.eval.view_verdicts import verdict_changes, views_sentence
    from superb.run.results import evaluate, write_table

    scored = targets[targets["label"].notna()].astype({"label": int})
    llm = scored[["qid", "docno", "label"]].reset_index(drop=True)
    order = {q: i for i, q in enumerate(folder.topics["qid"])}
    llm = llm.sort_values(["qid", "docno"], key=lambda c: c.map(order) if c.name == "qid" else c, kind="mergesort")
    unjudged = llm.merge(targets.loc[~targets["judged"], ["qid", "docno"]], on=["qid", "docno"])
    filled = filled_qrels(folder.qrels, unjudged)
    _write_text(out / layout.LLM_QRELS, "".join(f"{r.qid} 0 {r.docno} {r.label}\n" for r in llm.itertuples(index=False)))
    columns = ["qid", "docno", "judged", "human", "systems", "best_rank", "score", "status", "label"]
    targets = targets.astype({"human": "Int64", "label": "Int64"})
    targets.sort_values(["qid", "best_rank", "docno"], key=lambda c: c.map(order) if c.name == "qid" else c,
                        kind="mergesort")[columns].to_csv(out / layout.FILL_LABELS, sep="\t", index=False)
    _write_text(out / layout.FILL_FINGERPRINT, json.dumps(fingerprint, indent=2, ensure_ascii=False, default=str) + "\n")

    result = folder.result()
    ev = evaluate(result, extra_views=(View("filled", filled, False),))
    circular = circularity(folder, fingerprint)
    if circular:
        ev.info["notes"] = [*(ev.info.get("notes") or []), f"**Circular evidence in the filled view**: {circular}"]
    write_table(result, ev, folder.usage, out)
    sentence = views_sentence(ev.table)
    changes = verdict_changes(ev.table)
    depth_note = (f"The LLM labels ({fingerprint['judge']}, cut points {_cuts(fingerprint['cuts'])} fitted on "
                  f"{fingerprint['dev_pairs']} dev pairs) fill {fingerprint['counts']['unjudged_labelled']} of the "
                  f"{fingerprint['counts']['unjudged']} unjudged products in the systems' top {options.depth}.")
    flag = f"\n**Circular evidence in the filled view**: {circular}\n" if circular else ""
    evidence = ("The filled view is LLM-labelled evidence: its labels for unjudged products come from an LLM judge, "
                "not from people.")
    views_md = (f"# {folder.spec.name}: do the conclusions change between the views?\n\n{depth_note} {evidence}\n"
                f"{flag}\n{sentence}")
    _write_text(out / layout.VIEWS, views_md)
    _readme_section(out / "README.md", folder.spec.name, f"{depth_note} {evidence}{flag}\n{sentence}")

    llm_views = {"filled": filled}
    if options.scope == "all":
        judged = scored.loc[scored["judged"], ["qid", "docno"]]
        llm_views = {"llm": llm, "same pairs": llm.merge(judged, on=["qid", "docno"]), "filled": filled}
    taus, verdicts, pairs, sections = label_study_rows(folder, ev.measures, llm_views, options.depth,
                                                       options.bootstrap, folder.spec.seed)
    scope = ("all of them: the llm rows; same pairs: only those with a human label, so that both label sets cover "
             "the same pairs" if options.scope == "all" else "the unjudged ones only")
    intro = (f"# {folder.spec.name}: system orderings under human and LLM labels\n\n{len(folder.runs)} systems, "
             f"{taus['n_queries'].iloc[0] if len(taus) else 0} queries; LLM labels of {fingerprint['judge']} on every "
             f"product in a system's top {options.depth} ({scope}). "
             f"Measures with a cut-off <= {options.depth}; 95% intervals resample queries "
             f"({options.bootstrap} resamples). A flip is a changed conclusion (better / worse / no significant "
             "difference). Significant pairs: every pair of systems tested under each label set (the spec's test, "
             "one correction family per label set and measure); of the pairs the human labels separate, how many "
             "the LLM labels order the same way, confirm significantly, or significantly reverse "
             "(superb.judges.pair_agreement). Self-preference: of the pairs only the LLM labels separate, those "
             "with one system the judge's own model ranked and one it did not (LLM-ranked here: "
             f"{', '.join(folder.spec.llm_ranked()) or 'none'}), and how many of them the LLM labels decide for the "
             "LLM-ranked side.\n\n")
    _write_text(out / "label_study.md", intro + "\n".join(sections))
    taus.to_csv(out / "label_study.csv", index=False)
    verdicts.to_csv(out / "label_study_verdicts.csv", index=False)
    pairs.to_csv(out / "label_study_pairs.csv", index=False)

    shipped = _merge_responses(out, log, (folder.provenance.get("responses") or {}).get("run")
                               or folder.provenance.get("responses"))
    provenance = dict(folder.provenance)
    provenance["fill"] = {**run, "fingerprint": fingerprint,
                          "views_changed": int(changes["changed"].sum()) if len(changes) else 0,
                          "label_study": taus.to_dict("records"),
                          "project": record_code(out, FILL_PATCH)}  # the code of the fill, which may differ
    if shipped is not None:
        provenance["responses"] = shipped
    provenance["files"] = folder_files(out)  # each file's sha256 (report.html again once it is rewritten)
    _write_text(out / layout.PROVENANCE, json.dumps(provenance, indent=2, default=str))
    return {"usage": run["usage"], "llm_spec": folder.spec.llm, "fingerprint": fingerprint, "table": ev.table,
            "sentence": sentence,
            "label_study": taus, "verdicts": verdicts, "filled": filled, "llm": llm}


def _cuts(cuts) -> str:
    return "(" + ", ".join(f"{c:.3g}" for c in cuts) + ")"


def _write_text(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")


def stage_templates(spec: Any) -> set[str]:
    """The prompt templates (names) the spec's LLM stages use: each stage's ``template``, else its type's default
    (declared by the type: superb.transformers.registry.StageFacts.default_template)."""
    out: set[str] = set()
    for p in spec.pipelines:
        for stage in p.rerank:
            name = stage.get("template")
            if name is None:
                try:
                    name = stage_facts(stage.get("type")).default_template(stage)
                except SpecError as exc:  # a plug-in not importable here: its default prompt cannot be known
                    log.warning("the circularity check cannot read the default prompt of %s (%s): a judge asking "
                                "that prompt would not be named as asking the rerankers' own", p.name, exc)
                    name = None
            if name:
                out.add(str(name))
    return out


def circularity(folder: Any, fingerprint: dict) -> str:
    """Why a filled-view comparison may be circular ("" when it is not): the filling judge is the model of the LLM
    rerankers under test, and/or it asks one of their prompts, so a system's filled-view gain can be the model
    agreeing with itself."""
    ranked = folder.spec.llm_ranked()
    if not ranked:
        return ""
    reasons = []
    run_model = (folder.provenance.get("llm") or {}).get("model")
    if run_model and run_model == fingerprint.get("model"):
        reasons.append(f"the filling judge is the model ({run_model}) of the LLM-ranked systems under test")
    judge = {str(t).split("@", 1)[0] for member in (fingerprint.get("templates") or {}).values()
             for t in (member.values() if isinstance(member, dict) else [member])}
    shared = sorted(judge & stage_templates(folder.spec))
    if shared:
        reasons.append(f"it asks their own prompt ({', '.join(shared)})")
    if not reasons:
        return ""
    return ("; ".join(reasons) + f": a filled-view gain of {', '.join(ranked[:4])}"
            + (f" and {len(ranked) - 4} more" if len(ranked) > 4 else "") + " may be the model grading its own "
            "ranking. Read the filled view as LLM-labelled evidence; the human-labelled views are full and condensed.")


def _readme_section(path: Path, name: str, text: str) -> None:
    """Replace (or append) the marked views section of the folder's README.md (created when absent)."""
    block = f"{README_BEGIN}\n{text.strip()}\n{README_END}\n"
    old = path.read_text(encoding="utf-8") if path.is_file() else f"# {name}\n\n"
    if README_BEGIN in old and README_END in old:
        head, rest = old.split(README_BEGIN, 1)
        tail = rest.split(README_END, 1)[1].lstrip("\n")
        new = head + block + tail
    else:
        new = old.rstrip("\n") + "\n\n## Views\n\n" + block
    _write_text(path, new)


def _merge_responses(out: Path, log: Any, run_summary: dict | None) -> dict | None:
    """The folder's responses.jsonl.gz plus the judge's rows (one per key; a key in both keeps the folder's row,
    counted as a conflict if the answers differ), sorted by key; None when the judge used no cache."""

    if log is None:
        return None
    path = out / SHIPPED_FILE
    rows: dict[str, str] = {}
    for _, _, line in read_lines(path):
        if line.strip():
            rows[json.loads(line)["key"]] = line
    before = len(rows)
    added = conflicts = found = 0
    with ResponseCache(log.cache_path, "read-only") as cache:
        for row in cache.rows(log.keys):
            found += 1
            line = row_line(row.to_dict())
            if row.key in rows:
                conflicts += rows[row.key] != line
                continue
            rows[row.key] = line
            added += 1
    written = write_lines(path, (rows[k] for k in sorted(rows)))
    # run_rows: the run's own answers (its provenance summary), not what an earlier fill of the folder already added
    run_rows = (run_summary or {}).get("rows", before)
    return {"file": path.name, "rows": written, "run_rows": run_rows, "rows_before_fill": before,
            "fill_keys": len(log.keys), "fill_rows_added": added, "fill_conflicts": conflicts,
            "missing_from_cache": len(log.keys) - found, "sha256": parts_sha256(path), "run": run_summary}
