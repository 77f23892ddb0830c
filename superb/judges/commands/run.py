"""Run a judge spec: pick queries and a pool of (query, product) pairs, label them with each judge variant, and
write results/NAME/:

  agreement.md / agreement.csv   every generated variant against the human label (and each rater, when the data
                                 set has ratings), plus the human ceiling on the judged pairs and on all rated pairs
  agreement_calibrated.md / .csv, coverage.csv, calibration.json, VARIANT/scores.tsv, labels.tsv, confusion_*.png
                                 the scoring variants (presets, ensembles): cut points fitted on the dev pairs, agreement
                                 on the test pairs with bootstrap intervals, coverage
                                 (superb.judges.studies.calibration_run)
  VARIANT/qrels.trec             the variant's labels (TREC qrels)
  VARIANT/judgments.jsonl        one Judgment record per pair (label, confidence, raw answer, template id, status)
  VARIANT/confusion.png          heatmap: human label x judge label
  VARIANT/per_label.csv          precision and recall of the judge per human label
  pool.tsv                       the judged pairs (qid, query, docno)
  pairwise.md / .csv, pairwise_pairs.tsv, pairwise_decisions.jsonl   with [pairwise_study]: the check-twice table;
  pairwise_probability.csv, pairwise_curve.csv, pairwise_pr.png   with probability = true: the precision/recall curve
                                 of P(first preferred) (superb.judges.studies.preference)
  label_study.md / .csv, label_study_verdicts.csv   with [label_study]: system orderings and significance verdicts
                                 under the human vs each judge's labels (superb.judges.studies.label_run)
  responses.jsonl.gz             the LLM answers the study used (superb.llm.ship): `superb responses replay`
  provenance.json                spec, data set provenance, LLM description, template ids, counts and judge stats,
                                 the mode (live | from_cache) and the shipped responses' summary

The folder is replaced as a whole (superb.atomic: written beside it, then swapped in), so no file of an earlier run
of another spec survives; a README.md in it is carried over.

Scoring variants run first (in the spec's order: the priority order), then generated variants, then the pairwise
study. ``mode = "from_cache"`` (`superb judge SPEC --from-cache`) writes the same folder from the cached answers
alone: a partial but honest report, each judge with its coverage.

A spec with a [benchmark] table builds a superlative benchmark instead (superb.judges.benchmark.build_benchmark on the
selected queries): queries.tsv, qrels.trec, rewrites.tsv, judgments.jsonl, docnos.txt or docs.jsonl, provenance.json.
"""

from __future__ import annotations

import json
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pandas as pd

from superb.atomic import replacing
from superb.errors import DataError, SpecError
from superb.run.experiment import select_topics
from superb.judges.agreement_report import agreement_frame, ceiling_rows, confusion_heatmap, format_markdown
from superb.judges.agreement import others_consensus
from superb.judges.benchmark import build_benchmark
from superb.judges.bootstrap import QueryBootstrap
from superb.judges.commands.spec import JudgeSpec, load_judge_spec
from superb.judges.fill.label import top_pairs
from superb.judges.pool import PoolCounts, select_pool as pool_pairs
from superb.judges.records import OK, Judgment
from superb.judges.studies.calibration_run import run_scoring
from superb.judges.studies.label_run import run_label_study, study_systems
from superb.judges.studies.hypotheses import evaluate_hypotheses, write_hypotheses
from superb.judges.studies.orderings import orderings_study, write_orderings
from superb.judges.studies.pairwise import default_field_sets, format_table, given_pairs, pairwise_study, sample_pairs
from superb.judges.studies.preference import CALLS_PER_PAIR, at_thresholds, format_tables, pr_plot, probability_study
from superb.llm.connect import open_for_spec
from superb.llm.ship import SHIPPED_FILE, response_log, write_shipped
from superb.pipelines import from_spec
from superb.provenance import write as write_provenance
from superb.folder import layout


