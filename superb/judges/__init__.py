"""LLM relevance judges and agreement studies.

Modules (import what you need; nothing heavy is imported here):

  agreement       exact agreement, Cohen's kappa (unweighted/linear/quadratic), Fleiss' kappa, confusion matrices,
                  per-label precision/recall, the human ceiling, pairwise precision/recall (pure numpy/pandas)
  records         Judgment records, qrels and JSON-lines I/O (answers are read by superb.llm.answers)
  judge           PointwiseJudge, DeliberatedJudge, ListwiseJudge, PairwiseJudge; build_judge(options, ...)
  scoring         judges that SCORE pairs from label probabilities (expected grade, P(yes)); presets superb_product,
                  superb, umbrela, yesno_product, yesno, deliberated; requests identical to the rerankers'
  bootstrap       95% intervals resampling queries: kappas, exact agreement, Fleiss, Kendall's tau
  pair_agreement  do two label sets find the same significantly different pairs of systems?
  from_cache      the calibration study from the LLM response cache alone (`python -m superb.judges.from_cache`)
  benchmark       build a SUPERB-style benchmark folder (superlative rewrites, pooled, LLM-labelled); [benchmark] specs
  ideal_step      the ideal-attributes step both deliberated judges put first (its options and request, once)
  agreement_report  the agreement tables of a judge run as markdown

  studies/        one module per study, named for it (see superb.judges.studies)
  fill/           `superb judge --fill results/NAME`: LLM labels for a folder's unjudged products (label, write, inputs)
  commands/       `superb judge SPEC`: the spec, the run writing results/NAME/, the CLI
"""
