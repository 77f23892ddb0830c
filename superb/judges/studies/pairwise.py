"""The "check twice" pairwise study (Turnbull's local-llm-judge on WANDS), on any data set with graded qrels.

Pairs: two products of one query whose human grades differ; the human preference is the higher-graded one.
Variants: forced choice vs "allow neither" (the model may abstain) x one order vs both orders (ask again with the
products swapped; keep a decision only when both orders name the same product), per product field set.
precision = agreeing decisions / decisions made; recall = decisions made / pairs asked
(superb.judges.agreement.pairwise_precision_recall).

PAIR SAMPLING (seeded, deterministic for a given data set and seed): queries whose judged products carry at least
two different grades, sorted by qid, are eligible. Each draw picks an eligible query uniformly, then a product a
uniformly among its judged products (sorted by docno), then a product b uniformly among those with a grade different
from a's; an unordered pair already drawn is skipped. Drawing stops at ``n_pairs`` pairs or after
``20 * n_pairs`` draws (the shortfall is reported in ``attrs["pairs_short"]``). Finally a fair coin decides which
of the two is shown as A, so the human answer is "A" about half the time.

COST: per field set and per allow-neither setting, each pair is asked in both orders once (2 calls); the one-order
variant is read from the first of them (it is exactly the request a one-order judge would send). A tqdm bar on stderr
counts the pairs done over all variants, with an ETA (``SUPERB_PROGRESS=0`` turns it off).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from superb.errors import DataError
from superb.judges.agreement import pairwise_precision_recall
from superb.llm.runner import run_all
from superb.llm.comparator import PairwiseComparator
from superb.llm.prompts import load_template
from superb.llm.runner import progress_bar as bar

PAIR_COLUMNS = ["pair", "qid", "query", "docno_a", "docno_b", "label_a", "label_b", "human"]
TABLE_COLUMNS = ["fields", "choice", "orders", "asked", "decided", "agreed", "precision", "recall",
                 "unparseable", "failed_calls"]
# field sets of the study, per data set (keys: the names in the table; values: the data set's field names)
WANDS_FIELD_SETS = {"name": ("title",), "class": ("class",), "category": ("category",),
                    "description": ("description",), "all": ("title", "class", "category", "description")}


def default_field_sets(dataset: Any) -> dict[str, tuple[str, ...]]:
    """WANDS' five sets when the data set has those fields; else one set per field of title/description plus all."""
    fields = tuple(getattr(dataset, "fields", ()))
    if all(f in fields for f in WANDS_FIELD_SETS["all"]):
        return dict(WANDS_FIELD_SETS)
    chosen = [f for f in ("title", "description") if f in fields] or list(fields[:1])
    sets = {f: (f,) for f in chosen}
    if len(chosen) > 1:
        sets["all"] = tuple(chosen)
    return sets


def sample_pairs(qrels: pd.DataFrame, topics: pd.DataFrame, n_pairs: int = 1000, seed: int = 0,
                 queries: Sequence[str] | None = None) -> pd.DataFrame:
    """Pairs of differently graded products of one query (see the module docstring for the procedure)."""
    if not isinstance(n_pairs, int) or n_pairs < 1:
        raise ValueError(f"n_pairs must be a positive integer, got {n_pairs!r}")
    qrels = qrels.astype({"qid": str, "docno": str})
    text = dict(zip(topics["qid"].astype(str), topics["query"]))
    if queries is not None:
        qrels = qrels[qrels["qid"].isin({str(q) for q in queries})]
    qrels = qrels[qrels["qid"].isin(text)]
    grouped = {}
    for qid, g in qrels.sort_values(["qid", "docno"]).groupby("qid", sort=True):
        if g["label"].nunique() >= 2:
            grouped[qid] = (g["docno"].to_numpy(), g["label"].to_numpy())
    if not grouped:
        raise ValueError("no query has two judged products with different grades: no pairs to ask")
    eligible = sorted(grouped)
    rng = np.random.default_rng(seed)
    seen: set[tuple[str, str, str]] = set()
    rows = []
    draws = 0
    while len(rows) < n_pairs and draws < 20 * n_pairs:
        draws += 1
        qid = eligible[rng.integers(len(eligible))]
        docs, labels = grouped[qid]
        i = int(rng.integers(len(docs)))
        others = np.flatnonzero(labels != labels[i])
        j = int(others[rng.integers(len(others))])
        key = (qid, *sorted((docs[i], docs[j])))
        if key in seen:
            continue
        seen.add(key)
        rows.append((qid, i, j))
    out = []
    flips = rng.random(len(rows)) < 0.5
    for n, ((qid, i, j), flip) in enumerate(zip(rows, flips)):
        docs, labels = grouped[qid]
        a, b = (j, i) if flip else (i, j)
        out.append((n, qid, text[qid], docs[a], docs[b], int(labels[a]), int(labels[b]),
                    "A" if labels[a] > labels[b] else "B"))
    frame = pd.DataFrame(out, columns=PAIR_COLUMNS)
    frame.attrs.update({"seed": seed, "n_pairs": n_pairs, "draws": draws, "pairs_short": n_pairs - len(frame),
                        "eligible_queries": len(eligible)})
    return frame