def select_pool(spec: JudgeSpec, dataset: Any, topics: pd.DataFrame, systems: tuple | None = None
                ) -> tuple[pd.DataFrame, PoolCounts]:
    """(pool, counts) of the spec (superb.judges.pool): the [pool] pairs with text, plus the pooled top ``depth`` of
    the label-study systems when [label_study] depth is set."""
    top = depth = None
    if spec.label_study is not None and spec.label_study.depth is not None and systems is not None:
        depth = spec.label_study.depth
        top = top_pairs(systems[0], depth)
    first_stage = (from_spec(spec.pool.first_stage, dataset, path="pool.first_stage")
                   if spec.pool.source == "first_stage" else None)
    return pool_pairs(spec.pool, dataset, topics, first_stage_run=first_stage, top=top, depth=depth)


MODES = ("live", "from_cache", "dry_run")


def run_judge_spec(spec: JudgeSpec, out_dir: str | Path, *, llm: Any = None, mode: str = "live") -> dict:
    """Run ``spec`` and write its results folder; ``llm`` overrides the spec's [llm] (tests, notebooks).

    ``mode``: "live" (the spec's model; cached answers are reused), "from_cache" (no model: the cached answers alone,
    a request the cache cannot serve is a counted "missing" pair, and the report says each judge's coverage), or
    "dry_run" (the same cache-only client, counting the requests a live run would still send; nothing is written:
    the returned ``usage`` holds the counts per tag)."""
    from superb.data import load_dataset

    if mode not in MODES:
        raise ValueError(f"mode={mode!r}; use one of {list(MODES)}")
    t0 = time.perf_counter()
    dataset = load_dataset(spec.dataset, path="dataset")
    if spec.benchmark is not None:
        if mode != "live":
            raise SpecError("benchmark", "a [benchmark] spec builds a benchmark live; --dry-run and --from-cache "
                                         "apply to judge studies")
        return run_benchmark_spec(spec, dataset, out_dir, llm=llm)
    ratings = dataset.ratings()
    if not spec.variants and not spec.pairwise and ratings is None:
        raise SpecError("judge", f"no [judge] table and data set {dataset.name!r} has no individual ratings: "
                                 "nothing to compute; add a [judge] table")
    topics = select_topics(dataset, spec.queries)
    rel = spec.rel if spec.rel is not None else dataset.rel_threshold
    systems = None
    if spec.label_study is not None:  # read or run the systems first: a bad [label_study] fails before any LLM call
        spec.label_study.measures_at(rel)  # two names that are one measure at the data set's threshold
        systems = study_systems(spec.label_study, dataset, topics)
    pool, counts = select_pool(spec, dataset, topics, systems)
    if pool.empty:
        raise DataError("the pool is empty: the selected queries have no pairs to judge; check [queries] and [pool]"
                        + (f". {counts.sentence()}" if counts.rows else ""))
    dev = fit_on(spec) if spec.variants else None  # another collection's pairs fit the cut points (before any call)
    if mode == "dry_run":
        with tempfile.TemporaryDirectory(prefix="superb-judge-dry-run-") as scratch:
            return _run(spec, dataset, topics, pool, Path(scratch), llm=llm, mode=mode, t0=t0, systems=systems,
                        counts=counts, dev=dev)
    out = Path(out_dir)
    with replacing(out) as tmp:  # the folder is replaced as a whole (superb.atomic); its README.md is kept
        result = _run(spec, dataset, topics, pool, tmp, llm=llm, mode=mode, t0=t0, systems=systems, counts=counts,
                      dev=dev)
    return {**result, "folder": str(out)}


