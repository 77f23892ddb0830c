"""WANDS, the Wayfair ANnotation DataSet, from a user-provided copy of github.com/wayfair/WANDS (MIT).

Files (folder ``path``, default ``superb.paths.data_dir()/wands``): product.csv, query.csv, label.csv from the
repository's dataset/ folder; all three are tab-separated despite the extension.

- qid: WANDS' query_id, as text. Corpus: every product in product.csv (42,994 in the release).
- labels: Exact 2, Partial 1, Irrelevant 0; ``rel_threshold = 2`` (only exact matches count for P@k).
- fields: title (product_name), class (product_class), category (category hierarchy, "a / b / c"), description
  (product_description), features (product_features, "key:value|..." rendered as "key: value" lines);
  text: title, class, category, description, features.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from superb import paths
from superb.data.base import Dataset, as_str, check_options, compose_text, file_record, require_file
from superb.errors import DataError, utf8_error

HOW = ("Get it from github.com/wayfair/WANDS (folder dataset/: product.csv, query.csv, label.csv) and set the data "
       "set option `path` to that folder.")
FIELDS = ("title", "class", "category", "description", "features")
LABELS = {"Exact": 2, "Partial": 1, "Irrelevant": 0}
LABEL_NAMES = {2: "exact", 1: "partial", 0: "irrelevant"}
OPTIONS = ("name", "path")
_COLUMNS = {
    "product.csv": ("product_id", "product_name", "product_class", "category hierarchy", "product_description",
                    "product_features"),
    "query.csv": ("query_id", "query"),
    "label.csv": ("query_id", "product_id", "label"),
}


def _features(raw: str) -> str:
    lines = []
    for item in raw.split("|"):
        key, sep, value = item.partition(":")
        if item.strip():
            lines.append(f"{key.strip()}: {value.strip()}" if sep else item.strip())
    return "\n".join(lines)


class WandsDataset(Dataset):
    location_options = ("path",)

    def __init__(self, files: Mapping[str, Path], options: Mapping[str, Any]):
        super().__init__(name="wands", fields=FIELDS, rel_threshold=2, labels=(0, 1, 2),
                         label_names=LABEL_NAMES, options=options)
        self.files = dict(files)

    def _read(self, name: str) -> pd.DataFrame:
        file = self.files[name]
        try:
            frame = pd.read_csv(file, sep="\t", dtype=str, keep_default_na=False, encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise utf8_error(file, exc) from None
        except pd.errors.ParserError as exc:  # names the line: "Expected 6 fields in line 12, saw 7"
            raise DataError(f"{file}: not a tab-separated table ({exc}). {HOW}") from None
        missing = [c for c in _COLUMNS[name] if c not in frame.columns]
        if missing:
            raise DataError(f"{file}: missing columns {missing} (found {list(frame.columns)}); WANDS files are "
                            f"tab-separated with a header row. {HOW}")
        return frame

    def _load_docs(self) -> Iterator[dict]:
        frame = self._read("product.csv").rename(columns={"category hierarchy": "category_hierarchy"})
        for row in frame.itertuples(index=False):
            doc = {
                "docno": row.product_id.strip(),
                "title": as_str(row.product_name),
                "class": as_str(row.product_class),
                "category": as_str(row.category_hierarchy),
                "description": as_str(row.product_description),
                "features": _features(row.product_features),
            }
            doc["text"] = compose_text(doc["title"], doc["class"], doc["category"], doc["description"],
                                       doc["features"])
            yield doc

    def _load_topics(self) -> pd.DataFrame:
        frame = self._read("query.csv")
        return pd.DataFrame({"qid": frame["query_id"].str.strip(), "query": frame["query"]})

    def _load_qrels(self) -> pd.DataFrame:
        frame = self._read("label.csv")
        unknown = set(frame["label"]) - set(LABELS)
        if unknown:
            raise DataError(f"{self.files['label.csv']}: label values {sorted(unknown)} are not one of {list(LABELS)}")
        return pd.DataFrame({"qid": frame["query_id"].str.strip(), "docno": frame["product_id"].str.strip(),
                             "label": frame["label"].map(LABELS)})

    def _source(self) -> dict:
        return {"source": "github.com/wayfair/WANDS (MIT), user-provided copy",
                "files": [file_record(f) for f in self.files.values()]}


def load(config: Mapping[str, Any], path: str = "dataset") -> WandsDataset:
    check_options(config, OPTIONS, path)
    folder = Path(config.get("path") or paths.data_dir() / "wands").expanduser()
    if not folder.is_dir():
        raise DataError(f"WANDS folder not found: {folder} (from {path}.path). {HOW}")
    files = {name: require_file(folder / name, path, "path", HOW) for name in _COLUMNS}
    return WandsDataset(files, {k: v for k, v in config.items() if k != "name"})