def given_pairs(file: str | Path, grades: pd.DataFrame, topics: pd.DataFrame, *, order: str = "given",
                seed: int = 0) -> pd.DataFrame:
    """The pairs of a TSV file (header with qid, docno_a, docno_b), asked in the file's order. ``order = "given"``:
    docno_a is shown as Product A; "seeded": a fair coin with ``seed`` decides, as for sampled pairs (the order used
    is what pairwise_pairs.tsv records). The human preference comes from ``grades`` (qid, docno, label). Pairs the
    study cannot score are left out and counted in ``attrs``: a query outside the selection, a product without a
    grade, equal grades."""
    path = Path(file).expanduser()
    if not path.is_file():
        raise DataError(f"pairwise_study.pairs: {path} does not exist (a tab-separated file with a header naming qid, "
                        "docno_a, docno_b; relative paths are read from the current directory)")
    frame = pd.read_csv(path, sep="\t", dtype=str, keep_default_na=False)
    missing = [c for c in ("qid", "docno_a", "docno_b") if c not in frame.columns]
    if missing:
        raise DataError(f"{path}: no column {missing} (found {list(frame.columns)}); the header must name qid, "
                        "docno_a and docno_b, tab-separated")
    if frame.empty:
        raise DataError(f"{path}: no pairs (only a header)")
    grade = {(str(q), str(d)): int(l) for q, d, l in grades[["qid", "docno", "label"]].itertuples(index=False)}
    text = dict(zip(topics["qid"].astype(str), topics["query"]))
    flips = np.random.default_rng(seed).random(len(frame)) < 0.5 if order == "seeded" else np.zeros(len(frame), bool)
    out, skipped = [], {"outside_selection": [], "ungraded": [], "equal_grades": []}
    for line, (r, flip) in enumerate(zip(frame.itertuples(index=False), flips), start=2):
        qid, a, b = str(r.qid).strip(), str(r.docno_a).strip(), str(r.docno_b).strip()
        if qid not in text:
            skipped["outside_selection"].append(line)
            continue
        if (qid, a) not in grade or (qid, b) not in grade:
            skipped["ungraded"].append(line)
            continue
        if grade[(qid, a)] == grade[(qid, b)]:
            skipped["equal_grades"].append(line)
            continue
        if flip:
            a, b = b, a
        la, lb = grade[(qid, a)], grade[(qid, b)]
        out.append((len(out), qid, text[qid], a, b, la, lb, "A" if la > lb else "B"))
    if not out:
        raise DataError(f"{path}: none of its {len(frame)} pairs can be asked: "
                        + "; ".join(f"{len(v)} {k.replace('_', ' ')} (lines {v[:5]})" for k, v in skipped.items() if v)
                        + ". Check [queries] (the pairs' queries must be selected) and the grades")
    pairs = pd.DataFrame(out, columns=PAIR_COLUMNS)
    pairs.attrs.update({"source": str(path), "order": order, "seed": seed if order == "seeded" else None,
                        "given": len(frame), "pairs_short": len(frame) - len(pairs),
                        **{f"skipped_{k}": len(v) for k, v in skipped.items()},
                        "skipped_lines": {k: v[:20] for k, v in skipped.items() if v}})
    return pairs


