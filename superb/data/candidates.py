"""Any rank_llm candidates file as a data set: its queries, its passages with their text, and its ranking as the data
set's own first stage.

``[dataset] name = "candidates"``, ``file = "retrieve_results_X.json"`` (rank_llm's retrieve step: a JSON list of
``{"query": text, "hits": [{"qid", "docid", "rank", "score", "content"}, ...]}``; or the same gzipped,
``.json.gz``), ``qrels = FILE`` (TREC qrels),
optional ``topics = FILE`` (``qid<TAB>query``) and ``rel_threshold`` (default 1; TREC DL counts labels >= 2). So a
collection superb does not know (DL21, DL22, BEIR sets, another first stage such as SPLADE++ or TAS-B) is reranked
without converting its passages by hand.

- documents: the passages of the hits (a passage retrieved for two queries is one document), field ``text`` with its
  whitespace collapsed (as trec-dl's), so prompts are the same as trec-dl's over the same file.
- queries: one per entry (its qid is its hits'), the text of the entry's ``query``; with ``topics``, the topics of the
  candidates' queries, whose text must equal the entry's (a query without a topic, or another text, is a DataError).
- ``more_files = [...]``: more candidates files of the same queries (other first stages): their passages join the
  documents, and each is a run named by its file name (``run = "dataset:splade"`` for ``splade.json.gz``).
- the ranking: ``first_stage = { run = "dataset:candidates" }`` reads the file with superb.trec.run_files' strict reader
  (every defect named with its place); it is the data set's first stage, as trec-dl's ``dataset:bm25``.
- ``text_kind = "passage"``: the rerankers' default templates are the passage ones, their default prompt field ``text``.

The passages are read strictly here too: a file that is not valid JSON (truncated) is a DataError naming
``file:line``; a hit without a string ``content``, or a passage given two different texts, names the entry and hit.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from superb.data.base import Dataset, check_options, file_record, require_file
from superb.data.local import read_queries_tsv, read_trec_qrels
from superb.errors import DataError, SpecError
from superb.trec.run_files import rank_llm_entries, read_run_file

log = logging.getLogger(__name__)
OPTIONS = ("name", "file", "qrels", "topics", "rel_threshold", "more_files")
#: the run a spec names as ``first_stage = { run = "dataset:candidates" }``
RUN = "candidates"
HOW = {
    "file": "Give rank_llm's candidates file (retrieve_results_*.json: a JSON list of {\"query\", \"hits\"} entries, "
            "each hit with qid, docid, rank, score and the passage's text as content) as option `file`.",
    "qrels": "Give a TREC qrels file (`qid 0 docno label` per line) as option `qrels`.",
    "topics": "Give a tab-separated file of `qid<TAB>query` lines as option `topics`, or leave it out (the "
              "candidates' own query texts are used).",
    "more_files": "Give more rank_llm candidates files of the same queries (other first stages) as a list, "
                  "`more_files = [\"splade.json.gz\", ...]`: their passages join the documents and each is a run "
                  "named by its file name without .json/.json.gz (`run = \"dataset:splade\"`).",
}


class CandidatesDataset(Dataset):
    """The queries, passages and ranking of one rank_llm candidates file (see the module docstring)."""

    text_kind = "passage"
    prompt_fields = ("text",)
    location_options = ("file", "qrels", "topics")

    def __init__(self, files: Mapping[str, Path], *, rel_threshold: int, options: Mapping[str, Any],
                 more: Mapping[str, Path] | None = None):
        self.files = dict(files)
        self.more = dict(more or {})  # run name -> another candidates file of the same queries
        labels = tuple(sorted(set(read_trec_qrels(self.files["qrels"])["label"])))
        super().__init__(name="candidates", fields=("text",), rel_threshold=rel_threshold, labels=labels,
                         label_names={}, options=options)
        self._entries: list[tuple[str, str, list[tuple[str, str]]]] | None = None
        self._empty: list[tuple[str | None, str]] = []  # (qid or None, query text) of the entries without hits

    def entries(self) -> list[tuple[str, str, list[tuple[str, str]]]]:
        """(qid, query text, [(docno, passage text), ...]) per entry with hits, read once: the ranking first, by the
        strict run reader, then the passages' text."""
        if self._entries is None:
            read_run_file(self.files["file"], "rank_llm")  # the ranking's defects, each with its place
            self._entries, self._empty = read_passages(self.files["file"])
            self._counts["entries_without_hits"] = len(self._empty)
        return self._entries

    def _load_docs(self) -> Iterator[dict]:
        """The passages of ``file``, then those of each of ``more_files`` not seen yet (a passage given two texts is
        a DataError naming the place)."""
        seen: dict[str, str] = {}
        sources = [(self.files["file"], self.entries())]
        for path in self.more.values():
            read_run_file(path, "rank_llm")
            sources.append((path, read_passages(path)[0]))
        for path, entries in sources:
            for i, (_, _, hits) in enumerate(entries):
                for j, (docno, text) in enumerate(hits):
                    if docno in seen:
                        if seen[docno] != text:
                            raise DataError(f"{path}: entry {i}, hit {j}: passage {docno!r} has a text different "
                                            "from its earlier hit's; a passage has one text")
                        continue
                    seen[docno] = text
                    yield {"docno": docno, "text": text}

    def _load_topics(self) -> pd.DataFrame:
        """The entries' queries; an entry without hits is a query the ranking answers with nothing: it stays a topic
        (scored 0, as trec_eval -c scores a query the run misses) when its qid is known: its own ``qid`` key, or the
        topics file's query of the same text. One whose qid cannot be known is left out, warned and counted."""
        queries: dict[str, str] = {}
        for qid, text, _ in self.entries():
            queries.setdefault(qid, text)
        topics = read_queries_tsv(self.files["topics"]) if "topics" in self.files else None
        by_text: dict[str, list[str]] = {}
        if topics is not None:
            for qid, text in zip(topics["qid"], topics["query"]):
                by_text.setdefault(str(text).strip(), []).append(str(qid))
        unknown = []
        for i, (qid, text) in enumerate(self._empty):
            found = qid or (by_text.get(text, [None])[0] if len(by_text.get(text, [])) == 1 else None)
            if found is None:
                unknown.append(i)
                continue
            queries.setdefault(found, text)
        self._counts["entries_without_hits_scored_0"] = len(self._empty) - len(unknown)
        self._counts["entries_without_hits_left_out"] = len(unknown)
        if self._empty:
            log.warning("%s: %d entries have no hits: scored 0 (as trec_eval -c scores a query the run misses)%s",
                        self.files["file"], len(self._empty) - len(unknown),
                        f"; {len(unknown)} left out, their query id unknown (queries "
                        f"{[self._empty[i][1] for i in unknown][:5]}): give a topics "
                        "file with their text, or a \"qid\" key in the entry" if unknown else "")
        if topics is None:
            return pd.DataFrame(list(queries.items()), columns=["qid", "query"])
        path = self.files["topics"]
        chosen = topics[topics["qid"].isin(set(queries))].reset_index(drop=True)
        missing = [q for q in queries if q not in set(chosen["qid"])]
        if missing:
            raise DataError(f"{path}: no topic for the candidates' queries {missing[:5]} ({len(missing)} in all); "
                            f"{HOW['topics']}")
        differ = [q for q, t in zip(chosen["qid"], chosen["query"]) if queries[q] != t]
        if differ:
            raise DataError(f"{self.files['file']}: the query text differs from {path.name} for qids {differ[:5]} "
                            f"({len(differ)} in all); leave `topics` out to use the candidates' own texts")
        self._counts["topics_without_candidates"] = len(topics) - len(chosen)
        return chosen

    def _load_qrels(self) -> pd.DataFrame:
        return read_trec_qrels(self.files["qrels"])

    def run_names(self) -> list[str]:
        return [RUN, *self.more]

    def run_file(self, name: str, path: str = "first_stage.run") -> Path:
        """The candidates file itself, for ``first_stage = { run = "dataset:candidates" }``; one of ``more_files`` by
        its name."""
        if name == RUN:
            return self.files["file"]
        if name in self.more:
            return self.more[name]
        raise SpecError(path, f"data set 'candidates' provides the runs {self.run_names()} (its files' rankings), "
                              f"not {name!r}")

    def _source(self) -> dict:
        return {"source": "a rank_llm candidates file" + (f" and {len(self.more)} more" if self.more else ""),
                "files": [file_record(f, role=role) for role, f in self.files.items()]
                + [file_record(f, role=f"run {name}") for name, f in self.more.items()]}


