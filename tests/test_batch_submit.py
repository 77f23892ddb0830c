"""`superb batch submit` rounds against the fake server's Files and Batch APIs: backoff, failed lines, expired and
failed batches, resuming after an interruption, and the final ranking against a live run of the same fake model."""

from __future__ import annotations

import pytest

from batch_helpers import candidates, live, ranking
from superb.testing.fakeserver import BatchFault, FakeServer
from superb.batch.submit import Submitter, SubmitState
from superb.errors import LLMError
from superb.llm import LLMConfig, ResponseCache
from superb.llm.batch import CollectingClient, PendingStore
from superb.llm.batch_api import BatchAPI
from superb.transformers.sliding import SlidingWindowReranker
from test_batch_rounds import model

SECRET = "sk-live-submitsecret-0123456789"
FRAME = candidates(2, 14, marks=True)
WINDOWS = 3  # ceil((14 - 8) / 4) + 1


def make(llm):
    return SlidingWindowReranker(llm, window=8, step=4, top_k=14)


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("SUPERB_HOME", str(tmp_path / "home"))


class Rounds:
    """The export function of a submit: one pass of the reranker with a collecting client."""

    def __init__(self, cache_path, max_lines=None):
        self.cache_path = cache_path
        self.config = LLMConfig(model="fake-model", base_urls=("http://127.0.0.1:9/v1",))
        self.max_lines = max_lines
        self.last = None

    def __call__(self, path):
        with ResponseCache(self.cache_path) as cache, PendingStore(self.cache_path) as store:
            rnd = store.new_round()
            with CollectingClient(self.config, cache=cache, sink=rnd) as llm:
                self.last = make(llm)(FRAME)
                llm.drain()
            return rnd.write_parts(path, max_lines=self.max_lines)


def submitter(srv, tmp_path, sleeps, **kw):
    api = BatchAPI(srv.base_url, SECRET, max_retries=0)
    state = SubmitState.load(tmp_path / "work" / "state.json")
    rounds = kw.pop("rounds", None) or Rounds(tmp_path / "cache.sqlite")
    return Submitter(api, rounds, tmp_path / "cache.sqlite", state, poll_s=1.0, max_poll_s=2.0,
                     sleep=kw.pop("sleep", sleeps.append), log=lambda m: None, **kw), rounds, api


def test_rounds_until_done_equal_a_live_run_and_the_upload_holds_no_key(tmp_path):
    want, calls = live(make, FRAME, model)
    sleeps: list[float] = []
    with FakeServer(responder=model, batch_polls=3) as srv:
        sub, rounds, api = submitter(srv, tmp_path, sleeps)
        report = sub.run()
        api.close()
        uploads = [f["content"] for f in srv.files.values() if f["purpose"] == "batch"]
    assert report.finished and report.rounds == WINDOWS
    assert final_ranking(tmp_path) == want
    assert srv.batch_lines == calls and srv.requests == 0  # everything through batches, nothing live
    assert sleeps == [1.0, 1.5, 2.0] * WINDOWS  # three polls "in progress" per batch, backoff x1.5 capped at 2
    assert all(SECRET.encode() not in u for u in uploads) and len(uploads) == WINDOWS
    state = SubmitState.load(tmp_path / "work" / "state.json")
    assert [r["imported"] for r in state.rounds] == [True] * WINDOWS
    assert all(r["batch_id"].startswith("batch_fake_") for r in state.rounds)


def final_ranking(tmp_path):
    rounds = Rounds(tmp_path / "cache.sqlite")
    assert rounds(tmp_path / "check.jsonl") == []  # nothing left to export
    return ranking(rounds.last)


def test_a_round_larger_than_one_file_goes_out_as_several_batches(tmp_path):
    want, calls = live(make, FRAME, model)
    with FakeServer(responder=model, batch_polls=1) as srv:
        sub, _, api = submitter(srv, tmp_path, [], rounds=Rounds(tmp_path / "cache.sqlite", max_lines=1))
        report = sub.run()
        api.close()
    assert report.finished and report.rounds == WINDOWS
    assert srv.batches_created == calls  # two queries, one request each per round: two one-line batches per round
    state = SubmitState.load(tmp_path / "work" / "state.json")
    assert [(r["round"], r["part"]) for r in state.rounds][:2] == [(1, 1), (1, 2)]
    assert state.rounds[1]["file"] == "round-1-2.jsonl"
    assert final_ranking(tmp_path) == want


def test_failed_lines_and_an_expired_batch_are_exported_again(tmp_path):
    want, calls = live(make, FRAME, model)
    faults = [BatchFault.failed_lines(2), BatchFault.expired(0)]
    with FakeServer(responder=model, batch_polls=0, batch_faults=faults) as srv:
        sub, _, api = submitter(srv, tmp_path, [])
        report = sub.run()
        api.close()
    assert report.finished
    errors = sum(sum(r.errors.values()) for r in report.imports)
    # round 1: the second of two lines failed; round 2 (the other query's next window and the failed line again)
    # expired before answering anything: two more
    assert errors == 1 + 2
    assert {k for r in report.imports for k in r.errors} == {"invalid_request_error", "batch_expired"}
    assert final_ranking(tmp_path) == want
    assert srv.batch_lines == calls  # every request answered once in the end (failed lines were not answered)


def test_interrupted_submit_resumes_its_batch_without_paying_twice(tmp_path):
    want, _ = live(make, FRAME, model)

    def interrupt(_seconds):
        raise KeyboardInterrupt

    with FakeServer(responder=model, batch_polls=2) as srv:
        sub, _, api = submitter(srv, tmp_path, [], sleep=interrupt)
        with pytest.raises(KeyboardInterrupt):
            sub.run()
        api.close()
        state = SubmitState.load(tmp_path / "work" / "state.json")
        assert len(state.rounds) == 1 and state.rounds[0]["batch_id"] == "batch_fake_1"
        assert not state.rounds[0].get("imported")
        sub, _, api = submitter(srv, tmp_path, [])
        report = sub.run()
        api.close()
        assert report.finished and srv.batches_created == WINDOWS  # the first batch was resumed, not re-created
        uploads = [f for f in srv.files.values() if f["purpose"] == "batch"]
        assert len(uploads) == WINDOWS
    assert final_ranking(tmp_path) == want


def test_batches_that_keep_failing_stop_with_their_errors(tmp_path):
    with FakeServer(responder=model, batch_polls=0, batch_faults=[BatchFault.failed()] * 5) as srv:
        sub, _, api = submitter(srv, tmp_path, [])
        with pytest.raises(LLMError, match="imported no answer.*fake validation failure"):
            sub.run()
        api.close()
        assert srv.batches_created == 2


def test_an_endpoint_without_the_batch_api_is_named(tmp_path):
    with FakeServer(responder=model) as srv:
        api = BatchAPI(srv.base_url.replace("/v1", "/nope"), SECRET, max_retries=0)
        (tmp_path / "x.jsonl").write_text("{}\n")
        with pytest.raises(LLMError, match="uploading the batch file.*404.*vllm run-batch"):
            api.upload(tmp_path / "x.jsonl")
        api.close()
