"""`superb judge --fill results/NAME`: LLM labels for the unjudged products in the top ranks of a results folder.

  inputs   its options (FillOptions), the folder read back (Folder) and the names of the files it writes
  label    picks the targets and labels them with a calibrated judge (run_fill)
  write    what it writes into the folder: the LLM qrels, the view "filled", the label study, provenance
"""