def _run(spec: JudgeSpec, dataset: Any, topics: pd.DataFrame, pool: pd.DataFrame, out: Path, *, llm: Any, mode: str,
         t0: float, systems: tuple | None, counts: PoolCounts, dev: tuple | None = None) -> dict:
    ratings, qrels = dataset.ratings(), dataset.qrels()
    rel = spec.rel if spec.rel is not None else dataset.rel_threshold
    out.mkdir(parents=True, exist_ok=True)
    if spec.variants:
        pool.to_csv(out / "pool.tsv", sep="\t", index=False)
        if counts.rows:
            counts.frame().to_csv(out / "pool_coverage.csv", index=False)
    rows: list = []
    variants: dict[str, Any] = {}
    pool_labels: dict[str, pd.DataFrame] = {}
    ceilings: dict[str, int] = {}
    study_labels: dict[str, pd.DataFrame] = {}
    reference = None
    log = None
    with ExitStack() as stack:
        llm_info: dict[str, Any] = {"model": getattr(llm, "model", None), "endpoint": "given by the caller"}
        if llm is None and (spec.variants or spec.pairwise):
            llm, llm_info = open_for_spec(spec.llm, stack, dry_run=mode != "live")
            if mode == "from_cache":
                llm_info["endpoint"] = "none: answers from the response cache alone (--from-cache)"
        if spec.variants:  # every judge, score or label (superb.judges.base): one study, dev pairs first
            scored = run_scoring(spec, dataset, llm, pool, out, model=llm_info.get("model"), dev=dev)
            pool_labels.update(scored.pop("pool_labels"))
            ceilings = scored.pop("ceilings")
            study_labels, reference = scored.pop("study_labels"), scored.pop("reference")
            variants["calibrated"] = scored
        if spec.pairwise:
            variants["pairwise_study"] = _pairwise(spec, dataset, llm, topics, out)
        if hasattr(llm, "usage"):
            llm_info["usage"] = _jsonable(llm.usage.to_dict())
        if mode == "dry_run":  # the cached answers it found go with it (`superb responses save`)
            return {"usage": llm.usage.to_dict() if hasattr(llm, "usage") else {}, "llm": llm_info,
                    "ceilings": ceilings, "responses": response_log(llm),
                    "counts": {"queries": len(topics), "pairs": len(pool) if spec.variants else 0,
                               "pairwise_pairs": (variants.get("pairwise_study") or {}).get("pairs", 0)}}

        log = response_log(llm)
    if ratings is not None:
        rows += ceiling_rows(ratings, dataset.labels, rel, None, scope="all rated pairs")
        _rater_heatmaps(ratings, dataset.labels, out, spec.name)
    table = agreement_frame(rows)
    table.to_csv(out / "agreement.csv", index=False)
    if spec.variants:
        scope = f"{len(pool)} judged pairs"
    elif spec.pairwise:  # a pairwise-only spec: its results are pairwise.md's (issue 23.10)
        scope = ("no per-product judge: this spec runs the pairwise study, whose results are in pairwise.md"
                 + (f"; below, the human ceiling on {len(ratings)} rated pairs" if ratings is not None else ""))
    else:
        scope = f"no LLM judge (human ceiling on {len(ratings) if ratings is not None else 0} rated pairs)"
    header = f"# {spec.name}\n\n{spec.description}\n\n{len(topics)} queries, {scope}, data set {dataset.name}, " \
             f"binary threshold {rel}.\n\n" + (f"{counts.sentence()}\n\n" if counts.rows and counts.left_out else "")
    (out / "agreement.md").write_text(header + (format_markdown(table) if len(table) else ""), encoding="utf-8")
    orderings: dict = {}
    if spec.label_study is not None and spec.label_study.depth is not None:
        variants["label_study"] = _orderings(spec, systems, topics, qrels, pool, pool_labels, rel, out)
        orderings = variants["label_study"].pop("perquery")
    elif spec.label_study is not None:
        labelled = {name: pool_judgments(frame) for name, frame in pool_labels.items() if len(frame)}
        if labelled:
            variants["label_study"] = run_label_study(spec.label_study, systems, topics=topics, pool=pool,
                                                      human=qrels, variants=labelled, rel=rel,
                                                      label_map=spec.label_map, out=out, title=spec.name)
        else:
            variants["label_study"] = {"skipped": "no judge labelled any pool pair (nothing scored yet)"}
    if spec.hypotheses and study_labels:
        table = evaluate_hypotheses(spec.hypotheses, study_labels, reference, orderings,
                                bootstrap=QueryBootstrap(spec.calibration.bootstrap, seed=spec.seed))
        write_hypotheses(table, out, spec.name)
        variants["hypotheses"] = table.to_dict("records")
    shipped = None
    if log is not None:
        shipped = write_shipped(log, out / SHIPPED_FILE)
    provenance = {"spec": _jsonable(_spec_dict(spec)), "dataset": _jsonable(dataset.provenance()), "llm": llm_info,
                  "mode": mode, "variants": _jsonable(variants),
                  "counts": {"queries": len(topics), "pairs": len(pool),
                             **({"pool": counts.frame().to_dict("records"), "unjudged_top": counts.unjudged_top}
                                if counts.rows and (counts.left_out or counts.depth) else {})},
                  "responses": shipped,
                  "seconds": round(time.perf_counter() - t0, 2)}
    write_provenance(out, provenance, hash_files=True)  # + packages, project, host and every file's sha256
    return {"folder": str(out), "agreement": table, "variants": variants}