def read_passages(path: Path) -> tuple[list[tuple[str, str, list[tuple[str, str]]]],
                                      list[tuple[str | None, str]]]:
    """(qid, query, [(docno, text), ...]) per entry of a rank_llm file with hits, and (qid or None, query text) of
    each entry without hits (its own ``qid`` key, if any: rank_llm's qid sits on the hits); every defect a DataError
    naming the file and its place (line of a JSON error; entry and hit of a missing field)."""
    out, empty = [], []
    for i, entry in enumerate(rank_llm_entries(path)):  # JSON, UTF-8 and shape checked as the run reader checks them
        where = f"{path}: entry {i}"
        if not entry["hits"]:
            qid = entry.get("qid")
            empty.append((None if qid is None else str(qid), str(entry.get("query") or "").strip()))
            continue
        query = entry.get("query")
        if not isinstance(query, str) or not query.strip():
            raise DataError(f"{where}: no query text (\"query\" must be a non-empty string). {HOW['file']}")
        hits = []
        for j, hit in enumerate(entry["hits"]):
            text = hit.get("content") if isinstance(hit, dict) else None
            if not isinstance(text, str):
                raise DataError(f"{where}, hit {j}: no passage text (\"content\" must be a string, found "
                                f"{type(text).__name__}). {HOW['file']}")
            if "docid" not in hit or "qid" not in hit:
                raise DataError(f"{where}, hit {j}: no \"docid\" or \"qid\". {HOW['file']}")
            hits.append((str(hit["docid"]), " ".join(text.split())))
        out.append((str(entry["hits"][0]["qid"]), query.strip(), hits))
    return out, empty


