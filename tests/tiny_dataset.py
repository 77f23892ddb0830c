"""A real Dataset (base-class validation and all) over a handful of in-memory products, for the judge tests."""

from __future__ import annotations

from collections.abc import Iterator

import pandas as pd

from superb.data.base import Dataset


class TinyDataset(Dataset):
    """Products ``titles`` (docno -> title; the description is "about TITLE") and queries ``topics`` (qid -> text);
    labels 0-3 with relevance from 2, and no qrels."""

    def __init__(self, titles: dict[str, str], topics: dict[str, str]):
        super().__init__(name="tiny", fields=("title", "description"), rel_threshold=2, labels=(0, 1, 2, 3),
                         label_names={0: "no", 1: "rel", 2: "almost", 3: "best"})
        self.titles, self.topic_texts = titles, topics

    def _load_docs(self) -> Iterator[dict]:
        for docno, title in self.titles.items():
            yield {"docno": docno, "title": title, "description": f"about {title}", "text": title}

    def _load_topics(self) -> pd.DataFrame:
        return pd.DataFrame({"qid": list(self.topic_texts), "query": list(self.topic_texts.values())})

    def _load_qrels(self) -> pd.DataFrame:
        return pd.DataFrame({"qid": [], "docno": [], "label": []})

    def _source(self) -> dict:
        return {"source": "test", "files": []}
