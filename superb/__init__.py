"""superb: PyTerrier experiments for LLM reranking and LLM relevance judging in product search.

Importing the package is cheap: heavy backends (Java/Terrier, PISA, ir_datasets, xllamacpp, openai) load on first
use, and importing one layer (e.g. ``superb.llm``) does not load the others. ``import superb.data`` registers the
project's data sets with ir_datasets, so that ``pt.get_dataset("irds:superb/chorus")`` works.
"""

__version__ = "0.1.0"

from superb.errors import DataError, LLMError, SpecError, SuperbError  # noqa: E402,F401