def load(config: Mapping[str, Any], path: str = "dataset") -> CandidatesDataset:
    check_options(config, OPTIONS, path)
    files = {key: require_file(config.get(key), path, key, HOW[key]) for key in ("file", "qrels")}
    if not _is_json(files["file"]):
        raise SpecError(f"{path}.file", f"{files['file']} does not end in .json or .json.gz: the data set's run is "
                                        f"read as rank_llm's JSON. {HOW['file']}")
    more = _more_files(config.get("more_files"), path)
    if config.get("topics") is not None:
        files["topics"] = require_file(config["topics"], path, "topics", HOW["topics"])
    rel = config.get("rel_threshold", 1)
    if not isinstance(rel, int) or isinstance(rel, bool):
        raise SpecError(f"{path}.rel_threshold", f"expected an integer label, got {rel!r} (TREC DL: 2)")
    return CandidatesDataset(files, rel_threshold=rel, options={k: v for k, v in config.items() if k != "name"},
                             more=more)


def _is_json(file: Path) -> bool:
    return file.name.lower().endswith((".json", ".json.gz"))


def _more_files(value: Any, path: str) -> dict[str, Path]:
    """``more_files``: run name (the file name without .json/.json.gz) -> file, each a rank_llm JSON."""
    if value is None:
        return {}
    if not isinstance(value, list) or not value:
        raise SpecError(f"{path}.more_files", f"expected a non-empty list of files, got {value!r}. "
                                              f"{HOW['more_files']}")
    out: dict[str, Path] = {}
    for i, item in enumerate(value):
        file = require_file(item, path, f"more_files[{i}]", HOW["more_files"])
        if not _is_json(file):
            raise SpecError(f"{path}.more_files[{i}]", f"{file} does not end in .json or .json.gz. "
                                                       f"{HOW['more_files']}")
        name = file.name[:-len(".json.gz")] if file.name.lower().endswith(".gz") else file.name[:-len(".json")]
        if name in out or name == RUN:
            raise SpecError(f"{path}.more_files[{i}]", f"a second run named {name!r} (runs are named by their file "
                                                       "names without .json/.json.gz; rename one file)")
        out[name] = file
    return out
