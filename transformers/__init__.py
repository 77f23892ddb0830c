"""LLM rerankers and controls as PyTerrier transformers (installed as ``superb.transformers``)."""
