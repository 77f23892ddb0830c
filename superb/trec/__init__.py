"""TREC run files: the order every run is evaluated in and how superb writes it (``runs``: score descending, then
docno descending, as trec_eval reads a file), and the strict reading of another tool's run (``run_files``: TREC and
rank_llm's candidates JSON). Importing this package imports neither."""
