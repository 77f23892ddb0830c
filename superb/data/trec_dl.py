"""TREC Deep Learning 2019 and 2020 passage ranking over BM25's top 100: the LLM-reranking papers' benchmark.

``[dataset] name = "trec-dl"``, ``year = 2019 | 2020``. The files are the ones RankGPT, rank_llm, llm-rankers and PRP
rerank: rank_llm's BM25 top-100 candidates with passage text (Anserini BM25, k1 0.9, b 0.4, over the 8.8M MS MARCO
v1 passages), the same run as a TREC run file, NIST's graded qrels and the topics, each pinned to one upstream
commit and sha256-checked (superb.data.fetch; offline from ``$SUPERB_DATA_MIRROR/trec-dl/``).

Choices made here:
- documents: the candidate passages (DL19: 4,300 hits, DL20: 5,400; a passage retrieved for two queries is one
  document), with the single field ``text``. The corpus is NOT MS MARCO: a Terrier or PISA index over it ranks
  4,300 passages, not 8.8M, so the field's BM25 baseline is the run file itself: ``first_stage = { run =
  "dataset:bm25" }`` (:meth:`TrecDLDataset.run_file`).
- queries: the judged ones (DL19 43, DL20 54), exactly the queries of the candidates file; their text from the
  topics file (a different text in the candidates file is a DataError).
- qrels: NIST's, 0..3; ``rel_threshold = 2`` (binary measures count 2 and 3, as the papers do). Judged passages
  outside the candidates stay in the qrels (counted as ``qrels_docno_not_in_corpus``): nDCG's ideal ranking needs
  them, as trec_eval has them.
- ``text_kind = "passage"``: the rerankers' default templates are the passage ones, and their default prompt field
  is ``text``.

Credit: MS MARCO (non-commercial research terms), TREC DL (NIST), rank_llm (Apache-2.0).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from superb.data.base import Dataset, check_options
from superb.data.fetch import PinnedFile, fetch
from superb.data.local import read_trec_qrels
from superb.errors import DataError, SpecError

FOLDER = "trec-dl"  # sub-folder of the data dir and of SUPERB_DATA_MIRROR
RANK_LLM = "916102c7de2f7348a64427b89300946657997098"
ANSERINI_TOOLS = "5b819c1a45c8a0a3ec9426f476694f44a29dfaf3"
_RANK_LLM_RAW = f"https://raw.githubusercontent.com/castorini/rank_llm/{RANK_LLM}/retrieve_results/BM25/"
_TOOLS_RAW = f"https://raw.githubusercontent.com/castorini/anserini-tools/{ANSERINI_TOOLS}/"


def _year(yy: str, topics: str, sizes: tuple[int, int, int, int], sha256: tuple[str, str, str, str]
          ) -> dict[str, PinnedFile]:
    """One year's four pinned files: candidates, BM25 run, qrels, topics (sizes and sha256 in that order)."""
    names = (f"retrieve_results_dl{yy}.json", f"trec_results_dl{yy}.txt", f"qrels.dl{yy}-passage.txt", topics)
    urls = (_RANK_LLM_RAW + names[0], _RANK_LLM_RAW + names[1], _TOOLS_RAW + "qrels/" + names[2],
            _TOOLS_RAW + "topics/" + names[3])
    return {role: PinnedFile(name, url, size, sha) for role, name, url, size, sha
            in zip(("candidates", "bm25", "qrels", "topics"), names, urls, sizes, sha256)}


FILES: dict[int, dict[str, PinnedFile]] = {
    2019: _year("19", "topics.dl19-passage.txt", (2306085, 190529, 187092, 1764), (
        "4f3e4aba8bb68c1b38405da010f44537f31d3b5fff7088ef97c03caed1076674",
        "cbada2e4f710f8cafb8f1fd54e2289011b3273cdc044adb2380af21f63a6c861",
        "8a1f10d550732e4cd91d7fc49846a3784de4040972f583e69285a88f3c5fee92",
        "518992da259fb61f64e4790791df91a7b42ea5773f374aed59220ebb51d58d90")),
    2020: _year("20", "topics.dl20.txt", (2912805, 240316, 218617, 8394), (
        "68b0ea4515ea022de921d54d5a53b4e93ed2f2993d350323c3173e47f3cea9f0",
        "fba5d55aa8335bd1c74f7860dee354e69986b627c640b34ba47e084e311c24d2",
        "60d4c34561f9687f8f73e0a752ba80ab80159b3e9c1bedd0a351f747ed6f5684",
        "726cb4018b85a335fcbe09004df7f084ec1bf20531961d9af7b0c71dd609e69b")),
}
YEARS = tuple(FILES)
#: the runs a spec can name as ``first_stage = { run = "dataset:NAME" }``
RUNS = {"bm25": "bm25", "bm25-candidates": "candidates"}
LABEL_NAMES = {0: "irrelevant", 1: "related", 2: "highly relevant", 3: "perfectly relevant"}
OPTIONS = ("name", "year")


