"""Evaluation and reporting on PyTerrier's own machinery: per-query values and tests through ``pt.Experiment``
(ir_measures underneath), superb's NaN-aware Holm/Bonferroni on its output, Table-4 style reports and figures.

For a PyTerrier user: ``pt.Experiment(..., baseline=0, test=PairedTest("randomization"))`` and then
``correct_experiment(result, "holm")`` gives Holm decisions that never count or reject an identical system.
"""

from superb.eval.effects import mde, paired_interval
from superb.eval.evaluate import View, make_views, no_relevant_queries, pair_pvalues, per_query, significance
from superb.eval.families import Family, Hypothesis, families
from superb.eval.measures import DEFAULT_MEASURES, JUDGED_AT_10, judged_measure, measure_name, parse_measure, parse_measures
from superb.eval.stats import PairedTest, correct, correct_experiment, paired_pvalue, randomization_pvalue

__all__ = [
    "DEFAULT_MEASURES", "JUDGED_AT_10", "Family", "Hypothesis", "PairedTest", "View", "correct", "correct_experiment",
    "families", "judged_measure", "make_views", "mde", "measure_name", "no_relevant_queries", "pair_pvalues",
    "paired_interval", "paired_pvalue", "parse_measure", "parse_measures", "per_query", "randomization_pvalue", "significance",
]
