"""What superb's tests and benchmarks share: the deterministic fake OpenAI-compatible server (fakeserver), which
answers from a responder function and injects scripted faults, so parsing, retries and failures are tested without
a model. Imported by tests/ and bench/ alike (bench no longer reaches into tests/)."""
