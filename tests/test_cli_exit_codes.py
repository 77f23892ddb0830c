"""`superb run` exit codes and stderr counts when LLM calls fail (issue 12.2), end to end: a local TREC-style data set,
a real PISA first stage, a pointwise reranker against the fake OpenAI server with scripted faults.

0 no failure (or within llm.max_failure_share); 3 results written but too many failed calls; 2 stopped early because
the endpoint refuses every call, with the server's own message. The counts are always on stderr.
"""

from __future__ import annotations

import math

import pytest

from superb.testing.fakeserver import FakeServer, Fault, Reply, yes
from local_data import data, dataset_table  # noqa: F401 (data: a fixture)
from spec_helpers import toml_lines, write_spec
from superb.cli import main
from superb.exit_codes import EXIT_LLM_FAILURES


def llm_settings(url: str, **llm) -> dict:
    return {"model": "fake-model", "base_urls": [url], "cache": "off", "concurrency": 1, "max_retries": 0,
            "backoff_s": 0.01, **llm}


def spec(folder, url: str, **llm) -> str:
    return str(write_spec(folder, name="exit_codes", llm=llm_settings(url, **llm)))


def run(folder, srv, capsys, **llm) -> tuple[int, str]:
    code = main(["run", spec(folder, srv.base_url, **llm), "--out", str(folder / "out")])
    return code, capsys.readouterr().err


def test_no_failure_exits_0_and_prints_the_counts(data, capsys):
    with FakeServer(responder=yes) as srv:
        code, err = run(data, srv, capsys)
        calls = srv.requests
    assert code == 0 and calls == 5  # top 3 of "running shoes" + the 2 products "mug" finds
    assert "superb: LLM requests: 5 (5 calls made, 0 from the cache), 0 failed" in err


def test_a_failed_call_exits_3_with_results_written(data, capsys):
    with FakeServer(responder=yes, faults=[None, Fault.error(500)]) as srv:
        code, err = run(data, srv, capsys)
    assert code == EXIT_LLM_FAILURES == 3
    assert "LLM requests: 5 (5 calls made, 0 from the cache), 1 failed" in err
    assert "1 of 5 LLM requests failed (20.0%), more than llm.max_failure_share = 0" in err and "Exit code 3" in err
    assert (data / "out" / "table.md").is_file()  # nothing is lost: the results are there, with the failure counted


def test_failures_within_max_failure_share_exit_0(data, capsys):
    with FakeServer(responder=yes, faults=[None, Fault.error(500)]) as srv:
        code, err = run(data, srv, capsys, max_failure_share=0.25)
    assert code == 0 and "1 failed" in err and "Exit code" not in err


def test_a_400_on_the_first_call_stops_the_run_with_the_servers_message(data, capsys):
    said = "Unsupported value: 'logprobs' is not supported with this model."
    with FakeServer(responder=yes, faults=[Fault.error(400, said)] * 10) as srv:
        code, err = run(data, srv, capsys)
        calls = srv.requests
    assert code == 2 and calls == 1
    assert "superb: error: stopping the run" in err and said in err and "status 400" in err
    assert not (data / "out" / "table.md").exists()


def test_every_call_failing_stops_the_run_even_under_record(data, capsys):
    from superb.llm.failures import BREAKER_FAILURES

    with FakeServer(responder=yes, faults=[Fault.error(503, "model is loading")] * 10) as srv:
        code, err = run(data, srv, capsys, on_failure="record")
        calls = srv.requests
    assert code == 2 and calls == BREAKER_FAILURES
    assert "all failed after their retries" in err and "model is loading" in err


def test_a_corrupt_cache_stops_before_any_call_naming_the_file(data, capsys):
    cache = data / "cache.sqlite"
    cache.write_bytes(b"garbage" * 1000)
    with FakeServer(responder=yes) as srv:
        code, err = run(data, srv, capsys, cache="normal", cache_path=str(cache))
        calls = srv.requests
    assert code == 2 and calls == 0
    assert f"superb: error: the LLM response cache {cache} is corrupt" in err and f"mv {cache} {cache}.corrupt" in err


def judge_spec(folder, url: str, **llm) -> str:
    """A judge spec: one pointwise judge on the 5 labelled pairs of the local data set."""
    path = folder / "judge.toml"
    path.write_text(f"""
name = "judge_exit_codes"
{dataset_table(folder)}
labels = [0, 1, 2, 3]
rel_threshold = 2
[llm]
{toml_lines(llm_settings(url, **llm))}
[judge]
fields = ["title"]
[[judge.variants]]
name = "pointwise"
type = "pointwise"
template = "pointwise_best_product"
reading = "grade"
""")
    return str(path)


def grade(request: dict) -> Reply:
    return Reply("2", (("2", math.log(0.9), {"2": math.log(0.9), "1": math.log(0.1)}),))


@pytest.mark.parametrize("share, expected", [(0.0, EXIT_LLM_FAILURES), (0.25, 0)])
def test_judge_exits_3_on_failed_calls_with_the_counts_on_stderr(data, capsys, share, expected):
    with FakeServer(responder=grade, faults=[None, Fault.error(500)]) as srv:
        code = main(["judge", judge_spec(data, srv.base_url, max_failure_share=share), "--out", str(data / "out")])
        calls = srv.requests
    err = capsys.readouterr().err
    assert calls == 5 and code == expected
    assert "superb: LLM requests: 5 (5 calls made, 0 from the cache), 1 failed" in err
    assert ("Exit code 3" in err) == (expected == EXIT_LLM_FAILURES)
    assert (data / "out" / "agreement.md").is_file()  # the results are written either way


def test_judge_without_failures_exits_0(data, capsys):
    with FakeServer(responder=grade) as srv:
        code = main(["judge", judge_spec(data, srv.base_url), "--out", str(data / "out")])
    assert code == 0 and "5 (5 calls made, 0 from the cache), 0 failed" in capsys.readouterr().err


def test_a_cache_only_report_counts_misses_as_not_called(capsys):
    """--from-cache: the cache-only client records each miss as a dry-run call; nothing was called, nothing failed."""
    from superb.llm.exit_code import llm_exit_code

    code = llm_exit_code({}, {"judge:umbrela": {"calls": 3, "cache_hits": 2, "failures": 0, "dry_run": 3}})
    err = capsys.readouterr().err
    assert code == 0
    assert "superb: LLM requests: 5 (2 from the cache, 3 not in the cache and not called: counted as missing), " \
           "no call made" in err and "calls made" not in err
