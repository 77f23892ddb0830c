"""superb: PyTerrier experiments for LLM reranking and LLM relevance judging in product search.

Importing the package is cheap: heavy backends (Java/Terrier, PISA, xllamacpp, openai) load on first use.
Importing it also registers the project's data sets with ir_datasets, so that
``pt.get_dataset("irds:superb/chorus")`` works.
"""

__version__ = "0.1.0"

from superb.errors import DataError, LLMError, SpecError, SuperbError  # noqa: E402,F401
from superb.data.registry import register_all as _register_all  # noqa: E402

_register_all()
