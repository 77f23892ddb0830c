"""Evaluation and reporting on PyTerrier's own machinery: per-query values and tests through ``pt.Experiment``
(ir_measures underneath), superb's NaN-aware Holm/Bonferroni on its output, Table-4 style reports and figures.

For a PyTerrier user: ``pt.Experiment(..., baseline=0, test=PairedTest("randomization"))`` and then
``correct_experiment(result, "holm")`` gives Holm decisions that never count or reject an identical system.
"""

from superb.eval.evaluate import Family, View, families, family_pvalues, make_views, per_query, significance
from superb.eval.measures import DEFAULT_MEASURES, JUDGED_AT_10, judged_measure, measure_name, parse_measure, parse_measures
from superb.eval.stats import PairedTest, correct, correct_experiment, paired_pvalue, randomization_pvalue

__all__ = [
    "DEFAULT_MEASURES", "JUDGED_AT_10", "Family", "PairedTest", "View", "correct", "correct_experiment", "families",
    "family_pvalues", "judged_measure", "make_views", "measure_name", "paired_pvalue", "parse_measure",
    "parse_measures", "per_query", "randomization_pvalue", "significance",
]
