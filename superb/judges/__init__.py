"""LLM relevance judges and agreement studies.

Modules (import what you need; nothing heavy is imported here):

  agreement       exact agreement, Cohen's kappa (unweighted/linear/quadratic), Fleiss' kappa, confusion matrices,
                  per-label precision/recall, the human ceiling, pairwise precision/recall (pure numpy/pandas)
  parse           judge answers -> grades (pure)
  records         Judgment records, qrels and JSON-lines I/O
  judge           PointwiseJudge, DeliberatedJudge, ListwiseJudge, PairwiseJudge; build_judge(options, ...)
  scoring         judges that SCORE pairs from label probabilities (expected grade, P(yes)); presets superb_product,
                  superb, umbrela, yesno_product, yesno, deliberated; requests identical to the rerankers'
  calibration     cut points fitted on dev scores (exhaustive weighted-kappa search), fixed cuts, score ensembles
  bootstrap       95% intervals resampling queries: kappas, exact agreement, Fleiss, Kendall's tau
  calibrated      the dev-calibrated test agreement study (vs the combined label and each rater, human ceiling)
  from_cache      that study from the LLM response cache alone (`python -m superb.judges.from_cache`)
  study           label_study: do human vs judge labels change system orderings (Kendall's tau) and verdicts?
  study_run       the [label_study] of a judge spec: systems from a results folder or first stages, label_study.md
  pairwise_study  the "check twice" table: forced / allow-neither x one / both orders, per product field set
  benchmark       build a SUPERB-style benchmark folder (superlative rewrites, pooled, LLM-labelled); [benchmark] specs
  spec, run, report, cli   `superb judge SPEC` (results/NAME/ with agreement tables and confusion heatmaps)
"""