def pool_judgments(labels: pd.DataFrame) -> list[Judgment]:
    """A judge's labels of the pool pairs (qid, docno, label[, score]) as Judgment records, for the label study."""
    return [Judgment(str(r.qid), str(r.docno), int(r.label), None, "", "", OK,
                     score=float(r.score) if "score" in labels.columns else None)
            for r in labels.itertuples(index=False)]


def fit_on(spec: JudgeSpec) -> tuple[Any, pd.DataFrame] | None:
    """(data set, pool) of the judge spec [calibration] fit_on names: its pool (with its label study's pooled top
    depth) on its own queries, whose human-labelled pairs fit the cut points; None without fit_on."""
    from superb.data import load_dataset

    path = spec.calibration.fit_on
    if path is None:
        return None
    if not Path(path).is_file():
        raise SpecError("calibration.fit_on", f"{path} is not a file: name the judge spec of the collection the cut "
                                              "points are fitted on (relative to the current folder)")
    other = load_judge_spec(path)
    dataset = load_dataset(other.dataset, path="calibration.fit_on: dataset")
    topics = select_topics(dataset, other.queries)
    systems = None
    if other.label_study is not None and other.label_study.depth is not None:
        systems = study_systems(other.label_study, dataset, topics)
    pool, _ = select_pool(other, dataset, topics, systems)
    return dataset, pool


def _orderings(spec: JudgeSpec, systems: tuple, topics: pd.DataFrame, qrels: pd.DataFrame, pool: pd.DataFrame,
               labels: dict, rel: int, out: Path) -> dict:
    """[label_study] depth = D: the systems' orderings under the human qrels and each judge's LLM qrels of the
    pooled top D (superb.judges.studies.orderings)."""
    ls = spec.label_study
    runs, baselines, info = systems
    top = pool[pool["why"].str.contains(f"top {ls.depth}", regex=False)][["qid", "docno"]]
    judged = qrels[["qid", "docno"]].astype(str)
    unjudged = top.merge(judged.assign(_j=True), on=["qid", "docno"], how="left")["_j"].isna()
    counts, judges = {}, {}
    for name, frame in labels.items():
        mine = frame.astype({"qid": str, "docno": str}).merge(top, on=["qid", "docno"])
        judges[name] = mine
        counts[name] = {"pooled": len(top), "labelled": len(mine), "unjudged": int(unjudged.sum())}
    queries = sorted(set(topics["qid"].astype(str)) & set(qrels["qid"].astype(str)))
    measures = ls.measures_at(rel)
    table, verdicts, pairs, sections, perquery = orderings_study(
        runs, baselines, qrels, judges, measures, depth=ls.depth, queries=queries, test=ls.test,
        correction=ls.correction, alpha=ls.alpha, n_resamples=ls.n_resamples,
        bootstrap=QueryBootstrap(spec.calibration.bootstrap, seed=spec.seed), seed=spec.seed)
    settings = f"Test: {ls.test}, {ls.correction} correction, alpha {ls.alpha}; binary measures count label >= {rel}."
    write_orderings(out, table, verdicts, pairs, sections, title=spec.name, systems=list(runs),
                    source=info["source"], depth=ls.depth, counts=counts, settings=settings)
    return {"systems": list(runs), "baselines": baselines, **info, "depth": ls.depth, "counts": counts,
            "measures": sorted(set(table["measure"])) if len(table) else [], "perquery": perquery}


