"""Declared hypotheses of a judge spec: the confirmatory tests of a collection judged AFTER they were written.

A judge spec's ``[[hypotheses]]`` (written from a development collection's numbers before this one's judgments are
read; the spec's git history shows the order) each name one claim about this collection's TEST pairs:

    [[hypotheses]]
    name = "H1"
    statistic = "kappa_linear"        # kappa | kappa_linear | kappa_quadratic | agreement: against the human label
    judge = "umbrela"
    against = "umbrela_written"       # another judge on the same pairs: judge's statistic minus its, above 0
    evidence = "DL19: ..."            # what it was declared from (kept with the verdict)

    [[hypotheses]]
    name = "H2"
    statistic = "tau"                 # tau | tau_ap | rho: the orderings of [label_study] depth under LLM labels
    judge = "umbrela"
    labels = "llm"                    # llm | same pairs | filled
    measure = "nDCG@10"
    above = 0.5                       # the statistic above a level fixed from the development collection

Each is tested one-sided ("greater") by the query bootstrap of the folder's intervals (superb.judges.bootstrap, the
spec's [calibration] bootstrap resamples and seed): p = the share of resampled values at or below the null (0 for a
difference, the level for ``above``), at least 1/resamples. The declared hypotheses are one family, Holm-corrected at
``alpha`` (0.05); the verdict is "confirmed" or "not confirmed". Everything else in the folder is exploratory.
Written: hypotheses.csv and hypotheses.md.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from superb.errors import SpecError
from superb.eval.stats import correct
from superb.judges.bootstrap import KAPPAS, QueryBootstrap, kappa_samples, ordering_samples
from superb.options import check_keys

AGREEMENT_STATISTICS = ("kappa", "kappa_linear", "kappa_quadratic", "agreement")
ORDERING_STATISTICS = ("tau", "tau_ap", "rho")
VIEWS = ("llm", "same pairs", "filled")
KEYS = {"name", "statistic", "judge", "against", "above", "labels", "measure", "evidence"}


@dataclass(frozen=True)
class JudgeHypothesis:
    name: str
    statistic: str
    judge: str
    against: str | None = None
    above: float | None = None
    labels: str = "llm"
    measure: str = "nDCG@10"
    evidence: str = ""


def parse_hypotheses(table: Any) -> tuple[JudgeHypothesis, ...]:
    """``[[hypotheses]]`` of a judge spec, checked when the spec is read (module docstring)."""
    if not isinstance(table, list) or not table:
        raise SpecError("hypotheses", "expected an array of tables ([[hypotheses]])")
    out, names = [], set()
    for i, h in enumerate(table):
        path = f"hypotheses[{i}]"
        check_keys(h, path, required={"name", "statistic", "judge"}, optional=KEYS)
        stat = h["statistic"]
        if stat not in AGREEMENT_STATISTICS + ORDERING_STATISTICS:
            raise SpecError(f"{path}.statistic", f"{stat!r} is not one of {list(AGREEMENT_STATISTICS + ORDERING_STATISTICS)}")
        if h["name"] in names:
            raise SpecError(f"{path}.name", f"{h['name']!r} is used twice")
        names.add(h["name"])
        if ("against" in h) == ("above" in h):
            raise SpecError(path, "give exactly one of against (another judge: the difference above 0) or above (a "
                                  "level)")
        if "against" in h and stat in ORDERING_STATISTICS:
            raise SpecError(f"{path}.against", "an ordering statistic is tested against a level (above = ...)")
        above = h.get("above")
        if above is not None and (isinstance(above, bool) or not isinstance(above, (int, float))):
            raise SpecError(f"{path}.above", f"expected a number, found {above!r}")
        labels = h.get("labels", "llm")
        if labels not in VIEWS:
            raise SpecError(f"{path}.labels", f"{labels!r} is not one of {list(VIEWS)}")
        out.append(JudgeHypothesis(name=str(h["name"]), statistic=stat, judge=str(h["judge"]),
                                   against=h.get("against"), above=None if above is None else float(above),
                                   labels=labels, measure=str(h.get("measure", "nDCG@10")),
                                   evidence=str(h.get("evidence", ""))))
    return tuple(out)


def evaluate_hypotheses(hypotheses: Sequence[JudgeHypothesis], labels: Mapping[str, pd.DataFrame],
                    reference: pd.DataFrame, orderings: Mapping[tuple[str, str], tuple[pd.DataFrame, pd.DataFrame]],
                    *, bootstrap: QueryBootstrap, alpha: float = 0.05) -> pd.DataFrame:
    """One row per hypothesis: observed value, 95% interval, one-sided p, Holm p over the family, verdict.
    ``labels``: judge -> its labels (qid, docno, split, label); ``reference``: qid, docno, final; ``orderings``:
    (judge, labels view) -> (per-query values under the human qrels, under the view) of the orderings study."""
    human = reference[["qid", "docno", "final"]].astype({"qid": str, "docno": str})
    rows = []
    for h in hypotheses:
        row = {"name": h.name, "statistic": h.statistic, "judge": h.judge,
               "against": h.against or "", "above": h.above, "labels": "", "measure": "", "evidence": h.evidence}
        if h.statistic in AGREEMENT_STATISTICS:
            observed, samples, n, queries = _agreement(h, labels, human, bootstrap)
        else:
            key = (h.judge, h.labels)
            if key not in orderings:
                raise SpecError("hypotheses", f"{h.name}: no orderings of judge {h.judge!r} under {h.labels!r} "
                                              "labels: the spec needs [label_study] depth and that judge")
            a, b = orderings[key]
            observed, samples, n = ordering_samples(a, b, h.measure, h.statistic, bootstrap)
            queries = a["qid"].nunique()
            row.update(labels=h.labels, measure=h.measure)
        null = 0.0 if h.against else float(h.above)
        ok = samples[np.isfinite(samples)]
        low, high, _ = bootstrap.interval(samples)
        p = max(float((ok <= null).mean()), 1.0 / max(ok.size, 1)) if ok.size and queries >= 2 else float("nan")
        rows.append({**row, "n": n, "queries": queries, "observed": observed, "low": low, "high": high,
                     "null": null, "p": p})
    table = pd.DataFrame(rows)
    corrected, reject = correct(table["p"].to_numpy(), "holm", alpha)
    table["p_holm"] = corrected
    table["verdict"] = np.where(reject, "confirmed", np.where(table["p"].isna(), "not testable (< 2 queries)",
                                                              "not confirmed"))
    table.attrs.update(alpha=alpha, resamples=bootstrap.n_resamples, seed=bootstrap.seed)
    return table


def _agreement(h: JudgeHypothesis, labels: Mapping[str, pd.DataFrame], human: pd.DataFrame,
               bootstrap: QueryBootstrap) -> tuple[float, np.ndarray, int]:
    for name in (h.judge, h.against):
        if name is not None and name not in labels:
            raise SpecError("hypotheses", f"{h.name}: judge {name!r} has no labels; the spec's judges: "
                                          f"{sorted(labels)}")
    test = {n: f[f["split"] == "test"][["qid", "docno", "label"]].astype({"qid": str, "docno": str})
            for n, f in labels.items()}
    both = test[h.judge].merge(human, on=["qid", "docno"])
    if h.against:
        both = both.merge(test[h.against].rename(columns={"label": "other"}), on=["qid", "docno"])
    weights = KAPPAS.get(h.statistic)
    observed, samples = kappa_samples(both["qid"], both["final"], both["label"], weights, bootstrap)
    if h.against:
        other, other_samples = kappa_samples(both["qid"], both["final"], both["other"], weights, bootstrap)
        observed, samples = observed - other, samples - other_samples
    return observed, samples, len(both), both["qid"].nunique()


def write_hypotheses(table: pd.DataFrame, out: Path, title: str) -> None:
    table.to_csv(out / "hypotheses.csv", index=False)
    lines = [f"# {title}: declared hypotheses", "",
             f"Declared before this collection's judgments were read (the spec's history); one family, Holm-corrected "
             f"at alpha {table.attrs['alpha']}; one-sided bootstrap over queries ({table.attrs['resamples']} "
             f"resamples, seed {table.attrs['seed']}): p = the share of resampled values at or below the null.", "",
             "| hypothesis | claim | observed [95% CI] | p | Holm p | verdict | declared from |",
             "|---|---|---:|---:|---:|---|---|"]
    for r in table.itertuples(index=False):
        if r.against:
            claim = f"{r.judge} {r.statistic} above {r.against}'s (difference > 0; {r.n:,} test pairs)"
        elif r.labels:
            claim = f"{r.statistic} of {r.measure} orderings, {r.judge} {r.labels} labels, above {r.null:g}"
        else:
            claim = f"{r.judge} {r.statistic} above {r.null:g} ({r.n:,} test pairs)"
        lines.append(f"| {r.name} | {claim} | {r.observed:+.3f} [{r.low:+.3f}, {r.high:+.3f}] | {r.p:.3g} | "
                     f"{r.p_holm:.3g} | {r.verdict} | {r.evidence} |")
    (out / "hypotheses.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
