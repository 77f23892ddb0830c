"""`superb responses save` on a JUDGE spec (issue 49: a long judge run, cut short, is shipped so another machine goes
on): the cached answers the judge run would use are written without any request; replayed into an empty cache, a
live run asks only for the rest."""

from __future__ import annotations

import gzip
import json

from superb.cli import main
from superb.testing.fakeserver import Fault, FakeServer
from test_judge_plugins import folder, spec, three_grades  # noqa: F401  (folder is a fixture)


def test_a_cut_short_judge_run_is_saved_replayed_and_continued_with_only_the_missing_calls(folder, capsys):
    whole = spec(folder, "http://127.0.0.1:9/v1", "my_judges.py:ThreeGradeJudge").read_text()
    half = whole.split("[[judge.variants]]\nname = \"superb\"")[0]  # the plug-in judge alone: 12 of 24 answers
    with FakeServer(responder=three_grades) as srv:
        (folder / "half.toml").write_text(half.replace("http://127.0.0.1:9/v1", srv.base_url)
                                          + "[calibration]\nbootstrap = 50\nfolds = 2\n")
        assert main(["judge", "half.toml", "--out", "half"]) == 0
        assert srv.requests == 12
    with FakeServer(faults=[Fault.error(500)] * 100) as refusing:  # were a request sent, it would be seen here
        (folder / "whole.toml").write_text(whole.replace("http://127.0.0.1:9/v1", refusing.base_url))
        capsys.readouterr()
        assert main(["responses", "save", "whole.toml", "--out", "partial.jsonl.gz"]) == 0
        assert refusing.requests == 0
    said = capsys.readouterr().out
    assert "wrote 12 cached answers" in said and "still needs 12 calls" in said, said
    rows = [json.loads(line) for line in gzip.open(folder / "partial.jsonl.gz", "rt")]
    assert len(rows) == 12 and all(r["template"].startswith("three_grade@") for r in rows)

    fresh = folder / "fresh.sqlite"  # another machine
    assert main(["responses", "replay", "partial.jsonl.gz", "--cache", str(fresh)]) == 0
    with FakeServer(responder=three_grades) as srv:
        text = whole.replace("http://127.0.0.1:9/v1", srv.base_url).replace(
            'cache = "normal"', f'cache = "normal"\ncache_path = "{fresh}"')
        (folder / "whole.toml").write_text(text)
        assert main(["judge", "whole.toml", "--out", "whole"]) == 0
        assert srv.requests == 12  # the superb judge's answers only