def pairwise_study(dataset: Any, llm: Any, pairs: pd.DataFrame, *,
                   field_sets: Mapping[str, Sequence[str]] | None = None, template: Any = "pairwise_compare",
                   choices: Sequence[str] = ("forced", "allow neither"), max_chars: int = 600
                   ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Ask ``llm`` about every pair under every variant. Returns (table, decisions):
    table has one row per (fields, choice, orders) with TABLE_COLUMNS; decisions one row per (pair, fields, choice)
    with the parsed answer of each order, the one-order and both-orders winners, and the raw answers."""

    missing = [c for c in PAIR_COLUMNS if c not in pairs.columns]
    if missing:
        raise ValueError(f"pairs lack columns {missing}; build them with superb.judges.studies.pairwise.sample_pairs")
    bad = [c for c in choices if c not in ("forced", "allow neither")]
    if bad or not choices:
        raise ValueError(f"choices {list(choices)} must be a non-empty subset of ['forced', 'allow neither']")
    field_sets = dict(field_sets or default_field_sets(dataset))
    known = set(getattr(dataset, "fields", ()))
    for name, fields in field_sets.items():
        unknown = [f for f in fields if known and f not in known]
        if not fields or unknown:
            raise ValueError(f"field set {name!r} = {list(fields)}: unknown or no fields {unknown}; "
                             f"this data set has {sorted(known)}")
    template = load_template(template)
    docs = {d: dataset.doc(d) for d in pd.unique(pairs[["docno_a", "docno_b"]].to_numpy().ravel())}
    table, records = [], []
    bar = progress_bar(len(field_sets) * len(choices) * len(pairs))
    try:
        for name, fields in field_sets.items():
            for choice in choices:
                bar.set_description(f"pairwise study ({name}, {choice})", refresh=False)
                comparator = PairwiseComparator(llm, template, tuple(fields), allow_neither=choice == "allow neither",
                                                both_orders=True, max_chars=max_chars, tag="judge:pairwise-study")
                coros = [ticking(comparator.compare(p.query, docs[p.docno_a], docs[p.docno_b]), bar)
                         for p in pairs.itertuples()]
                decisions = run_all(llm, coros)
                one = [d.answers[0] if d.answers[0] in ("A", "B") else None for d in decisions]
                both = [d.winner for d in decisions]
                for orders, winners in (("one", one), ("both", both)):
                    r = pairwise_precision_recall(pairs["human"], winners)
                    table.append({"fields": name, "choice": choice, "orders": orders, **r,
                                  "unparseable": comparator.stats["unparseable"],
                                  "failed_calls": comparator.stats["failed_calls"]})
                for p, d, w1 in zip(pairs.itertuples(), decisions, one):
                    records.append({"pair": p.pair, "fields": name, "choice": choice, "human": p.human,
                                    "answer_ab": d.answers[0], "answer_ba": d.answers[1], "winner_one": w1,
                                    "winner_both": d.winner, "raw_ab": d.raw[0], "raw_ba": d.raw[1]})
    finally:
        bar.close()
    out = pd.DataFrame(table, columns=TABLE_COLUMNS)
    out.attrs.update({"template": template.id, "field_sets": {k: list(v) for k, v in field_sets.items()},
                      "pairs": len(pairs)})
    return out, pd.DataFrame(records)


def progress_bar(total: int):
    """The study's bar (superb.llm.runner.progress_bar), one step per pair and variant; it spans several run_all
    calls, so the coroutines advance it themselves (:func:`ticking`) and the caller closes it."""

    return bar(total, "pairwise study", unit="pair")


async def ticking(coro, bar):
    try:
        return await coro
    finally:
        bar.update(1)


def format_table(table: pd.DataFrame) -> str:
    """Markdown: one row per variant, precision and recall in percent."""
    lines = ["| fields | choice | orders | asked | decided | precision | recall | unparseable |",
             "|---|---|---|---:|---:|---:|---:|---:|"]
    for r in table.itertuples():
        prec = "n/a" if np.isnan(r.precision) else f"{100 * r.precision:.2f}%"
        lines.append(f"| {r.fields} | {r.choice} | {r.orders} | {r.asked} | {r.decided} | {prec} | "
                     f"{100 * r.recall:.2f}% | {r.unparseable} |")
    return "\n".join(lines) + "\n"
