"""LLM relevance judges and agreement studies.

Modules (import what you need; nothing heavy is imported here):

  agreement       exact agreement, Cohen's kappa (unweighted/linear/quadratic), Fleiss' kappa, confusion matrices,
                  per-label precision/recall, the human ceiling, pairwise precision/recall (pure numpy/pandas)
  records         Judgment records, qrels and JSON-lines I/O (answers are read by superb.llm.answers)
  base            THE judge contract (superb.extend.Judge): a Scored record per pair, output "score" or "label",
                  facts on the class (max_calls), the driver; every judge, built-in or plug-in, is one
  pointwise       PointwiseJudge (one request per pair, read by expected_grade, p_yes, grade or UMBRELA's written
                  score; requests identical to the rerankers') and DeliberatedJudge (the ideal product first)
  listwise        ListwiseJudge (windows graded in one answer) and PairwiseJudge (win rates from comparisons)
  registry        the types a spec names (built-in, "file.py:Class", "module:Class", entry points superb.judges),
                  the presets and their passage forms, build_judge(options, ...)
  pool            which pairs a judge spec labels: judged pairs with text, samples, the systems' pooled top D
  bootstrap       95% intervals resampling queries: kappas, exact agreement, Fleiss, Kendall's tau
  pair_agreement  do two label sets find the same significantly different pairs of systems?
  from_cache      the calibration study from the LLM response cache alone (`python -m superb.judges.from_cache`)
  benchmark       build a SUPERB-style benchmark folder (superlative rewrites, pooled, LLM-labelled); [benchmark] specs
  agreement_report  the agreement tables of a judge run as markdown

  studies/        one module per study, named for it (see superb.judges.studies)
  fill/           `superb judge --fill results/NAME`: LLM labels for a folder's unjudged products (label, write, inputs)
  commands/       `superb judge SPEC`: the spec, the run writing results/NAME/, the CLI
"""
