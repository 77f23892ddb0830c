"""Moving LLM work off the live path: batch files (export, import, submit) and shipped responses (replay).

The LLM-layer parts live in superb/llm/ (batch.py, batch_results.py, batch_api.py, ship.py); this package runs a
spec through them (collect.py), drives rounds of the Batch API (submit.py) and registers the commands (cli.py).
"""
