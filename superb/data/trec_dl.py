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
- ``first_stages = ["bm25_rm3", "splade_pp_ed", "tasb", "ada2"]`` (or ``"all"``): rank_llm's top 100 of four more
  retrievers over the same judged queries (superb.data.trec_dl_files). Their passages join the documents (the union
  of every loaded top 100: DL19 10,852 passages, DL20 14,091), so a judge finds text for more judged pairs (DL19
  3,831 of 9,260, DL20 4,999 of 11,386), and each is a run: ``first_stage = { run = "dataset:tasb" }``.

Credit: MS MARCO (non-commercial research terms), TREC DL (NIST), rank_llm (Apache-2.0).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from superb.data.base import Dataset, check_options
from superb.data.fetch import fetch
from superb.data.local import read_trec_qrels
from superb.data.trec_dl_files import (ANSERINI_TOOLS, FILES, FIRST_STAGES, RANK_LLM, RANK_LLM_FIRST_STAGES,
                                       first_stage_files)
from superb.errors import DataError, SpecError
from superb.trec.run_files import rank_llm_entries

FOLDER = "trec-dl"  # sub-folder of the data dir and of SUPERB_DATA_MIRROR
YEARS = tuple(FILES)
#: the runs a spec can name as ``first_stage = { run = "dataset:NAME" }`` (plus the loaded first stages' short names)
RUNS = {"bm25": "bm25", "bm25-candidates": "candidates"}
LABEL_NAMES = {0: "irrelevant", 1: "related", 2: "highly relevant", 3: "perfectly relevant"}
OPTIONS = ("name", "year", "first_stages")


class TrecDLDataset(Dataset):
    """One TREC DL year: the candidate passages, the judged queries, NIST's qrels (see the module docstring)."""

    text_kind = "passage"
    prompt_fields = ("text",)

    def __init__(self, year: int, first_stages: tuple[str, ...] = ()):
        self.year = year
        self.first_stages = tuple(first_stages)
        options: dict[str, Any] = {"year": year}
        if self.first_stages:
            options["first_stages"] = list(self.first_stages)
        super().__init__(name="trec-dl", fields=("text",), rel_threshold=2, labels=(0, 1, 2, 3),
                         label_names=LABEL_NAMES, options=options)
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
        """BM25's candidate passages, then those of each loaded first stage not seen yet: one document per passage,
        whichever files hold it (a passage given two different texts is a DataError naming both files)."""
        seen: dict[str, tuple[str, Path]] = {}
        sources = [(self._file("candidates"), self._entries())]
        for name in self.first_stages:
            path = fetch(first_stage_files(name, self.year)["candidates"], FOLDER)
            sources.append((path, rank_llm_entries(path)))
        for path, entries in sources:
            for entry in entries:
                for hit in entry["hits"]:
                    docno, text = str(hit["docid"]), " ".join(str(hit["content"]).split())
                    if docno in seen:
                        if seen[docno][0] != text:
                            raise DataError(f"passage {docno!r} has one text in {seen[docno][1]} and another in "
                                            f"{path}")
                        continue
                    seen[docno] = (text, path)
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

    def run_names(self) -> list[str]:
        """The runs this data set provides (``dataset:NAME``): BM25's, and each loaded first stage's."""
        return [*RUNS, *self.first_stages]

    def run_file(self, name: str, path: str = "first_stage.run") -> Path:
        """The local, verified path of a run the data set provides (``bm25``: the TREC run file;
        ``bm25-candidates``: rank_llm's JSON with the same ranking; a loaded first stage's short name: its TREC run
        file)."""
        if name in RUNS:
            return self._file(RUNS[name])
        if name in self.first_stages:
            return fetch(first_stage_files(name, self.year)["run"], FOLDER)
        more = "" if self.first_stages else (f"; the first stages {sorted(FIRST_STAGES)} become runs too when "
                                             "[dataset] first_stages names them")
        raise SpecError(path, f"data set 'trec-dl' provides the runs {self.run_names()}, not {name!r}{more}")

    def _source(self) -> dict:
        files = []
        for role, pinned in FILES[self.year].items():
            files.append({"name": pinned.name, "role": role, "url": pinned.url, "bytes": pinned.size,
                          "sha256": pinned.sha256})
        source = (f"TREC DL {self.year} passages, rank_llm BM25 top 100 (rank_llm@{RANK_LLM[:12]}, "
                  f"anserini-tools@{ANSERINI_TOOLS[:12]})")
        for name in self.first_stages:
            for role, pinned in first_stage_files(name, self.year).items():
                files.append({"name": pinned.name, "role": f"{name} {role}", "url": pinned.url, "bytes": pinned.size,
                              "sha256": pinned.sha256})
        if self.first_stages:
            source += (f", plus the top 100 of {', '.join(FIRST_STAGES[n][1] for n in self.first_stages)} "
                       f"(rank_llm@{RANK_LLM_FIRST_STAGES[:12]})")
        return {"source": source, "files": files}


def load(config: Mapping[str, Any], path: str = "dataset") -> TrecDLDataset:
    check_options(config, OPTIONS, path)
    year = config.get("year")
    if year not in YEARS or isinstance(year, bool):
        raise SpecError(f"{path}.year", f"expected one of {list(YEARS)} (TREC DL 2019 or 2020), got {year!r}")
    return TrecDLDataset(int(year), first_stages(config.get("first_stages"), f"{path}.first_stages"))


def first_stages(value: Any, path: str) -> tuple[str, ...]:
    """``first_stages``: "all", or a list of short names of FIRST_STAGES (each once), or nothing."""
    if value is None:
        return ()
    if value == "all":
        return tuple(FIRST_STAGES)
    if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
        raise SpecError(path, f"expected \"all\" or a list of names of {sorted(FIRST_STAGES)}, got {value!r}")
    unknown = [x for x in value if x not in FIRST_STAGES]
    if unknown or len(set(value)) != len(value):
        raise SpecError(path, f"{unknown or value} : give each of {sorted(FIRST_STAGES)} at most once "
                              "(or \"all\")")
    return tuple(value)
