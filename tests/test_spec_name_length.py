"""Names longer than the file system allows (issue 23.5): a pipeline or spec name whose run file, gain plot, results
folder or temporary folder would pass NAME_MAX (255 bytes) is refused when the spec is read, so `--dry-run` refuses
it (rc 2) and a real run makes 0 calls, rather than paying every call and dying on "File name too long"."""

from __future__ import annotations

import pytest

from superb.testing.fakeserver import FakeServer, yes
from local_data import data  # noqa: F401 (a fixture)
from spec_helpers import write_spec
from superb.cli import main
from superb.errors import SpecError
from superb.run.spec import parse_spec
from superb.run.spec_names import NAME_MAX


def spec(folder, url: str, *, name: str = "names", pipeline: str = "BM25 >> pointwise") -> str:
    return str(write_spec(folder, name=name, reranked=pipeline, llm={
        "model": "fake-model", "base_urls": [url], "cache_path": str(folder / "cache.sqlite"), "max_retries": 0}))


@pytest.mark.parametrize("dry_run", [True, False])
@pytest.mark.parametrize("names", [{"pipeline": "BM25 >> " + "p" * 300}, {"name": "s" * 250}],
                         ids=["300-character pipeline", "250-character spec"])
def test_a_name_too_long_for_the_file_system_is_refused_before_any_call(data, capsys, names, dry_run):
    with FakeServer(responder=yes) as srv:
        code = main(["run", spec(data, srv.base_url, **names), *(["--dry-run"] if dry_run else [])])
        calls = srv.requests
    err = capsys.readouterr().err
    assert code == 2 and calls == 0
    assert "bytes" in err and str(NAME_MAX) in err and "shorter" in err
    assert ("pipelines[1].name" in err) if "pipeline" in names else err.startswith("superb: error: name:")


def test_names_at_the_limit_pass():
    def raw(name="ok", pipeline="BM25"):
        return {"name": name, "dataset": {"name": "chorus"},
                "pipelines": [{"name": pipeline, "first_stage": {"engine": "pisa", "model": "bm25"}}]}

    parse_spec(raw(pipeline="p" * (NAME_MAX - len("gain_.png"))))  # the longest file it writes: gain_NAME.png
    with pytest.raises(SpecError, match="pipelines\\[0\\].name"):
        parse_spec(raw(pipeline="p" * (NAME_MAX - len("gain_.png") + 1)))
    parse_spec(raw(name="s" * 200))
    with pytest.raises(SpecError, match="^name:"):
        parse_spec(raw(name="s" * 230))  # results/.NAME.replaced-PID and NAME.shard-I-of-N need room after it
