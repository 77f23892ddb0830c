"""results/chorus_dev_calibrated/README.md motivates calibrate = true by the 1.5B's position prior and by what dividing
it out does to the shipped setwise answers; those numbers are recomputed here from the shipped files (the
content-free answers in results/chorus_dev_setwise_cal/responses.jsonl.gz, the setwise answers in
results/chorus_dev_comparative/responses.jsonl.gz) and the Chorus labels, not typed."""

from __future__ import annotations

import gzip
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest

RESULTS = Path(__file__).resolve().parents[1] / "results"


def three_product_sets(path: Path):
    """(query, product texts, distribution over A/B/C) of every setwise request of three products in a shipped file."""
    with gzip.open(path, "rt") as f:
        for line in f:
            row = json.loads(line)
            if not row["template"].startswith("setwise"):
                continue
            prompt = row["request"]["messages"][-1][1]
            texts = [t for _, t in re.findall(r"Product ([A-Z]): <<< (.*?) >>>", prompt)]
            if len(texts) != 3:
                continue
            top = row["logprobs"][0][2]
            p = np.array([math.exp(top[k]) if k in top else 0.0 for k in "ABC"])
            yield re.search(r"Query: (.*)\n", prompt).group(1), texts, p / p.sum()


@pytest.fixture(scope="module")
def chorus():
    from superb.data import load_dataset
    from superb.errors import SuperbError

    try:
        ds = load_dataset({"name": "chorus"})
        ds.qrels()
    except SuperbError as e:  # no mirror and no network
        pytest.skip(f"Chorus not available here: {e}")
    return ds


def test_the_calibration_claims_are_the_shipped_answers(chorus):
    qid_of = dict(zip(chorus.topics()["query"], chorus.topics()["qid"]))
    grade = {(r.qid, r.docno): int(r.label) for r in chorus.qrels().itertuples()}
    docno_of: dict[str, dict[str, str]] = {}
    for qid, docno in grade:
        docno_of.setdefault(qid, {}).setdefault(chorus.doc(docno).get("title", "").strip(), docno)

    prior = {q: p for q, texts, p in three_product_sets(RESULTS / "chorus_dev_setwise_cal" / "responses.jsonl.gz")
             if all(t == "N/A" for t in texts)}
    n = raw = calibrated = 0
    chance = 0.0
    for q, texts, p in three_product_sets(RESULTS / "chorus_dev_comparative" / "responses.jsonl.gz"):
        qid = qid_of[q]
        grades = [grade.get((qid, docno_of.get(qid, {}).get(t.strip()))) for t in texts]
        if None in grades or len(set(grades)) == 1 or q not in prior:
            continue
        c = p / prior[q]
        n += 1
        raw += grades[int(np.argmax(p))] == max(grades)
        calibrated += grades[int(np.argmax(c))] == max(grades)
        chance += sum(g == max(grades) for g in grades) / 3
    mean_prior = np.mean(list(prior.values()), axis=0)
    readme = " ".join((RESULTS / "chorus_dev_calibrated" / "README.md").read_text(encoding="utf-8").split())
    assert f"over the {len(prior)} dev queries, A/B/C " + "/".join(f"{x:.2f}" for x in mean_prior) in readme
    assert f"best-graded product in {calibrated} of the {n} sets" in readme
    assert f"(the raw top letter: {raw}; a random pick: {round(chance)} on average)" in readme
