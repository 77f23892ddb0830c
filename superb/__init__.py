"""superb: PyTerrier experiments for LLM reranking and LLM relevance judging in product search.

Importing the package is cheap: heavy backends (Java/Terrier, PISA, xllamacpp, openai) load on first use.
Importing it also registers the project's data sets with ir_datasets, so that
``pt.get_dataset("irds:superb/chorus")`` works.
"""

__version__ = "0.1.0"

from superb.errors import SuperbError, SpecError, DataError, LLMError  # noqa: E402,F401


def _register_datasets() -> None:
    try:
        from superb.data import registry
    except ImportError as exc:  # ir_datasets is a hard dependency; say so instead of failing later
        raise ImportError(f"superb needs ir_datasets ({exc}); install the project: pip install -e .") from exc
    registry.register_all()


try:
    _register_datasets()
except ModuleNotFoundError as _exc:  # the registry module is written by the data layer; absent only mid-development
    if _exc.name != "superb.data.registry":
        raise