def run_benchmark_spec(spec: JudgeSpec, dataset: Any, out_dir: str | Path, *, llm: Any = None) -> dict:
    """[benchmark]: build_benchmark on the selected queries, with the spec and timings added to provenance.json and the
    answers it used shipped in responses.jsonl.gz (`superb responses replay` then `superb judge` makes 0 calls)."""

    t0 = time.perf_counter()
    b = spec.benchmark
    topics = select_topics(dataset, spec.queries)
    with ExitStack() as stack:
        llm_info: dict[str, Any] = {"model": getattr(llm, "model", None), "endpoint": "given by the caller"}
        if llm is None:
            llm, llm_info = open_for_spec(spec.llm, stack)
        result = build_benchmark(dataset, llm, out_dir, topics=topics, depth=b.depth, engine=b.engine, model=b.model,
                                 pool_query=b.pool_query, judge_options=b.judge, dataset_config=spec.dataset,
                                 rel_threshold=b.rel_threshold, docs=b.docs)
        if hasattr(llm, "usage"):
            llm_info["usage"] = _jsonable(llm.usage.to_dict())
        log = response_log(llm)
    shipped = None if log is None else write_shipped(log, Path(out_dir) / SHIPPED_FILE)  # replayed: 0 calls again
    prov_file = Path(out_dir) / layout.PROVENANCE
    provenance = json.loads(prov_file.read_text(encoding="utf-8"))
    provenance.update({"spec": _jsonable(_spec_dict(spec)), "llm": llm_info, "responses": shipped,
                       "seconds": round(time.perf_counter() - t0, 2)})
    write_provenance(out_dir, provenance, environment_of=provenance)  # what build_benchmark measured
    return {**result, "seconds": provenance["seconds"]}


def _pairwise(spec: JudgeSpec, dataset: Any, llm: Any, topics: pd.DataFrame, out: Path) -> dict:
    """The pairwise study on pairs of the selected queries (of [pairwise_study] split): the generated forms' table
    (pairwise.md / pairwise.csv / pairwise_decisions.jsonl) and, with probability = true, the precision/recall curve
    of P(first preferred) (superb.judges.studies.preference: pairwise_probability.csv, pairwise_curve.csv,
    pairwise_pr.png); the pairs in pairwise_pairs.tsv."""

    opts = spec.pairwise
    grades, human = _pair_grades(opts, dataset)
    topics = _of_split(topics, opts["split"])
    if topics.empty:
        raise DataError(f"pairwise_study.split = {opts['split']!r}: none of the selected queries is in that split")
    if opts.get("pairs"):  # a given list, asked in its order (or a seeded, recorded one): issue 23.10
        pairs = given_pairs(opts["pairs"], grades, topics, order=opts["order"], seed=opts["seed"])
    else:
        pairs = sample_pairs(grades, topics, n_pairs=opts["n_pairs"], seed=opts["seed"],
                             queries=topics["qid"].tolist())
    pairs.to_csv(out / "pairwise_pairs.tsv", sep="\t", index=False)
    field_sets = dict(opts["fields"] or default_field_sets(dataset))
    t = time.perf_counter()
    table = decisions = curves = None
    info: dict[str, Any] = {"pairs": len(pairs), "field_sets": {k: list(v) for k, v in field_sets.items()},
                            "sampling": dict(pairs.attrs), "grades": human, "split": opts["split"]}
    if opts["choices"]:
        table, decisions = pairwise_study(dataset, llm, pairs, field_sets=field_sets, choices=opts["choices"])
        table.to_csv(out / "pairwise.csv", index=False)
        decisions.to_json(out / "pairwise_decisions.jsonl", orient="records", lines=True, force_ascii=False)
        info["template"] = table.attrs["template"]
    forms = (["probability"] if opts["probability"] else []) + list(opts["choices"])
    calls = sum(CALLS_PER_PAIR[f] for f in forms) * len(field_sets)
    if opts.get("pairs"):
        a = pairs.attrs
        source = (f"{len(pairs)} of the {a['given']} pairs of {a['source']}, in its order, "
                  + ("its docno_a shown first" if a["order"] == "given" else f"which product is shown first decided "
                     f"by a coin with seed {opts['seed']} (recorded in pairwise_pairs.tsv)")
                  + f"; left out: {a['skipped_outside_selection']} outside the selected queries, "
                  f"{a['skipped_ungraded']} with a product without {human}, {a['skipped_equal_grades']} with equal "
                  f"grades. precision = agreeing ")
    else:
        source = (f"{len(pairs)} pairs of products of one query whose {human} differ ({pairs.attrs['pairs_short']} "
                  f"fewer than asked), queries of the {opts['split']} selection, seed {opts['seed']}. precision = "
                  "agreeing ")
    note = (source
            + "decisions / decisions; recall = decisions / pairs asked. Calls per pair: "
            + ", ".join(f"{f} {CALLS_PER_PAIR[f]}" for f in forms)
            + f" (per field set; {calls} in all per pair).\n")
    body = ""
    if opts["probability"]:
        readings, curves, meta = probability_study(dataset, llm, pairs, field_sets)
        readings.to_csv(out / "pairwise_probability.csv", index=False)
        curves.to_csv(out / "pairwise_curve.csv", index=False)
        pr_plot(curves, table, out / "pairwise_pr.png", f"{spec.name}: pairwise judging, {len(pairs)} pairs")
        no_answer = int((readings[["p1", "p2"]].isna().any(axis=1)).sum())
        body += (f"P(first preferred) from label probabilities (template {next(iter(meta.values()))['template']}), "
                 f"both orders asked: a rule decides where its margin is above the threshold (both orders agree: "
                 f"both lean to one side by more than it; mean: their mean does). Pairs with an order unanswered "
                 f"(never decided): {no_answer}. The table reads the curve at 0 and at the margins below which "
                 f"25, 50, 75 and 90% of the model's margins lie; the whole curve: pairwise_curve.csv, plot: "
                 f"pairwise_pr.png.\n\n"
                 + format_tables(at_thresholds(curves), table))
        info["probability"] = meta
    elif table is not None:
        body += format_table(table)
    (out / "pairwise.md").write_text(f"# {spec.name}: pairwise judging\n\n{note}\n{body}", encoding="utf-8")
    info["seconds"] = round(time.perf_counter() - t, 2)
    info["calls_per_pair"] = calls
    return info


