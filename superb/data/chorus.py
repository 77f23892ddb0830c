"""Chorus Icecat electronics (github.com/querqy/chorus, Apache-2.0; product data by Icecat, Open Content licence).

19,406 Icecat products, 135 head queries, 3,668 graded judgments (0..3), and 3,188 of those pairs rated by three
human annotators each. Files are pinned to one upstream commit and sha256-checked (superb.data.fetch).

Choices made here (documented in the README's data section):
- qid: "q" + 3-digit position of the query text in the sorted list of the 135 distinct queries (q001 "aa" ...
  q135); the text itself is in ``query``. Stable because the file is pinned.
- labels: 0 irrelevant, 1 fair, 2 good, 3 perfect; ``rel_threshold = 2`` (good or perfect counts as relevant for
  P@k; binary measures treat 0/1 as not relevant).
- fields: title, name (model code), supplier, description (Icecat short_description; "" for 721 products without
  one), attributes, price (the integer upstream stores, as text). ``attributes`` renders every attr_t_* (text),
  attr_n_* (number) and attr_b_* (yes/no) field as a "Name: value" line, e.g. attr_t_product_colour -> "Product
  colour: Silver", attr_t_contrast_ratio__typical_ -> "Contrast ratio (typical): 200:1", in upstream order.
- text (the default): title, description and attributes, one per line.
"""

from __future__ import annotations

import json
import re
import zipfile
from collections.abc import Iterator, Mapping
from typing import Any

import pandas as pd

from superb.data.base import Dataset, as_str, check_options, compose_text, sorted_query_ids
from superb.data.fetch import PinnedFile, fetch
from superb.errors import DataError

COMMIT = "96edf8b536e521be06cab910e0f6a9b25e3016fc"
FOLDER = "chorus-icecat"  # sub-folder of the data dir and of SUPERB_DATA_MIRROR
_RAW = f"https://raw.githubusercontent.com/querqy/chorus/{COMMIT}/"


def _pin(name: str, upstream: str, size: int, sha256: str) -> PinnedFile:
    return PinnedFile(name=name, url=_RAW + upstream, size=size, sha256=sha256)


_DATA = "data-encoder/ecommerce/vectors/data/"
PRODUCT_FILES = (
    _pin("1.json.zip", _DATA + "1.json.zip", 1558268, "15b622a11a6267aa0c450919a84b0fc41d7748db552f4c9c0e04167bbc7c38cb"),
    _pin("2.json.zip", _DATA + "2.json.zip", 1643302, "17d95160289440d03ca50af65c1363d9edd1d5e82678ddb874b27aeac1f87c33"),
    _pin("3.json.zip", _DATA + "3.json.zip", 1662955, "d4d088908fa648da7e79682872a77771ba42f065b253c4fb0f333e630d94f45a"),
    _pin("4.json.zip", _DATA + "4.json.zip", 1422844, "533329e5173eac349ce61512fc86a352d5f6651e31694e03aa6e8428cbeaf3c0"),
)
RATED_FILE = _pin("Broad_Query_Set_rated.csv", "katas/Broad_Query_Set_rated.csv", 75875,
                  "065b79c6c19b9ea8fa2dc2b0b8dae3f40c6389454a1f26aac3d3f8a7d43731b2")
RATINGS_FILE = _pin("Broad_Query_Set_individual_ratings.csv", "katas/Broad_Query_Set_individual_ratings.csv", 182092,
                    "cdaaa60503c87450730ad86b614fcd0026cdd6069ac1b7a5189b1b44ca785e30")
ALL_FILES = (*PRODUCT_FILES, RATED_FILE, RATINGS_FILE)

FIELDS = ("title", "name", "supplier", "description", "attributes", "price")
LABEL_NAMES = {0: "irrelevant", 1: "fair", 2: "good", 3: "perfect"}
OPTIONS = ("name",)

_ATTR = re.compile(r"^attr_([tnb])_(.+)$")
_TRAILING_PAREN = re.compile(r"__((?:(?!__)[a-z0-9_])+)_$")


def readable_attribute(key: str) -> str:
    """attr_t_product_colour -> "Product colour"; a trailing "__x_y_" (upstream's "(x y)") becomes " (x y)"."""
    match = _ATTR.match(key)
    name = match.group(2) if match else key
    name = _TRAILING_PAREN.sub(lambda m: " (" + m.group(1).replace("_", " ") + ")", name)
    name = re.sub(r"_+", " ", name).strip()
    return name[:1].upper() + name[1:]


