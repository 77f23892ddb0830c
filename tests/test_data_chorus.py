"""Chorus Icecat from the data mirror: counts from SOURCE.md, document rendering, ratings, irds registration."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from superb.data import load_dataset
from superb.data.chorus import ALL_FILES, FOLDER, product_to_doc, readable_attribute
from superb.digest import sha256_file


def _mirror() -> Path:
    value = os.environ.get("SUPERB_DATA_MIRROR")
    return Path(value).resolve() if value else Path(__file__).resolve().parents[2] / "shared" / "data"


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    mirror = _mirror()
    if not (mirror / FOLDER / "1.json.zip").is_file():
        pytest.skip(f"Chorus mirror not found at {mirror}/{FOLDER}; set SUPERB_DATA_MIRROR")
    home = tmp_path_factory.mktemp("superb_home")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SUPERB_HOME", str(home))
        mp.setenv("SUPERB_DATA_MIRROR", str(mirror))
        yield home


@pytest.fixture(scope="module")
def chorus(home):
    return load_dataset({"name": "chorus"})


def test_counts_match_the_published_numbers(chorus):
    assert len(chorus.docs_store()) == 19406
    topics, qrels = chorus.topics(), chorus.qrels()
    assert len(topics) == 135 and topics["qid"].is_unique and topics["query"].is_unique
    assert len(qrels) == 3668
    assert qrels["label"].value_counts().to_dict() == {0: 1853, 1: 238, 2: 105, 3: 1472}
    assert set(qrels["docno"]) <= set(chorus.docs_store())
    assert set(qrels["qid"]) == set(topics["qid"])
    stats = chorus.stats
    assert stats["qrels_docno_not_in_corpus"] == 0 and stats["docs_empty_text"] == 0
    assert stats["docs_without_description"] == 721  # products without short_description upstream


def test_files_are_cached_and_verified(home, chorus):
    chorus.docs_store()
    chorus.ratings()
    for pinned in ALL_FILES:
        cached = home / "data" / FOLDER / pinned.name
        assert cached.stat().st_size == pinned.size
        assert sha256_file(cached) == pinned.sha256
    prov = chorus.provenance()
    assert "querqy/chorus@96edf8b536e521be06cab910e0f6a9b25e3016fc" in prov["source"] and "Icecat" in prov["source"]
    assert chorus.fingerprint() == load_dataset({"name": "chorus"}).fingerprint()
    by_name = {f["name"]: f for f in prov["files"]}
    assert by_name["Broad_Query_Set_rated.csv"]["sha256"].startswith("065b79c6")
    assert by_name["1.json.zip"]["url"] == ("https://raw.githubusercontent.com/querqy/chorus/96edf8b536e521be06cab910"
                                            "e0f6a9b25e3016fc/data-encoder/ecommerce/vectors/data/1.json.zip")


def test_qids_are_sorted_query_positions(chorus):
    topics = chorus.topics().sort_values("qid")
    assert list(topics["query"]) == sorted(topics["query"])
    assert topics.iloc[0].tolist() == ["q001", "aa"]
    assert "laptop" in set(topics["query"])


def test_ratings_three_humans(chorus):
    ratings = chorus.ratings()
    assert list(ratings.columns) == ["qid", "docno", "rater_1", "rater_2", "rater_3", "final"]
    assert len(ratings) == 3188
    agree = (ratings["rater_1"] == ratings["rater_2"]) & (ratings["rater_2"] == ratings["rater_3"])
    assert int(agree.sum()) == 2278  # SOURCE.md: all three agree on 2,278 pairs
    judged = set(zip(chorus.qrels()["qid"], chorus.qrels()["docno"]))
    assert set(zip(ratings["qid"], ratings["docno"])) <= judged


def test_document_rendering(chorus):
    doc = chorus.doc("2101957")
    assert set(doc) == {"docno", "text", *chorus.fields}
    assert all(isinstance(v, str) for v in doc.values())
    assert doc["title"].startswith("HP Pavilion dv7-1211ea Notebook Silver")
    assert doc["name"] == "dv7-1211ea" and doc["supplier"] == "HP" and doc["price"] == "10995"
    lines = doc["attributes"].split("\n")
    assert "Product colour: Silver" in lines
    assert "Contrast ratio (typical): 200:1" in lines
    assert "Touchscreen: No" in lines
    assert "Processor frequency: 2.13" in lines and "Display diagonal: 17" in lines
    assert doc["text"].startswith(doc["title"] + "\n" + doc["description"] + "\nProduct type: Notebook")
    assert sum(1 for _ in chorus.docs_iter()) == 19406


def test_readable_attribute_names():
    assert readable_attribute("attr_t_product_colour") == "Product colour"
    assert readable_attribute("attr_n_thermal_design_power__tdp_") == "Thermal design power (tdp)"
    assert readable_attribute("attr_b_wi_fi") == "Wi fi"


def test_product_without_description_or_attributes():
    doc = product_to_doc({"id": "7", "title": "Cable", "name": "C1", "supplier": "X", "price": 100,
                          "ean": ["1"], "attr_n_cable_length": 1.5, "attr_b_shielded": True}, {})
    assert doc["description"] == ""
    assert doc["attributes"] == "Cable length: 1.5\nShielded: Yes"
    assert doc["text"] == "Cable\nCable length: 1.5\nShielded: Yes"


def test_irds_dataset_in_process(chorus):
    import pyterrier as pt

    from superb.data.registry import register_all

    register_all()  # idempotent: a second registration must not fail
    ds = pt.get_dataset("irds:superb/chorus")
    topics, qrels = ds.get_topics(), ds.get_qrels()
    assert list(topics.columns) == ["qid", "query"] and len(topics) == 135
    assert set(qrels.columns) >= {"qid", "docno", "label"} and len(qrels) == 3668
    corpus = ds.get_corpus_iter(verbose=False)
    first = next(iter(corpus))
    assert set(first) == {"docno", "text", *chorus.fields}
    assert len(corpus) == 19406
    import pandas as pd

    loaded = ds.text_loader(["title"])(pd.DataFrame({"qid": ["q1"], "docno": ["2101957"]}))
    assert loaded["title"].iloc[0].startswith("HP Pavilion dv7-1211ea")


def test_import_superb_data_is_enough_for_irds(home, chorus):
    chorus.docs_store()  # files already fetched into this SUPERB_HOME
    code = ("import superb.data, pyterrier as pt; ds = pt.get_dataset('irds:superb/chorus'); "
            "print(len(ds.get_topics()), len(ds.get_qrels()))")
    env = {**os.environ, "SUPERB_HOME": str(home), "SUPERB_DATA_MIRROR": str(_mirror())}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["135", "3668"]


def test_unknown_option_rejected(home):
    from superb.errors import SpecError

    with pytest.raises(SpecError, match=r"dataset\.locale.*allowed keys: \['name'\]"):
        load_dataset({"name": "chorus", "locale": "us"})
    with pytest.raises(SpecError, match=r"dataset\.locale.*allowed keys: \['name'\]"):
        load_dataset("chorus", locale="us")  # keyword options go through the same check


def test_load_dataset_by_name_is_the_spec_table_form(chorus):
    """The Python form ``load_dataset("chorus")`` gives the data set the spec form ``{"name": "chorus"}`` gives."""
    from superb.errors import SpecError

    by_name = load_dataset("chorus")
    assert by_name.fingerprint() == chorus.fingerprint()
    assert len(by_name.topics()) == 135
    with pytest.raises(SpecError, match=r"dataset\.name.*unknown data set 'chorsu'.*'chorus'"):
        load_dataset("chorsu")
    with pytest.raises(SpecError, match=r"dataset: expected a data set name such as \"chorus\" or a table"):
        load_dataset(3)
    with pytest.raises(SpecError, match=r"dataset\.name: given both"):
        load_dataset({"name": "chorus"}, name="esci")



def test_importing_the_llm_layer_registers_no_data_set():
    code = ("import sys, superb, superb.llm, superb.llm.connect; "
            "print('ir_datasets' in sys.modules, 'superb.data' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "False"]
