"""The studies of `superb judge`, each found by its name (``<study>.py`` computes it, ``<study>_run.py`` is the step
of a judge spec that runs it and writes its files):

  label                   do human vs judge labels change system orderings (Kendall's tau) and verdicts?
  label_run               the [label_study] of a judge spec: systems from a results folder or first stages
  pairwise                the "check twice" table ([pairwise_study]): forced / allow-neither x one / both orders
  preference              pairwise judging by probabilities: a precision/recall curve over the decision threshold
  calibration             cut points fitted on dev scores (exhaustive weighted-kappa search), fixed cuts, ensembles
  calibration_agreement   the dev-calibrated test agreement (vs the combined label and each rater, human ceiling)
  calibration_run         the scoring variants of a judge spec: calibrated on dev pairs, reported on test pairs
"""
