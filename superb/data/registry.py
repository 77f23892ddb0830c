"""Registers superb's data sets with ir_datasets, so that after ``import superb.data``::

    pt.get_dataset("irds:superb/chorus")   # get_topics(), get_qrels(), get_corpus_iter(), text_loader()

Registration is cheap (no file is read until documents, queries or qrels are asked for) and idempotent. The
ir_datasets components are thin adapters over a :class:`superb.data.base.Dataset`, created on first use.
"""

# No ``from __future__ import annotations`` here: PyTerrier's text_loader reads ChorusDoc.__annotations__ and wants
# the real ``str`` type, not the string "str".
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from superb.data.base import Dataset


class ChorusDoc(NamedTuple):
    doc_id: str
    text: str
    title: str
    name: str
    supplier: str
    description: str
    attributes: str
    price: str

    def default_text(self) -> str:
        return self.text


class _Lazy:
    """Holds the factory of a Dataset and builds it once, on first access."""

    def __init__(self, factory: Callable[[], "Dataset"]):
        self._factory = factory
        self._dataset: "Dataset | None" = None

    def get(self) -> "Dataset":
        if self._dataset is None:
            self._dataset = self._factory()
        return self._dataset


class _DocStore:
    """The ir_datasets docstore protocol (get, get_many, get_many_iter) over Dataset.docs_store()."""

    def __init__(self, lazy: _Lazy, cls: type):
        self._lazy, self._cls = lazy, cls

    def _make(self, doc: dict):
        return self._cls(doc["docno"], *(doc[f] for f in self._cls._fields[1:]))

    def get(self, doc_id: str, field: str | None = None):
        doc = self._make(self._lazy.get().doc(doc_id))
        return doc if field is None else getattr(doc, field)

    def get_many_iter(self, doc_ids: Iterable[str]) -> Iterator:
        store = self._lazy.get().docs_store()
        for doc_id in doc_ids:
            if doc_id in store:
                yield self._make(store[doc_id])

    def get_many(self, doc_ids: Iterable[str], field: str | None = None) -> dict:
        docs = {d.doc_id: d for d in self.get_many_iter(doc_ids)}
        return docs if field is None else {k: getattr(v, field) for k, v in docs.items()}


def _components(lazy: _Lazy, docs_cls: type, lang: str | None):
    from ir_datasets.formats import BaseDocs, BaseQrels, BaseQueries, GenericQrel, GenericQuery

    class Docs(BaseDocs):
        def docs_iter(self):
            store = _DocStore(lazy, docs_cls)
            return (store._make(doc) for doc in lazy.get().docs_store().values())

        def docs_count(self):
            return len(lazy.get().docs_store())

        def docs_cls(self):
            return docs_cls

        def docs_store(self, field: str = "doc_id"):
            return _DocStore(lazy, docs_cls)

        def docs_namespace(self):
            return lazy.get().name

        def docs_lang(self):
            return lang

    class Queries(BaseQueries):
        def queries_iter(self):
            for row in lazy.get().topics().itertuples(index=False):
                yield GenericQuery(row.qid, row.query)

        def queries_cls(self):
            return GenericQuery

        def queries_lang(self):
            return lang

    class Qrels(BaseQrels):
        def qrels_iter(self):
            for row in lazy.get().qrels().itertuples(index=False):
                yield GenericQrel(row.qid, row.docno, int(row.label))

        def qrels_defs(self):
            return dict(lazy.get().label_names)

        def qrels_cls(self):
            return GenericQrel

    return Docs(), Queries(), Qrels()


def _chorus() -> "Dataset":
    from superb.data.chorus import ChorusDataset

    return ChorusDataset()


_REGISTRY = {"superb/chorus": (_chorus, ChorusDoc, "en")}


def register_all() -> None:
    """Register every superb data set with ir_datasets (a no-op for ids already registered)."""
    import ir_datasets
    from ir_datasets.datasets.base import Dataset as IrdsDataset

    for irds_id, (factory, docs_cls, lang) in _REGISTRY.items():
        if irds_id in ir_datasets.registry._registered:
            continue
        ir_datasets.registry.register(irds_id, IrdsDataset(*_components(_Lazy(factory), docs_cls, lang)))