def _pair_grades(opts: dict, dataset: Any) -> tuple[pd.DataFrame, str]:
    """The grades pairs are drawn from: the combined grade of the individual ratings ("final"), or the qrels."""
    ratings = dataset.ratings()
    grades = opts["grades"] or ("final" if ratings is not None and "final" in ratings.columns else "qrels")
    if grades == "qrels":
        return dataset.qrels(), "human grades (qrels)"
    if ratings is None or "final" not in ratings.columns:
        raise SpecError("pairwise_study.grades", f"data set {dataset.name!r} has no individual ratings with a "
                                                 "combined grade; use grades = \"qrels\"")
    return ratings[["qid", "docno", "final"]].rename(columns={"final": "label"}), "combined human grades"


def _of_split(topics: pd.DataFrame, split: str) -> pd.DataFrame:
    if split == "all":
        return topics
    from superb.data.splits import split_of

    return topics[topics["qid"].astype(str).map(split_of) == split].reset_index(drop=True)


def _rater_heatmaps(ratings: pd.DataFrame, labels, out: Path, name: str) -> None:
    """Confusion heatmaps of each rater against the consensus of the OTHER raters (the leave-one-out human ceiling,
    superb.judges.agreement.others_consensus), on all rated pairs."""

    raters = [c for c in ratings.columns if c.startswith("rater_")]
    if len(raters) < 3:
        return
    ratings = ratings.dropna(subset=raters).astype({r: int for r in raters})
    for col in raters:
        consensus = others_consensus(ratings, col, raters, labels)
        confusion_heatmap(consensus, ratings[col], labels, out / "humans" / f"{col}_vs_others.png",
                          f"{name}: {col} vs the other raters (n={len(ratings)})",
                          axes=("other raters' consensus", col))


def _spec_dict(spec: JudgeSpec) -> dict:
    return {"name": spec.name, "description": spec.description, "dataset": spec.dataset,
            "queries": vars(spec.queries) if hasattr(spec.queries, "__dict__") else str(spec.queries),
            "pool": vars(spec.pool), "llm": spec.llm, "variants": [list(v) for v in spec.variants],
            "rel": spec.rel, "label_map": spec.label_map, "seed": spec.seed,
            "label_study": vars(spec.label_study) if spec.label_study else None,
            "calibration": vars(spec.calibration), "pairwise": spec.pairwise,
            "benchmark": vars(spec.benchmark) if spec.benchmark else None,
            **({"hypotheses": [vars(h) for h in spec.hypotheses]} if spec.hypotheses else {}),
            "source": str(spec.source) if spec.source else None}


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))