def _attribute_value(kind: str, value: Any) -> str:
    if kind == "b":
        return "Yes" if value else "No"
    if isinstance(value, list):
        return ", ".join(as_str(v) for v in value)
    return as_str(value)


def product_to_doc(product: Mapping[str, Any], names: dict[str, tuple[str, str] | None]) -> dict:
    """One upstream product dict -> superb document dict. ``names`` memoises attribute key -> (kind, label)."""
    lines = []
    for key, value in product.items():
        parsed = names.get(key, False)
        if parsed is False:
            match = _ATTR.match(key)
            parsed = names[key] = (match.group(1), readable_attribute(key)) if match else None
        if parsed is None or value is None or value == "":
            continue
        lines.append(f"{parsed[1]}: {_attribute_value(parsed[0], value)}")
    doc = {
        "docno": str(product["id"]),
        "title": as_str(product.get("title")),
        "name": as_str(product.get("name")),
        "supplier": as_str(product.get("supplier")),
        "description": as_str(product.get("short_description")),
        "attributes": "\n".join(lines),
        "price": as_str(product.get("price")),
    }
    doc["text"] = compose_text(doc["title"], doc["description"], doc["attributes"])
    return doc


class ChorusDataset(Dataset):
    irds_id = "superb/chorus"

    def __init__(self, options: Mapping[str, Any] | None = None):
        super().__init__(name="chorus", fields=FIELDS, rel_threshold=2, labels=(0, 1, 2, 3),
                         label_names=LABEL_NAMES, options=options)
        self._qid_of: dict[str, str] | None = None
        self._rated_frame: pd.DataFrame | None = None

    def _load_docs(self) -> Iterator[dict]:
        names: dict[str, tuple[str, str] | None] = {}
        no_description = 0
        for pinned in PRODUCT_FILES:
            with zipfile.ZipFile(fetch(pinned, FOLDER)) as archive:
                members = [m for m in archive.namelist() if m.endswith(".json")]
                for member in members:
                    for product in json.loads(archive.read(member)):
                        doc = product_to_doc(product, names)
                        no_description += doc["description"] == ""
                        yield doc
        self._counts["docs_without_description"] = no_description

    def _rated(self) -> pd.DataFrame:
        if self._rated_frame is None:
            frame = pd.read_csv(fetch(RATED_FILE, FOLDER), dtype={"query": str, "docid": str})
            self._qid_of = sorted_query_ids(frame["query"].str.strip())
            self._rated_frame = frame
        return self._rated_frame

    def _load_topics(self) -> pd.DataFrame:
        self._rated()
        return pd.DataFrame({"qid": list(self._qid_of.values()), "query": list(self._qid_of.keys())})

    def _load_qrels(self) -> pd.DataFrame:
        frame = self._rated()
        return pd.DataFrame({
            "qid": frame["query"].str.strip().map(self._qid_of),
            "docno": frame["docid"].str.strip(),
            "label": frame["rating"].astype(int),
        })

    def _load_ratings(self) -> pd.DataFrame:
        self._rated()
        frame = pd.read_csv(fetch(RATINGS_FILE, FOLDER), dtype={"query": str, "docid": str})
        unknown = set(frame["query"].str.strip()) - set(self._qid_of)
        if unknown:
            raise DataError(f"{RATINGS_FILE.name}: queries {sorted(unknown)[:5]} are not in {RATED_FILE.name}")
        return pd.DataFrame({
            "qid": frame["query"].str.strip().map(self._qid_of),
            "docno": frame["docid"].str.strip(),
            "rater_1": frame["agent_1_rating"].astype(int),
            "rater_2": frame["agent_2_rating"].astype(int),
            "rater_3": frame["agent_3_rating"].astype(int),
            "final": frame["final_rating"].astype(int),
        })

    def _source(self) -> dict:
        files = [{"name": p.name, "url": p.url, "bytes": p.size, "sha256": p.sha256} for p in ALL_FILES]
        return {"source": f"github.com/querqy/chorus@{COMMIT} (Apache-2.0); product data by Icecat (Open Content "
                          f"licence)", "files": files}


def load(config: Mapping[str, Any], path: str = "dataset") -> ChorusDataset:
    check_options(config, OPTIONS, path)
    return ChorusDataset({k: v for k, v in config.items() if k != "name"})
