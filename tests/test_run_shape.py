"""The shape of one `superb run` (issue 50.6): it parses its spec's measures once, when the spec is read (so a typo
fails before any work; the data set's binary threshold, known only after loading, is applied to the parsed measures
without parsing again), and builds each stage once. The free preflight runs on stages built for it alone: superb's
own stages keep what the answers gave them (the deliberated reranker's query attributes, an expansion's texts, the
setwise and pairwise comparison memos), so a stage the preflight fed placeholder answers never reaches the paid run.
End to end: a local data set, a real PISA first stage, a pointwise reranker on the fake OpenAI server."""

from __future__ import annotations

from collections import Counter

import pytest

import superb.eval.measures as measures_module
import superb.pipelines.systems as systems_module
from local_data import data  # noqa: F401 (a fixture)
from spec_helpers import write_spec
from superb.cli import main
from superb.errors import SpecError
from superb.eval.measures import read_measures
from superb.testing.fakeserver import FakeServer, yes


def test_a_run_parses_each_measure_of_its_spec_once(data, monkeypatch):
    read = Counter()
    real = measures_module._read_measure

    def counting(name, path):
        read[(name, path)] += 1
        return real(name, path)

    monkeypatch.setattr(measures_module, "_read_measure", counting)
    with FakeServer(responder=yes) as srv:
        spec = write_spec(data, name="parsed-once", evaluation={"measures": ["P@2", "nDCG@3", "AP"]},
                          llm={"model": "fake-model", "base_urls": [srv.base_url], "cache": "off"})
        assert main(["run", str(spec), "--out", str(data / "out")]) == 0
    spec_reads = {k: v for k, v in read.items() if k[1].startswith("evaluation.measures[")}
    assert spec_reads == {("P@2", "evaluation.measures[0]"): 1, ("nDCG@3", "evaluation.measures[1]"): 1,
                          ("AP", "evaluation.measures[2]"): 1}
    assert "| Comparison | kind | P@2 | nDCG@3 | AP |" in (data / "out" / "table.md").read_text()


def test_the_threshold_is_applied_to_the_parsed_measures_without_parsing_again(monkeypatch):
    parsed = read_measures(["P@5", "P(rel=1)@10", "nDCG@10"])
    monkeypatch.setattr(measures_module, "_read_measure", lambda *a: pytest.fail("parsed again"))
    assert [repr(m) for m in parsed.at(2)] == ["P(rel=2)@5", "P@10", "nDCG@10"]  # rel=1 was written: kept
    assert [repr(m) for m in parsed.at(None)] == ["P@5", "P@10", "nDCG@10"]


def test_two_names_that_become_one_measure_at_the_threshold_are_named():
    parsed = read_measures(["P@5", "P(rel=2)@5"])
    with pytest.raises(SpecError) as err:
        parsed.at(2)
    assert err.value.path == "evaluation.measures[1]" and "listed twice" in str(err.value)


def _count_builds(monkeypatch) -> Counter:
    built = Counter()
    first_stage, reranker = systems_module.from_spec, systems_module.build_reranker

    def first(options, dataset, path):
        built[path] += 1
        return first_stage(options, dataset, path=path)

    def rerank(options, context, path):
        stage = reranker(options, context=context, path=path)
        built[path] += 1
        return stage

    monkeypatch.setattr(systems_module, "from_spec", first)
    monkeypatch.setattr(systems_module, "build_reranker", rerank)
    return built


@pytest.mark.parametrize("options, builds", [(["--no-preflight"], 1), (["--dry-run"], 1), ([], 2)])
def test_each_stage_is_built_once_per_run_and_the_preflight_builds_its_own(data, monkeypatch, options, builds):
    built = _count_builds(monkeypatch)
    with FakeServer(responder=yes) as srv:
        spec = write_spec(data, name="built-once", llm={"model": "fake-model", "base_urls": [srv.base_url],
                                                        "cache": "off"})
        assert main(["run", str(spec), "--out", str(data / "out")] + options) == 0
        asked = srv.requests
    assert dict(built) == {"pipelines[0].first_stage": builds, "pipelines[1].rerank[0]": builds}
    assert asked == (0 if "--dry-run" in options else 5)  # the preflight's copy asked nothing
