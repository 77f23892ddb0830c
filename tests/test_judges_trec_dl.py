"""Judges on TREC DL 2019 as issue 49's user writes them (experiments/judges_dl19_umbrela.toml, run as committed):
real DL19 queries, passages and NIST labels (one label per pair, no ratings), the pool restricted to the judged pairs
whose passage the data set holds (the rest counted in pool_coverage.csv), UMBRELA's prompt read by label probabilities
and calibrated against NIST's label on dev queries, reported on test queries with intervals and no human ceiling.
The model is a fake OpenAI-compatible server whose answers follow NIST's label (UMBRELA's "##final score: G" with
label probabilities), so agreement has a known answer; the committed folders results/judges_dl19 and judges_dl20 are
the same path with the real 1.5B."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pandas as pd
import pytest

from chorus_judge_helpers import MIRROR, prompt_of
from superb.cli import main
from superb.testing.fakeserver import FakeServer, Reply

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "experiments" / "judges_dl19_umbrela.toml"
_QUERY_PASSAGE = re.compile(r"\nQuery: (.*?)\nPassage: (.*?)\n\nSplit this problem", re.S)


def key(query: str, passage: str) -> tuple[str, str]:
    return " ".join(query.split()), " ".join(passage.split())[:200]


def judged_pairs(year: int) -> tuple[dict[tuple[str, str], int], int, set[str]]:
    """(query, the passage's first 200 characters) -> NIST's label, how many judged pairs have text (a passage
    text repeated under one query is one key), and the year's judged qids."""
    from superb.data import load_dataset

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SUPERB_DATA_MIRROR", str(MIRROR))
        data = load_dataset({"name": "trec-dl", "year": year})
        texts = {d["docno"]: d["text"] for d in data.docs_iter()}
        queries = data.topics().set_index("qid")["query"].to_dict()
        qrels = data.qrels()[["qid", "docno", "label"]].astype({"qid": str, "docno": str})
        judged = [(q, d, int(g)) for q, d, g in qrels.itertuples(index=False) if d in texts]
        return {key(queries[q], texts[d]): g for q, d, g in judged}, len(judged), set(qrels["qid"])


@pytest.fixture(scope="module")
def nist() -> tuple[dict[tuple[str, str], int], int]:
    labels, n, _ = judged_pairs(2019)
    return labels, n


class UmbrelaModel:
    """UMBRELA's answer to the pair's NIST label G: "##final score: G", P(G) = 0.7 at the digit. A passage the prompt
    shows normalised (its quotes or characters rewritten, so the lookup by raw text misses) is answered 0 and
    counted in ``unknown``."""

    def __init__(self, labels: dict[tuple[str, str], int]):
        self.labels, self.unknown = labels, 0

    def __call__(self, req: dict) -> Reply:
        found = _QUERY_PASSAGE.search(prompt_of(req))
        assert found, "not UMBRELA's prompt"
        grade = self.labels.get(key(*found.groups()))
        if grade is None:
            self.unknown += 1
            grade = 0
        top = {str(g): math.log(0.7 if g == grade else 0.1) for g in range(4)}
        tokens = (("##", 0.0, {}), ("final", 0.0, {}), (" score", 0.0, {}), (":", 0.0, {}), (" ", 0.0, {}),
                  (str(grade), top[str(grade)], top))
        return Reply(f"##final score: {grade}", tokens)


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("SUPERB_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SUPERB_DATA_MIRROR", str(MIRROR))
    monkeypatch.setenv("SUPERB_PROGRESS", "0")
    monkeypatch.chdir(ROOT)  # [label_study] runs names a results folder relative to the project
    return tmp_path


def test_the_users_umbrela_spec_on_dl19_dry_run_then_run_then_orderings(home, nist, capsys):
    labels, n_judged = nist
    # --dry-run on the committed spec as it is (the embedded model; nothing started, called or written)
    assert main(["judge", str(SPEC), "--dry-run", "--out", str(home / "dry")]) == 0
    dry = capsys.readouterr().out
    assert not (home / "dry").exists()
    pairs = int(re.search(r"judges_dl19_umbrela: (\d+) pool pairs", dry).group(1))
    calls, at_most = map(int, re.search(r"judge:umbrela\s+(\d+)\s+(\d+)", dry).groups())
    assert pairs == n_judged == at_most  # every NIST-judged pair with text, one UMBRELA request each at most
    assert 0 < calls <= at_most  # pairs whose passage text is repeated under one query ask one request

    model = UmbrelaModel(labels)
    with FakeServer(responder=model) as srv:
        spec = home / "judges_dl19_umbrela.toml"
        llm = f'\n[llm]\nmodel = "fake-model"\nbase_urls = ["{srv.base_url}"]\nmax_retries = 0\n'
        spec.write_text(SPEC.read_text(encoding="utf-8") + llm, encoding="utf-8")
        out = home / "out"
        assert main(["judge", str(spec), "--out", str(out)]) == 0
        assert srv.requests == calls and model.unknown <= calls // 100
        capsys.readouterr()

        # the pool: NIST's judged pairs, those with text judged, the others counted per label, never an error
        coverage = pd.read_csv(out / "pool_coverage.csv").set_index("label")
        assert coverage.loc["all", "in_pool"] == coverage.loc["all", "with_text"] == pairs
        assert coverage.loc["all", "judged"] == 9260  # DL19's qrels (SOURCE.md)
        assert coverage.loc["all", "left_out_no_text"] == 9260 - pairs > 0
        per_label = coverage.drop(index="all")
        assert per_label[["judged", "with_text", "left_out_no_text"]].sum().to_dict() == \
            coverage.loc["all", ["judged", "with_text", "left_out_no_text"]].to_dict()

        # one label per pair: cut points fitted on dev queries, test queries reported with intervals, no ceiling
        table = pd.read_csv(out / "agreement_calibrated.csv")
        test = table[table["split"] == "test"].set_index("judge").loc["umbrela"]
        assert test["against"] == "qrels" and test["n"] > 500
        assert test["kappa_linear"] > 0.95  # the answers follow NIST's label: the fitted cut points recover it
        assert test["kappa_linear_low"] <= test["kappa_linear"] <= test["kappa_linear_high"]
        assert set(table["split"]) >= {"dev-cv", "test"} and "human" not in set(table["judge"])
        report = (out / "agreement_calibrated.md").read_text(encoding="utf-8")
        assert "No human ceiling" in report
        cal = json.loads((out / "calibration.json").read_text())["umbrela"]
        assert cal["calibrated"] and len(cal["cuts"]) == 3
        qrels = pd.read_csv(out / "umbrela" / "llm_qrels.trec", sep=r"\s+", header=None, dtype=str)
        assert len(qrels) == pairs and set(qrels[3]) <= {"0", "1", "2", "3"}
        assert (out / "umbrela" / "per_label.csv").is_file() and (out / "responses.jsonl.gz").is_file()

        # the same spec with an orderings study over results/trec_dl19: only the systems' new top-10 pairs are asked
        asked = srv.requests
        spec.write_text(spec.read_text(encoding="utf-8") + '\n[label_study]\nruns = "results/trec_dl19"\n'
                        'depth = 10\nmeasures = ["nDCG@10"]\n', encoding="utf-8")
        assert main(["judge", str(spec), "--out", str(home / "orderings")]) == 0
        assert srv.requests > asked
    study = pd.read_csv(home / "orderings" / "label_study.csv")
    llm = study[(study["labels"] == "llm") & (study["measure"] == "nDCG@10")].iloc[0]
    assert llm["n_systems"] == 10 and llm["n_queries"] == 43
    assert llm["tau_low"] <= llm["tau"] <= llm["tau_high"]
    filled = study[(study["labels"] == "filled") & (study["measure"] == "nDCG@10")].iloc[0]
    assert filled["tau"] > 0.8  # NIST's labels with the model's (NIST-following, unjudged = 0) in the holes


def small_spec(path: Path, year: int, base_url: str, fit_on: Path | None = None) -> Path:
    """UMBRELA on a seeded label-stratified sample of 200 judged pairs of ``year``, cut points fitted on ``fit_on``'s
    pairs when given (every query of ``year`` is then a test query)."""
    lines = [f'name = "umbrela_dl{year % 100}"', "seed = 0", "[dataset]", 'name = "trec-dl"', f"year = {year}",
             "[queries]", 'split = "all"', "[pool]", 'source = "qrels"', "sample = 200", "seed = 0",
             "[llm]", 'model = "fake-model"', f'base_urls = ["{base_url}"]', "max_retries = 0",
             "[[judge.variants]]", 'preset = "umbrela"', "[calibration]", "bootstrap = 50", "folds = 2"]
    if fit_on is not None:
        lines.append(f'fit_on = "{fit_on}"')
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_cut_points_fitted_on_dl19_are_applied_unchanged_to_every_dl20_pair(home, capsys):
    labels19, _, qids19 = judged_pairs(2019)
    labels20, _, qids20 = judged_pairs(2020)
    model = UmbrelaModel({**labels19, **labels20})
    with FakeServer(responder=model) as srv:
        dl19 = small_spec(home / "dl19.toml", 2019, srv.base_url)
        dl20 = small_spec(home / "dl20.toml", 2020, srv.base_url, fit_on=dl19)
        assert main(["judge", str(dl20), "--out", str(home / "dl20")]) == 0
        assert model.unknown <= srv.requests // 100
    capsys.readouterr()
    scores = pd.read_csv(home / "dl20" / "umbrela" / "scores.tsv", sep="\t", dtype={"qid": str})
    dev, test = scores[scores["split"] == "dev"], scores[scores["split"] == "test"]
    assert len(dev) == len(test) == 200  # DL19's sample fits, DL20's sample is reported
    assert set(dev["qid"]) <= qids19 and set(test["qid"]) <= qids20 and not set(test["qid"]) & qids19
    table = pd.read_csv(home / "dl20" / "agreement_calibrated.csv").set_index("split")
    assert table.loc["dev-cv", "n"] == 200 and table.loc["test", "n"] == 200
    assert table.loc["test", "kappa_linear"] > 0.9  # DL19's cut points, applied unchanged, recover DL20's labels
    calibration = json.loads((home / "dl20" / "calibration.json").read_text())["umbrela"]
    assert calibration["coverage"]["dev"] == {"pairs": 200, "scored": 200}


def test_a_judge_on_a_gzipped_candidates_file_pools_the_same_judged_pairs_as_trec_dl(home, nist, capsys):
    """The candidates data set (rank_llm's DL19 file, gzipped) with its qrels: the pool is the judged pairs whose
    passage the file holds, the others counted, as the trec-dl data set's."""
    import gzip

    labels, n_judged = nist
    source = MIRROR / "trec-dl"
    packed = home / "retrieve_results_dl19.json.gz"
    with gzip.open(packed, "wb") as f:
        f.write((source / "retrieve_results_dl19.json").read_bytes())
    model = UmbrelaModel(labels)
    with FakeServer(responder=model) as srv:
        spec = home / "candidates.toml"
        spec.write_text("\n".join([
            'name = "umbrela_candidates"', "seed = 0", "[dataset]", 'name = "candidates"', f'file = "{packed}"',
            f'qrels = "{source / "qrels.dl19-passage.txt"}"', f'topics = "{source / "topics.dl19-passage.txt"}"',
            "rel_threshold = 2", "[queries]", 'split = "all"', "[pool]", 'source = "qrels"', "sample = 150",
            "seed = 0", "[llm]", 'model = "fake-model"', f'base_urls = ["{srv.base_url}"]', "max_retries = 0",
            "[[judge.variants]]", 'preset = "umbrela"', "[calibration]", "bootstrap = 50", "folds = 2"]) + "\n",
            encoding="utf-8")
        assert main(["judge", str(spec), "--out", str(home / "out")]) == 0
        assert 0 < srv.requests <= 150 and model.unknown <= 2
    capsys.readouterr()
    coverage = pd.read_csv(home / "out" / "pool_coverage.csv").set_index("label")
    assert coverage.loc["all", ["judged", "with_text", "left_out_no_text", "in_pool"]].tolist() == \
        [9260, n_judged, 9260 - n_judged, 150]
    test = pd.read_csv(home / "out" / "agreement_calibrated.csv").set_index("split").loc["test"]
    assert test["against"] == "qrels" and test["kappa_linear"] > 0.9
