"""`superb evaluate` on small hostile inputs (superb/run/evaluate_runs.py): what `superb run` refuses is refused the same
way (one labelled query under a paired test), a label no scale has is a DataError at its line, the topics file is
blamed for its own repeated query, and queries left out by --topics are called that, not "without labels"."""

from __future__ import annotations

import logging

import pytest

from superb.cli import main

RUN_A = "1 Q0 a 1 2 t\n1 Q0 b 2 1 t\n2 Q0 a 1 1 t\n3 Q0 b 1 1 t\n"
RUN_B = "1 Q0 b 1 2 t\n1 Q0 a 2 1 t\n2 Q0 b 1 1 t\n3 Q0 a 1 1 t\n"


def evaluate(tmp_path, qrels: str, *extra: str, topics: str | None = None) -> int:
    (tmp_path / "qrels.txt").write_text(qrels)
    (tmp_path / "a.run").write_text(RUN_A)
    (tmp_path / "b.run").write_text(RUN_B)
    if topics is not None:
        (tmp_path / "topics.tsv").write_text(topics)
        extra = (*extra, "--topics", str(tmp_path / "topics.tsv"))
    return main(["evaluate", "--qrels", str(tmp_path / "qrels.txt"), str(tmp_path / "a.run"),
                 str(tmp_path / "b.run"), "--out", str(tmp_path / "out"), *extra])


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("SUPERB_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SUPERB_PROGRESS", "0")


def test_a_one_query_qrels_is_refused_like_superb_run(tmp_path, capsys):
    assert evaluate(tmp_path, "1 0 a 1\n1 0 b 0\n") == 2
    err = capsys.readouterr().err
    assert "superb: error: 1 of the 1 selected queries have relevance labels (1): a paired significance test" in err
    assert "--baseline none" in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()


def test_topics_selecting_one_labelled_query_are_refused(tmp_path, capsys):
    assert evaluate(tmp_path, "1 0 a 1\n2 0 a 1\n", topics="1\tq\n") == 2
    err = capsys.readouterr().err
    assert "1 of the 1 selected queries have relevance labels" in err and "more queries in --topics" in err


def test_one_query_without_tests_is_evaluated(tmp_path):
    assert evaluate(tmp_path, "1 0 a 1\n1 0 b 0\n", "--baseline", "none") == 0


def test_queries_left_out_by_topics_are_not_called_unlabelled(tmp_path, caplog):
    caplog.set_level(logging.WARNING)
    assert evaluate(tmp_path, "1 0 a 1\n2 0 a 1\n3 0 b 1\n", topics="1\tq\n2\tr\n") == 0
    assert "2 queries are not in --topics" not in caplog.text
    assert "1 queries are not in --topics" in caplog.text and "['3']" in caplog.text
    assert "have no labels" not in caplog.text


def test_a_repeated_topic_is_blamed_on_the_topics_file(tmp_path, capsys):
    assert evaluate(tmp_path, "1 0 a 1\n2 0 a 1\n", topics="1\tq\n2\tr\n1\tq again\n") == 2
    err = capsys.readouterr().err
    assert "topics.tsv:3: query '1' is already given at line 1" in err
    assert ".run" not in err


@pytest.mark.parametrize("label", ["3000000000", "1e20", "1_0", "\u0663"])
def test_a_label_out_of_any_scale_is_refused_with_its_line(tmp_path, capsys, label):
    assert evaluate(tmp_path, f"1 0 a 1\n2 0 a {label}\n") == 2
    err = capsys.readouterr().err
    assert f"qrels.txt:2: label " in err and "Traceback" not in err
    if label == "3000000000":
        assert "is outside -1000..1000" in err


def test_a_local_data_set_refuses_an_out_of_range_label(tmp_path):
    from superb.data.local import read_trec_qrels
    from superb.errors import DataError

    (tmp_path / "q.txt").write_text("1 0 a 1\n1 0 b 3000000000\n")
    with pytest.raises(DataError, match=r"q\.txt:2: label 3000000000 is outside"):
        read_trec_qrels(tmp_path / "q.txt")