class TrecDLDataset(Dataset):
    """One TREC DL year: the candidate passages, the judged queries, NIST's qrels (see the module docstring)."""

    text_kind = "passage"
    prompt_fields = ("text",)

    def __init__(self, year: int):
        self.year = year
        super().__init__(name="trec-dl", fields=("text",), rel_threshold=2, labels=(0, 1, 2, 3),
                         label_names=LABEL_NAMES, options={"year": year})
        self._candidates: list | None = None

    def _file(self, role: str) -> Path:
        return fetch(FILES[self.year][role], FOLDER)

    def _entries(self) -> list:
        if self._candidates is None:
            path = self._file("candidates")
            try:
                self._candidates = json.loads(path.read_text(encoding="utf-8"))
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                raise DataError(f"{path}: not the pinned candidates file ({exc}); delete it to fetch it again") \
                    from None
        return self._candidates

    def _load_docs(self) -> Iterator[dict]:
        seen: dict[str, str] = {}
        for entry in self._entries():
            for hit in entry["hits"]:
                docno, text = str(hit["docid"]), " ".join(str(hit["content"]).split())
                if docno in seen:
                    if seen[docno] != text:
                        raise DataError(f"{self._file('candidates')}: passage {docno!r} has two different texts")
                    continue
                seen[docno] = text
                yield {"docno": docno, "text": text}

    def _load_topics(self) -> pd.DataFrame:
        path = self._file("topics")
        rows = []
        with open(path, encoding="utf-8") as handle:
            for number, line in enumerate(handle, 1):
                qid, sep, text = line.rstrip("\n").partition("\t")
                if not line.strip():
                    continue
                if not sep:
                    raise DataError(f"{path}:{number}: expected `qid<TAB>query`; delete the file to fetch it again")
                rows.append((qid.strip(), text.strip()))
        topics = pd.DataFrame(rows, columns=["qid", "query"])
        candidates = {}
        for entry in self._entries():
            if entry["hits"]:
                candidates.setdefault(str(entry["hits"][0]["qid"]), str(entry["query"]).strip())
        topics = topics[topics["qid"].isin(set(candidates))].reset_index(drop=True)
        missing = sorted(set(candidates) - set(topics["qid"]))
        if missing:
            raise DataError(f"{path}: no topic for the candidates' queries {missing[:5]}")
        differ = [q for q, t in zip(topics["qid"], topics["query"]) if candidates[q] != t]
        if differ:
            raise DataError(f"{self._file('candidates')}: query text differs from {path.name} for qids {differ[:5]}")
        self._counts["topics_without_candidates"] = len(rows) - len(topics)
        return topics

    def _load_qrels(self) -> pd.DataFrame:
        qrels = read_trec_qrels(self._file("qrels"))
        return qrels

    def run_file(self, name: str, path: str = "first_stage.run") -> Path:
        """The local, verified path of a run the data set provides (``bm25``: the TREC run file;
        ``bm25-candidates``: rank_llm's JSON with the same ranking)."""
        if name not in RUNS:
            raise SpecError(path, f"data set 'trec-dl' provides the runs {sorted(RUNS)}, not {name!r}")
        return self._file(RUNS[name])

    def _source(self) -> dict:
        files = []
        for role, pinned in FILES[self.year].items():
            files.append({"name": pinned.name, "role": role, "url": pinned.url, "bytes": pinned.size,
                          "sha256": pinned.sha256})
        return {"source": f"TREC DL {self.year} passages, rank_llm BM25 top 100 (rank_llm@{RANK_LLM[:12]}, "
                          f"anserini-tools@{ANSERINI_TOOLS[:12]})", "files": files}


def load(config: Mapping[str, Any], path: str = "dataset") -> TrecDLDataset:
    check_options(config, OPTIONS, path)
    year = config.get("year")
    if year not in YEARS or isinstance(year, bool):
        raise SpecError(f"{path}.year", f"expected one of {list(YEARS)} (TREC DL 2019 or 2020), got {year!r}")
    return TrecDLDataset(int(year))
