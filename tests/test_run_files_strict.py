"""Run files read as trec_eval reads them, or refused (superb/trec/run_files.py): numbers in ASCII only (Python's float
reads `1_000` and Arabic-Indic digits, C's atof does not), a UTF-8 byte-order mark dropped, and a rank_llm hit filed
under another query refused with its place."""

from __future__ import annotations

import json

import pytest

from superb.errors import DataError
from superb.trec.run_files import read_run_file

NUMBERS = {
    "underscore separator": ("1_000", "score '1_000' is not a number written in ASCII digits"),
    "arabic-indic digits": ("\u0669\u0669", "is not a number written in ASCII digits"),
    "fullwidth digits": ("\uff11", "is not a number written in ASCII digits"),
    "hex": ("0x10", "is not a number written in ASCII digits"),
}


@pytest.mark.parametrize("case", list(NUMBERS))
def test_a_score_python_reads_but_c_does_not_is_refused_with_its_line(tmp_path, case):
    score, message = NUMBERS[case]
    run = tmp_path / "bad.run"
    run.write_text(f"1 Q0 a 1 5 t\n1 Q0 b 100 {score} t\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"bad\.run:2: ") as err:
        read_run_file(run)
    assert message in str(err.value)


def test_a_rank_written_with_a_separator_or_foreign_digits_is_refused(tmp_path):
    run = tmp_path / "bad.run"
    run.write_text("1 Q0 a 1_0 5 t\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"bad\.run:1: rank '1_0' is not an integer written in ASCII digits"):
        read_run_file(run)


def test_plain_c_numbers_still_read(tmp_path):
    run = tmp_path / "ok.run"
    run.write_text("1 Q0 a 1 -1.5 t\n1 Q0 b 2 -2e-3 t\n1 Q0 c 3 .5 t\n1 Q0 d +4 7. t\n", encoding="utf-8")
    rows = read_run_file(run).rows
    assert rows["docno"].tolist() == ["d", "c", "b", "a"]
    assert rows["score"].tolist() == [7.0, 0.5, -0.002, -1.5]


def test_a_byte_order_mark_does_not_cost_the_first_query_its_top_document(tmp_path):
    plain, marked = tmp_path / "plain.run", tmp_path / "marked.run"
    text = "1047854 Q0 a 1 3 t\n1047854 Q0 b 2 2 t\n2 Q0 x 1 1 t\n"
    plain.write_text(text, encoding="utf-8")
    marked.write_bytes(b"\xef\xbb\xbf" + text.encode())
    assert read_run_file(marked).rows.equals(read_run_file(plain).rows)
    assert read_run_file(marked).qids == ["1047854", "2"]


def test_a_byte_order_mark_before_rank_llm_json_is_dropped(tmp_path):
    entries = [{"query": "q", "hits": [{"qid": 1, "docid": "a", "rank": 1, "score": 2.0}]}]
    marked = tmp_path / "c.json"
    marked.write_bytes(b"\xef\xbb\xbf" + json.dumps(entries).encode())
    assert read_run_file(marked).qids == ["1"]


def test_a_rank_llm_hit_of_another_query_is_refused_with_its_place(tmp_path):
    entries = [{"query": "q1", "hits": [{"qid": 1, "docid": "a", "rank": 1, "score": 2.0},
                                        {"qid": 1, "docid": "b", "rank": 2, "score": 1.0}]},
               {"query": "q2", "hits": [{"qid": 2, "docid": "c", "rank": 1, "score": 2.0},
                                        {"qid": 1, "docid": "d", "rank": 2, "score": 1.0}]}]
    bad = tmp_path / "c.json"
    bad.write_text(json.dumps(entries))
    with pytest.raises(DataError, match=r"c\.json: entry 1, hit 1: qid '1' differs from its entry's qid '2'"):
        read_run_file(bad)


def test_two_rank_llm_entries_of_one_query_are_refused(tmp_path):
    entries = [{"query": "q1", "hits": [{"qid": 1, "docid": "a", "rank": 1, "score": 2.0}]},
               {"query": "q1 again", "hits": [{"qid": 1, "docid": "b", "rank": 1, "score": 2.0}]}]
    bad = tmp_path / "c.json"
    bad.write_text(json.dumps(entries))
    with pytest.raises(DataError, match=r"c\.json: entry 1, hit 0: query '1' is already the query of entry 0"):
        read_run_file(bad)
