"""The names of a results folder's files: the one place that spells them (superb.folder owns the folder).

A folder written by ``superb run`` (``superb evaluate``, ``superb merge`` and a shard write the same layout):

  provenance.json          what made the folder, and ``files``: relative path -> sha256 of every other file (README.md
                           aside; report.html added when it is written). Every reader checks a file against it.
  table.md, table.csv      the significance table (table.csv: the views computed from runs/ and qrels.trec alone);
  table_<view>.csv         a view with labels of its own (``filled``: qrels.trec plus llm_qrels.trec)
  power.csv, perquery.csv  minimum detectable differences; one row per (system, view, qid, measure)
  usage.csv                LLM requests, tokens, cache hits, repairs and fallbacks per system
  systems.json, runs/      system name -> run file; the TREC run files (runs/SYSTEM.run)
  stage_scores.csv.gz      each stage's own score of each system's top 10 per query
  topics.tsv, qrels.trec   the queries (qid<TAB>text, CSV-quoted where the text holds a quote) and labels evaluated
  llm_qrels.trec           an LLM judge's labels (``superb judge --fill``)
  responses.jsonl.gz       the LLM answers the run used (responses.2.jsonl.gz, ... for further parts)
  cost.png, gain_*.png     plots; report.html, the page; source.patch, the uncommitted code that ran
  README.md                the reader's own account, never written or hashed by superb

A ``superb table`` folder holds table.md, table.csv, table.tex and provenance.json.
"""

from __future__ import annotations

PROVENANCE = "provenance.json"
TABLE = "table.csv"
TABLE_MD = "table.md"
TABLE_TEX = "table.tex"  # a `superb table` folder's LaTeX
POWER = "power.csv"
PERQUERY = "perquery.csv"
USAGE = "usage.csv"
SYSTEMS = "systems.json"
RUNS = "runs"  # the folder of run files: runs/<file name of the system>.run
TOPICS = "topics.tsv"
QRELS = "qrels.trec"
LLM_QRELS = "llm_qrels.trec"
RESPONSES = "responses.jsonl.gz"
STAGE_SCORES = "stage_scores.csv.gz"
REPORT = "report.html"
COST_PLOT = "cost.png"
SOURCE_PATCH = "source.patch"
README = "README.md"
FILL_FINGERPRINT = "llm_qrels.json"  # `superb judge --fill`: what its llm_qrels.trec was made from
FILL_LABELS = "llm_labels.tsv"  # ... the judge's label for every pair it filled
VIEWS = "views.md"  # ... the table under the human, LLM and filled views

#: files of a results folder its provenance.json does not hash: the reader's README.md (carried over, edited by hand)
NOT_HASHED = (README,)


def run_file(stem: str) -> str:
    """The relative path of a system's run file, from the file-system-safe form of its name."""
    return f"{RUNS}/{stem}.run"


def gain_plot(stem: str) -> str:
    """The per-query gain plot of a system over its baseline."""
    return f"gain_{stem}.png"


def view_table(view: str) -> str:
    """The table file of a view with labels of its own (the views computed from qrels.trec alone are in table.csv)."""
    return f"table_{view}.csv"
