"""Do two label sets draw the same conclusions about PAIRS of systems?

Kendall's tau (superb.judges.studies.label.ranking_agreement) weighs every pair of systems alike, so with many
systems within noise of each other (a first stage and its light rerankings) it mostly measures how those near-ties fall. What a
researcher concludes from a table is narrower: "system X is significantly better than system Y". Here every pair of
systems is tested under each label set (the spec's paired test over the same queries, one correction family per
label set and measure: all pairs), and the conclusions are compared:

- ``significant_<a>``: pairs significantly different under ``a`` (the reference labels, e.g. the human ones);
- ``same_order``: of those, pairs that ``b`` orders the same way by mean (significant or not);
- ``confirmed``: of those, pairs ``b`` also finds significant, in the same direction;
- ``reversed``: of those, pairs ``b`` finds significant in the OTHER direction (the worst outcome);
- ``significant_<b>`` and ``only_<b>``: pairs significant under ``b``, and those of them ``a`` does not find.

SELF-PREFERENCE (when ``b`` comes from an LLM judge and ``judge_ranked`` names the systems the same model ranked):
of the ``only_<b>`` pairs, ``only_<b>_mixed`` are those with one side ranked by the judge's model and the other not
(the pairs where a preference for its own rankings can show), and ``only_<b>_self`` those of them in which ``b``
favours the side its model ranked. Each pair row says which of its two systems the model ranked
(``system_judge_ranked``, ``other_judge_ranked``).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from itertools import combinations

import numpy as np
import pandas as pd

from superb.eval.stats import correct, paired_pvalue


def pair_verdicts(perquery: pd.DataFrame, *, test: str = "t", correction: str = "holm", alpha: float = 0.05,
                  seed: int = 0, n_resamples: int = 10_000) -> pd.DataFrame:
    """Every pair of systems per measure (columns system, other, measure, delta, p, p_corrected, verdict), from
    per-query values (system, qid, measure, value). ``delta`` = mean(system) - mean(other); verdict "better" /
    "worse" (for ``system``) when the corrected p is at most ``alpha``, else "n.s." (also when all values tie)."""

    rows = []
    for measure, frame in perquery.groupby("measure", sort=False):
        wide = frame.pivot_table(index="qid", columns="system", values="value", sort=False)
        if wide.isna().any().any():
            missing = wide.columns[wide.isna().any()].tolist()
            raise ValueError(f"{measure}: systems {missing} lack per-query values for some queries; a paired test "
                             "needs every system on every query")
        means = wide.mean()
        pairs = list(combinations(pd.unique(frame["system"]), 2))
        p = np.array([paired_pvalue(wide[s].to_numpy(), wide[o].to_numpy(), test, seed=seed,
                                    n_resamples=n_resamples) for s, o in pairs])
        corrected, reject = correct(p, correction, alpha)
        for (s, o), raw, adj, rej in zip(pairs, p, corrected, reject):
            delta = float(means[s] - means[o])
            verdict = ("better" if delta > 0 else "worse") if rej else "n.s."
            rows.append({"system": s, "other": o, "measure": measure, "delta": delta, "p": raw, "p_corrected": adj,
                         "verdict": verdict})
    return pd.DataFrame(rows, columns=["system", "other", "measure", "delta", "p", "p_corrected", "verdict"])


def pair_agreement(perquery_a: pd.DataFrame, perquery_b: pd.DataFrame, names: Sequence[str] = ("a", "b"), *,
                   test: str = "t", correction: str = "holm", alpha: float = 0.05, seed: int = 0,
                   n_resamples: int = 10_000, judge_ranked: Collection[str] | None = None
                   ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(summary per measure, every pair with both verdicts) of the same systems evaluated under two label sets; see
    the module doc for the summary's columns (the self-preference ones only with ``judge_ranked``)."""
    a_name, b_name = names
    tests = dict(test=test, correction=correction, alpha=alpha, seed=seed, n_resamples=n_resamples)
    va, vb = pair_verdicts(perquery_a, **tests), pair_verdicts(perquery_b, **tests)
    both = va.merge(vb, on=["system", "other", "measure"], how="outer", suffixes=(f"_{a_name}", f"_{b_name}"),
                    indicator=True)
    if (both["_merge"] != "both").any():
        raise ValueError("the two evaluations differ in systems or measures: compare the same runs under both")
    both = both.drop(columns="_merge")
    if judge_ranked is not None:
        ranked = set(judge_ranked)
        both["system_judge_ranked"] = both["system"].isin(ranked)
        both["other_judge_ranked"] = both["other"].isin(ranked)
    rows = []
    for measure, g in both.groupby("measure", sort=False):
        sig_a = g[f"verdict_{a_name}"] != "n.s."
        sig_b = g[f"verdict_{b_name}"] != "n.s."
        same_sign = np.sign(g[f"delta_{a_name}"]) == np.sign(g[f"delta_{b_name}"])
        rows.append({"measure": measure, "system_pairs": len(g), f"significant_{a_name}": int(sig_a.sum()),
                     "same_order": int((sig_a & same_sign).sum()),
                     "confirmed": int((sig_a & sig_b & same_sign).sum()),
                     "reversed": int((sig_a & sig_b & ~same_sign).sum()),
                     f"significant_{b_name}": int(sig_b.sum()), f"only_{b_name}": int((sig_b & ~sig_a).sum())})
        if judge_ranked is not None:
            only = g[sig_b & ~sig_a]
            mixed = only[only["system_judge_ranked"] != only["other_judge_ranked"]]
            favours_system = mixed[f"delta_{b_name}"] > 0
            rows[-1].update({f"only_{b_name}_mixed": len(mixed),
                             f"only_{b_name}_self": int((favours_system == mixed["system_judge_ranked"]).sum())})
    return pd.DataFrame(rows), both.reset_index(drop=True)


def markdown_header(name: str, self_preference: bool = False) -> str:
    """The two table columns (header cells) in which label_study.md shows a row of the summary; with
    ``self_preference``, the second also counts the one-sided pairs (see the module doc)."""
    extra = " (of them, LLM-ranked vs not: for the LLM-ranked side)" if self_preference else ""
    return (f"significant pairs (human): {name} orders alike / confirms / reverses | significant pairs ({name}): "
            f"not under human{extra}")


def markdown_cells(row) -> str:
    """A summary row (names "human" and "judge") as the two cells under :func:`markdown_header`."""
    mixed = getattr(row, "only_judge_mixed", None)
    extra = "" if mixed is None or pd.isna(mixed) else f" ({int(mixed)}: {int(row.only_judge_self)})"
    return (f"{row.significant_human}: {row.same_order} / {row.confirmed} / {row.reversed} | "
            f"{row.significant_judge}: {row.only_judge}{extra}")
