"""`superb llm check` against the fake server: it reports endpoint, model, answer, latency and tokens."""

from __future__ import annotations

import argparse

import pytest

from superb.testing.fakeserver import FakeServer, Reply
from superb.errors import SpecError
from superb.llm.cli import register


def run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    args = parser.parse_args(argv)
    return args.func(args)


def test_check_makes_one_real_call_and_reports_it(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SUPERB_HOME", str(tmp_path / "home"))
    with FakeServer(responder=lambda r: Reply("yes", (("yes", -0.2, {"yes": -0.2, "no": -1.9}),))) as srv:
        spec = tmp_path / "spec.toml"
        spec.write_text(f'[llm]\nmodel = "fake-model"\nbase_urls = ["{srv.base_url}"]\n', encoding="utf-8")
        assert run(["llm", "check", "--spec", str(spec)]) == 0
        assert srv.requests == 1
    out = capsys.readouterr().out
    assert srv.base_url in out and "fake-model" in out and "answer: 'yes'" in out
    assert "'no'=-1.90" in out and "prompt tokens" in out


def test_check_rejects_an_unknown_llm_key(tmp_path):
    spec = tmp_path / "spec.toml"
    spec.write_text('[llm]\nmodle = "x"\n', encoding="utf-8")
    with pytest.raises(SpecError, match="llm.modle"):
        run(["llm", "check", "--spec", str(spec)])
