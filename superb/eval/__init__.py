"""Evaluation and reporting: measures, per-query values, paired significance tests with corrections, Table-4 style
reports and figures. Pure pandas/numpy/scipy/ir_measures (no JVM); matplotlib is imported by the plot functions."""

from superb.eval.evaluate import per_query, per_query_systems
from superb.eval.measures import DEFAULT_MEASURES, JUDGED_AT_10, judged_measure, measure_name, parse_measure, parse_measures
from superb.eval.report import compare, format_markdown, format_side_by_side, side_by_side, write_csv
from superb.eval.stats import correct, paired_pvalue, randomization_pvalue

__all__ = [
    "DEFAULT_MEASURES", "JUDGED_AT_10", "compare", "correct", "format_markdown", "format_side_by_side",
    "judged_measure", "measure_name", "paired_pvalue", "parse_measure", "parse_measures", "per_query", "per_query_systems",
    "randomization_pvalue",
    "side_by_side", "write_csv",
]
