"""The fixed dev/test split, seeded samples and explicit subsets (superb.data.splits)."""

import hashlib

import pandas as pd
import pytest

from superb.data.splits import select_queries, split_of
from superb.errors import SpecError


def _topics(n=200):
    return pd.DataFrame({"qid": [f"q{i:03d}" for i in range(n)], "query": [f"query {i}" for i in range(n)]})


def test_split_rule_is_the_documented_hash():
    for qid in ["q001", "laptop", "42", "ünïcode"]:
        bucket = int(hashlib.sha1(qid.encode("utf-8")).hexdigest(), 16) % 10
        assert split_of(qid) == ("dev" if bucket < 3 else "test")


def test_dev_and_test_are_disjoint_and_cover_all():
    topics = _topics()
    dev, test = select_queries(topics, "dev"), select_queries(topics, "test")
    assert set(dev["qid"]).isdisjoint(test["qid"])
    assert set(dev["qid"]) | set(test["qid"]) == set(topics["qid"])
    assert 0.2 < len(dev) / len(topics) < 0.4  # about 30%
    assert select_queries(topics, "all").equals(topics)


def test_split_of_a_query_does_not_depend_on_the_others():
    topics = _topics()
    dev_full = set(select_queries(topics, "dev")["qid"])
    dev_half = set(select_queries(topics.iloc[::2], "dev")["qid"])
    assert dev_half == dev_full & set(topics.iloc[::2]["qid"])


def test_sample_is_seeded_and_within_split():
    topics = _topics()
    a = select_queries(topics, "test", sample=10, seed=7)
    b = select_queries(topics.sample(frac=1, random_state=3).sort_index(), "test", sample=10, seed=7)
    c = select_queries(topics, "test", sample=10, seed=8)
    assert a.equals(b) and len(a) == 10
    assert set(a["qid"]) != set(c["qid"])
    assert set(a["qid"]) <= set(select_queries(topics, "test")["qid"])


def test_subset_by_qid_or_text():
    topics = _topics()
    picked = select_queries(topics, subset=["q005", "query 7"])
    assert picked["qid"].tolist() == ["q005", "q007"]
    with pytest.raises(SpecError, match=r"queries\.subset.*\['nope'\].*q000"):
        select_queries(topics, subset=["q005", "nope"])
    dev_qid = select_queries(topics, "dev")["qid"].iloc[0]
    with pytest.raises(SpecError, match=r"not in split 'test'"):
        select_queries(topics, "test", subset=[dev_qid])


def test_bad_arguments():
    topics = _topics(20)
    with pytest.raises(SpecError, match=r"queries\.split.*'all', 'dev', 'test'"):
        select_queries(topics, "validation")
    with pytest.raises(SpecError, match=r"queries\.sample"):
        select_queries(topics, sample=0)
    with pytest.raises(SpecError, match=r"only"):
        select_queries(topics, "dev", sample=19)
    with pytest.raises(SpecError, match=r"the string"):
        select_queries(topics, subset="q001")
