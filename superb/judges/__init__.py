"""LLM relevance judges and agreement studies.

Modules (import what you need; nothing heavy is imported here):

  agreement       exact agreement, Cohen's kappa (unweighted/linear/quadratic), Fleiss' kappa, confusion matrices,
                  per-label precision/recall, the human ceiling, pairwise precision/recall (pure numpy/pandas)
  records         Judgment records, qrels and JSON-lines I/O (answers are parsed by superb.llm.parsing.parse_grade)
  judge           PointwiseJudge, DeliberatedJudge, ListwiseJudge, PairwiseJudge; build_judge(options, ...)
  scoring         judges that SCORE pairs from label probabilities (expected grade, P(yes)); presets superb_product,
                  superb, umbrela, yesno_product, yesno, deliberated; requests identical to the rerankers'
  bootstrap       95% intervals resampling queries: kappas, exact agreement, Fleiss, Kendall's tau
  pair_agreement  do two label sets find the same significantly different pairs of systems?
  from_cache      the calibration study from the LLM response cache alone (`python -m superb.judges.from_cache`)
  benchmark       build a SUPERB-style benchmark folder (superlative rewrites, pooled, LLM-labelled); [benchmark] specs
  fill, fill_inputs   `superb judge --fill results/NAME`: LLM labels for a folder's unjudged products
  spec, run, report, cli   `superb judge SPEC` (results/NAME/ with agreement tables and confusion heatmaps)

  studies/        one module per study, named for it (see superb.judges.studies)
"""
