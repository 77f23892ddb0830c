"""Amazon Shopping Queries (ESCI), from a user-provided copy of github.com/amazon-science/esci-data (Apache-2.0).

Files (folder ``path``, default ``superb.paths.data_dir()/esci``): shopping_queries_dataset_examples.parquet and
shopping_queries_dataset_products.parquet (the repository's shopping_queries_dataset/ folder; fetch them with
``git lfs`` from that repository).

- Rows are filtered by ``locale`` (us | es | jp), ``split`` (train | test | all) and ``small_version`` (the reduced
  "task 1" query set when true).
- qid: ESCI's own query_id, as text.
- labels: E (exact) 3, S (substitute) 2, C (complement) 1, I (irrelevant) 0; ``rel_threshold = 3`` (only exact
  matches count as relevant for P@k, as in the ESCI paper; set ``evaluation.rel = 2`` to count substitutes).
- corpus: ``"judged"`` (default: the products judged for the selected queries, the usual re-ranking setup) or
  ``"locale"`` (every product of the locale).
- fields: title, description, bullets, brand, color (from product_title, product_description,
  product_bullet_point, product_brand, product_color); text: title, description, bullets, brand, color lines.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from superb import paths
from superb.data.base import Dataset, as_str, check_options, compose_text, file_record, require_file
from superb.errors import DataError, SpecError

EXAMPLES = "shopping_queries_dataset_examples.parquet"
PRODUCTS = "shopping_queries_dataset_products.parquet"
HOW = ("Get it from github.com/amazon-science/esci-data (folder shopping_queries_dataset/, stored with git lfs: "
       "`git clone https://github.com/amazon-science/esci-data && cd esci-data && git lfs pull`) and set the "
       "data set option `path` to that folder.")
FIELDS = ("title", "description", "bullets", "brand", "color")
LABELS = {"E": 3, "S": 2, "C": 1, "I": 0}
LABEL_NAMES = {3: "exact", 2: "substitute", 1: "complement", 0: "irrelevant"}
OPTIONS = ("name", "path", "locale", "split", "small_version", "corpus")
_SOURCE_COLUMNS = {"product_title": "title", "product_description": "description",
                   "product_bullet_point": "bullets", "product_brand": "brand", "product_color": "color"}


def _choice(config: Mapping[str, Any], key: str, allowed: tuple, default: Any, path: str) -> Any:
    value = config.get(key, default)
    if value not in allowed:
        raise SpecError(f"{path}.{key}", f"got {value!r}; allowed values: {list(allowed)}")
    return value


class EsciDataset(Dataset):
    location_options = ("path",)

    def __init__(self, examples_file: Path, products_file: Path, *, locale: str, split: str, small_version: bool,
                 corpus: str,
                 options: Mapping[str, Any]):
        super().__init__(name="esci", fields=FIELDS, rel_threshold=3, labels=(0, 1, 2, 3),
                         label_names=LABEL_NAMES, options=options)
        self.examples_file, self.products_file = examples_file, products_file
        self.locale, self.split, self.small_version, self.corpus = locale, split, small_version, corpus
        self._examples: pd.DataFrame | None = None

    def examples(self) -> pd.DataFrame:
        if self._examples is None:
            filters = [("product_locale", "==", self.locale)]
            if self.split != "all":
                filters.append(("split", "==", self.split))
            if self.small_version:
                filters.append(("small_version", "==", 1))
            columns = ["query_id", "query", "product_id", "esci_label"]
            try:
                frame = pd.read_parquet(self.examples_file, columns=columns, filters=filters)
            except (KeyError, ValueError) as exc:  # pyarrow reports a missing column as one of these
                raise DataError(f"{self.examples_file}: cannot read columns {columns} + product_locale, split, "
                                f"small_version ({exc}). Is it the ESCI examples file? {HOW}") from exc
            if frame.empty:
                raise DataError(self._no_rows(filters))
            unknown = set(frame["esci_label"]) - set(LABELS)
            if unknown:
                raise DataError(f"{self.examples_file}: esci_label values {sorted(unknown)} are not one of {list(LABELS)}")
            self._examples = frame
        return self._examples

    def _no_rows(self, filters: list) -> str:
        """The error for filters that leave no example: how many rows each one keeps alone, so the one to change
        shows (an empty selection would otherwise surface later as "unknown qids ... valid ones look like []")."""
        names = {"product_locale": "locale", "split": "split", "small_version": "small_version"}
        said = {"locale": repr(self.locale), "split": repr(self.split), "small_version": str(self.small_version).lower()}
        try:
            frame = pd.read_parquet(self.examples_file, columns=[c for c, _, _ in filters])
            alone = [f"{names[c]} = {said[names[c]]}: {int((frame[c] == v).sum())} of {len(frame)} rows"
                     for c, _, v in filters]
        except (KeyError, ValueError, OSError):
            alone = []
        chosen = ", ".join(f"{names[c]} = {said[names[c]]}" for c, _, _ in filters)
        return (f"{self.examples_file}: no example row matches the data set options {chosen}"
                + (f" (each alone keeps: {'; '.join(alone)})" if alone else "")
                + ". Change [dataset] locale, split or small_version (split = \"all\" and small_version = false "
                  "keep every row of the locale)")

    def _load_docs(self) -> Iterator[dict]:
        wanted = sorted(set(self.examples()["product_id"])) if self.corpus == "judged" else None
        return read_products(self.products_file, self.locale, wanted)

    def _load_topics(self) -> pd.DataFrame:
        frame = self.examples()[["query_id", "query"]].drop_duplicates("query_id")
        return pd.DataFrame({"qid": frame["query_id"].astype(str), "query": frame["query"]})

    def _load_qrels(self) -> pd.DataFrame:
        frame = self.examples()
        return pd.DataFrame({"qid": frame["query_id"].astype(str), "docno": frame["product_id"].astype(str),
                             "label": frame["esci_label"].map(LABELS)})

    def _source(self) -> dict:
        return {"source": "github.com/amazon-science/esci-data (Apache-2.0), user-provided copy",
                "files": [file_record(self.examples_file), file_record(self.products_file)]}


def read_products(file: Path, locale: str, product_ids: list[str] | None = None) -> Iterator[dict]:
    """Documents from an ESCI products parquet: one locale, optionally only ``product_ids``."""
    filters: list = [("product_locale", "==", locale)]
    if product_ids is not None:
        filters.append(("product_id", "in", product_ids))
    try:
        frame = pd.read_parquet(file, columns=["product_id", *_SOURCE_COLUMNS], filters=filters)
    except (KeyError, ValueError) as exc:  # pyarrow reports a missing column as one of these
        raise DataError(f"{file}: cannot read columns product_id, product_locale, {', '.join(_SOURCE_COLUMNS)} "
                        f"({exc}). Is it the ESCI products file? {HOW}") from exc
    frame = frame.rename(columns=_SOURCE_COLUMNS)
    for row in frame.itertuples(index=False):
        doc = {"docno": str(row.product_id), **{f: as_str(getattr(row, f)) for f in FIELDS}}
        doc["text"] = compose_text(doc["title"], doc["description"], doc["bullets"],
                                   doc["brand"] and f"Brand: {doc['brand']}", doc["color"] and f"Color: {doc['color']}")
        yield doc


def load(config: Mapping[str, Any], path: str = "dataset") -> EsciDataset:
    check_options(config, OPTIONS, path)
    folder = Path(config.get("path") or paths.data_dir() / "esci").expanduser()
    if not folder.is_dir():
        raise DataError(f"ESCI folder not found: {folder} (from {path}.path). {HOW}")
    small = config.get("small_version", True)
    if not isinstance(small, bool):
        raise SpecError(f"{path}.small_version", f"expected true or false, got {small!r}")
    return EsciDataset(
        require_file(folder / EXAMPLES, path, "path", HOW),
        require_file(folder / PRODUCTS, path, "path", HOW),
        locale=_choice(config, "locale", ("us", "es", "jp"), "us", path),
        split=_choice(config, "split", ("test", "train", "all"), "test", path),
        small_version=small,
        corpus=_choice(config, "corpus", ("judged", "locale"), "judged", path),
        options={k: v for k, v in config.items() if k != "name"},
    )
