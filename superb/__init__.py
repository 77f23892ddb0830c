"""superb: PyTerrier experiments for LLM reranking and LLM relevance judging in product search.

Importing the package is cheap: heavy backends (Java/Terrier, PISA, ir_datasets, xllamacpp, openai) load on first
use, and importing one layer (e.g. ``superb.llm``) does not load the others. ``import superb.data`` registers the
project's data sets with ir_datasets, so that ``pt.get_dataset("irds:superb/chorus")`` works.

What a Python user composes, one attribute away and loaded on first use (``superb.load_dataset``,
``superb.first_stage``, ``superb.open_llm``, ``superb.LLMConfig``, ``superb.parse_measures``, ``superb.PairedTest``,
``superb.correct_experiment``); the rerankers and ``ProductText`` are in ``superb.transformers``.
"""

from importlib import import_module

__version__ = "0.1.0"

from superb.errors import DataError, LLMError, SpecError, SuperbError  # noqa: E402,F401

_API = {
    "load_dataset": "superb.data",
    "first_stage": "superb.pipelines",
    "open_llm": "superb.llm",
    "LLMConfig": "superb.llm",
    "parse_measures": "superb.eval",
    "PairedTest": "superb.eval",
    "correct_experiment": "superb.eval",
}


def __getattr__(name: str):
    if name in _API:
        value = getattr(import_module(_API[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'superb' has no attribute {name!r}")
