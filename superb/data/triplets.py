"""SUPERB-style (query, product, label) triplets over ESCI products, from user-provided files.

Options: ``triplets`` (a .csv, .tsv or .jsonl file with columns query, product_id, label), ``products`` (an ESCI
shopping_queries_dataset_products.parquet), ``locale`` (us | es | jp, default us).

- labels (the SUPERB scheme): 3 overall best, 2 almost best, 1 relevant but not the best, 0 not relevant;
  ``rel_threshold = 2`` (best or almost best counts for P@k).
- qid: "q" + zero-padded position of the query text among the sorted distinct queries of the file (stable for a
  given file); the text is in ``query``. A (query, product) pair given twice is a DataError.
- corpus: the triplets' products, with the ESCI fields (see superb.data.esci); products absent from the parquet
  are counted in ``stats["qrels_docno_not_in_corpus"]``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from superb.data import esci
from superb.data.base import Dataset, check_options, file_record, require_file, sorted_query_ids
from superb.errors import DataError, SpecError

HOW_TRIPLETS = ("Give a file of (query, product_id, label 0..3) rows - .csv, .tsv or .jsonl - as the data set option "
                "`triplets` (the SUPERB release, arXiv 2504.18748, or triplets you labelled yourself).")
LABEL_NAMES = {3: "overall best", 2: "almost best", 1: "relevant, not the best", 0: "not relevant"}
OPTIONS = ("name", "triplets", "products", "locale")
COLUMNS = ("query", "product_id", "label")


def read_triplets(file: Path) -> pd.DataFrame:
    suffix = file.suffix.lower()
    if suffix in (".jsonl", ".json"):
        frame = pd.read_json(file, lines=True, dtype={"product_id": str, "query": str})
    elif suffix in (".csv", ".tsv", ".txt"):
        frame = pd.read_csv(file, sep="\t" if suffix != ".csv" else ",", dtype={"product_id": str, "query": str},
                            keep_default_na=False)
    else:
        raise DataError(f"{file}: unknown triplets format {suffix!r}; use .csv, .tsv or .jsonl. {HOW_TRIPLETS}")
    missing = [c for c in COLUMNS if c not in frame.columns]
    if missing:
        raise DataError(f"{file}: missing columns {missing} (found {list(frame.columns)}). {HOW_TRIPLETS}")
    labels = pd.to_numeric(frame["label"], errors="coerce")
    bad = frame.loc[labels.isna() | ~labels.isin(LABEL_NAMES), "label"]
    if len(bad):
        raise DataError(f"{file}: {len(bad)} labels are not integers 0..3, e.g. {bad.iloc[0]!r} (row {bad.index[0]})")
    frame = pd.DataFrame({"query": frame["query"].astype(str).str.strip(),
                          "product_id": frame["product_id"].astype(str).str.strip(), "label": labels.astype(int)})
    dup = frame[frame.duplicated(["query", "product_id"], keep=False)]
    if len(dup):
        first = dup.iloc[0]
        raise DataError(f"{file}: {len(dup)} rows repeat a (query, product_id) pair, e.g. ({first['query']!r}, "
                        f"{first['product_id']!r}); keep one label per pair.")
    return frame


class TripletsDataset(Dataset):
    location_options = ("triplets", "products")

    def __init__(self, triplets_file: Path, products_file: Path, locale: str, options: Mapping[str, Any]):
        super().__init__(name="superb-triplets", fields=esci.FIELDS, rel_threshold=2, labels=(0, 1, 2, 3),
                         label_names=LABEL_NAMES, options=options)
        self.triplets_file, self.products_file, self.locale = triplets_file, products_file, locale
        self._frame: pd.DataFrame | None = None
        self._qid_of: dict[str, str] = {}

    def frame(self) -> pd.DataFrame:
        if self._frame is None:
            self._frame = read_triplets(self.triplets_file)
            self._qid_of = sorted_query_ids(self._frame["query"])
        return self._frame

    def _load_docs(self) -> Iterator[dict]:
        return esci.read_products(self.products_file, self.locale, sorted(set(self.frame()["product_id"])))

    def _load_topics(self) -> pd.DataFrame:
        self.frame()
        return pd.DataFrame({"qid": list(self._qid_of.values()), "query": list(self._qid_of.keys())})

    def _load_qrels(self) -> pd.DataFrame:
        frame = self.frame()
        return pd.DataFrame({"qid": frame["query"].map(self._qid_of), "docno": frame["product_id"],
                             "label": frame["label"]})

    def _source(self) -> dict:
        return {"source": "SUPERB-style triplets over Amazon ESCI products (user-provided)",
                "files": [file_record(self.triplets_file), file_record(self.products_file)]}


def load(config: Mapping[str, Any], path: str = "dataset") -> TripletsDataset:
    check_options(config, OPTIONS, path)
    locale = config.get("locale", "us")
    if locale not in ("us", "es", "jp"):
        raise SpecError(f"{path}.locale", f"got {locale!r}; allowed values: ['us', 'es', 'jp']")
    return TripletsDataset(
        require_file(config.get("triplets"), path, "triplets", HOW_TRIPLETS),
        require_file(config.get("products"), path, "products", esci.HOW.replace("`path` to that folder",
                                                                                 "`products` to its products parquet")),
        locale,
        {k: v for k, v in config.items() if k != "name"},
    )
