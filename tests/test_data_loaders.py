"""ESCI, WANDS, SUPERB-triplets and local loaders on small files written in the official formats."""

import json

import pandas as pd
import pytest

from superb.data import load_dataset, register_loader
from superb.errors import DataError, SpecError


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("SUPERB_HOME", str(tmp_path / "home"))


# ---- ESCI -----------------------------------------------------------------------------------------------------------
def _write_esci(folder):
    folder.mkdir(exist_ok=True)
    examples = pd.DataFrame({
        "example_id": [1, 2, 3, 4, 5, 6],
        "query": ["usb cable", "usb cable", "usb cable", "red dress", "red dress", "cable usb"],
        "query_id": [10, 10, 10, 11, 11, 12],
        "product_id": ["B01", "B02", "B03", "B04", "B01", "B01"],
        "product_locale": ["us", "us", "us", "us", "us", "es"],
        "esci_label": ["E", "S", "I", "C", "I", "E"],
        "small_version": [1, 1, 1, 0, 0, 1],
        "large_version": [1, 1, 1, 1, 1, 1],
        "split": ["test", "test", "test", "train", "train", "test"],
    })
    products = pd.DataFrame({
        "product_id": ["B01", "B02", "B03", "B04", "B01", "B99"],
        "product_title": ["USB-C cable 1m", "USB-C cable 2m", "HDMI cable", "Red summer dress", "Cable USB-C", "Mug"],
        "product_description": ["Fast charging.", None, "", "Cotton.", "Carga rapida.", "Ceramic."],
        "product_bullet_point": ["1 m\nbraided", "2 m", None, "cotton", "1 m", "350 ml"],
        "product_brand": ["Anker", "Anker", "Ugreen", None, "Anker", "Ikea"],
        "product_color": ["Black", "White", None, "Red", "Negro", "White"],
        "product_locale": ["us", "us", "us", "us", "es", "us"],
    })
    examples.to_parquet(folder / "shopping_queries_dataset_examples.parquet")
    products.to_parquet(folder / "shopping_queries_dataset_products.parquet")
    return folder


def test_esci_small_test_us(tmp_path):
    ds = load_dataset({"name": "esci", "path": str(_write_esci(tmp_path / "esci"))})
    assert ds.topics().to_dict("list") == {"qid": ["10"], "query": ["usb cable"]}
    assert sorted(map(tuple, ds.qrels().values.tolist())) == [("10", "B01", 3), ("10", "B02", 2), ("10", "B03", 0)]
    assert sorted(ds.docs_store()) == ["B01", "B02", "B03"]  # judged corpus, us locale only
    b01 = ds.doc("B01")
    assert b01["title"] == "USB-C cable 1m" and b01["brand"] == "Anker" and b01["bullets"] == "1 m\nbraided"
    assert b01["text"] == "USB-C cable 1m\nFast charging.\n1 m\nbraided\nBrand: Anker\nColor: Black"
    assert ds.doc("B03")["description"] == "" and ds.doc("B03")["color"] == ""
    assert ds.rel_threshold == 3 and ds.labels == (0, 1, 2, 3)
    assert len(ds.provenance()["files"]) == 2


def test_esci_filters(tmp_path):
    folder = _write_esci(tmp_path / "esci")
    train = load_dataset({"name": "esci", "path": str(folder), "split": "train", "small_version": False})
    assert train.qrels().set_index("docno")["label"].to_dict() == {"B04": 1, "B01": 0}
    es = load_dataset({"name": "esci", "path": str(folder), "locale": "es"})
    assert es.doc("B01")["title"] == "Cable USB-C"
    whole = load_dataset({"name": "esci", "path": str(folder), "split": "all", "small_version": False,
                          "corpus": "locale"})
    assert len(whole.topics()) == 2 and "B99" in whole.docs_store()
    # the fingerprint follows the data and options, not where the files are
    before, other = train.fingerprint(), es.fingerprint()
    moved = tmp_path / "moved"
    folder.rename(moved)
    again = load_dataset({"name": "esci", "path": str(moved), "split": "train", "small_version": False})
    assert again.fingerprint() == before != other


def test_esci_errors(tmp_path):
    with pytest.raises(SpecError, match=r"dataset\.locale.*'us', 'es', 'jp'"):
        load_dataset({"name": "esci", "path": str(_write_esci(tmp_path / "esci")), "locale": "fr"})
    with pytest.raises(SpecError, match=r"dataset\.langauge.*allowed keys"):
        load_dataset({"name": "esci", "langauge": "us"})
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match=r"shopping_queries_dataset_examples\.parquet.*amazon-science/esci-data"):
        load_dataset({"name": "esci", "path": str(tmp_path / "empty")})


# ---- WANDS ----------------------------------------------------------------------------------------------------------
def _write_wands(folder):
    folder.mkdir()
    (folder / "product.csv").write_text(
        "product_id\tproduct_name\tproduct_class\tcategory hierarchy\tproduct_description\tproduct_features\t"
        "rating_count\taverage_rating\treview_count\n"
        "0\tsolid wood platform bed\tBeds\tFurniture / Bedroom Furniture / Beds\tgood, deep sleep\t"
        "overallwidth-sidetoside:64.7|dsprimaryproductstyle:modern\t15.0\t4.5\t15.0\n"
        "1\tall-clad 7 qt . slow cooker\tSlow Cookers\tKitchen / Small Appliances\t\t\t\t\t\n")
    (folder / "query.csv").write_text("query_id\tquery\tquery_class\n0\tsalon chair\tMassage Chairs\n"
                                      "1\tsmart coffee table\tCoffee Tables\n")
    (folder / "label.csv").write_text("id\tquery_id\tproduct_id\tlabel\n0\t0\t0\tIrrelevant\n1\t1\t0\tPartial\n"
                                      "2\t1\t1\tExact\n")
    return folder


def test_wands(tmp_path):
    ds = load_dataset({"name": "wands", "path": str(_write_wands(tmp_path / "wands"))})
    assert ds.topics().to_dict("list") == {"qid": ["0", "1"], "query": ["salon chair", "smart coffee table"]}
    assert ds.qrels().to_dict("list") == {"qid": ["0", "1", "1"], "docno": ["0", "0", "1"], "label": [0, 1, 2]}
    bed = ds.doc("0")
    assert bed["category"] == "Furniture / Bedroom Furniture / Beds" and bed["class"] == "Beds"
    assert bed["features"] == "overallwidth-sidetoside: 64.7\ndsprimaryproductstyle: modern"
    assert ds.doc("1")["description"] == "" and ds.rel_threshold == 2
    assert ds.stats["docs_empty_text"] == 0


def test_wands_bad_label_and_missing_file(tmp_path):
    folder = _write_wands(tmp_path / "wands")
    (folder / "label.csv").write_text("id\tquery_id\tproduct_id\tlabel\n0\t0\t0\tMaybe\n")
    with pytest.raises(DataError, match=r"label\.csv.*'Maybe'"):
        load_dataset({"name": "wands", "path": str(folder)}).qrels()
    (folder / "query.csv").unlink()
    with pytest.raises(DataError, match=r"query\.csv.*wayfair/WANDS"):
        load_dataset({"name": "wands", "path": str(folder)})


def test_wands_comma_separated_file_is_explained(tmp_path):
    folder = _write_wands(tmp_path / "wands")
    (folder / "query.csv").write_text("query_id,query,query_class\n0,salon chair,Massage Chairs\n")
    with pytest.raises(DataError, match="tab-separated"):
        load_dataset({"name": "wands", "path": str(folder)}).topics()


# ---- SUPERB triplets ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("fmt", ["csv", "tsv", "jsonl"])
def test_triplets_formats(tmp_path, fmt):
    products = _write_esci(tmp_path / "esci") / "shopping_queries_dataset_products.parquet"
    rows = [("best usb cable", "B01", 3), ("best usb cable", "B02", 2), ("best dress for summer", "B04", 3),
            ("best usb cable", "B77", 0)]
    file = tmp_path / f"triplets.{fmt}"
    if fmt == "jsonl":
        file.write_text("".join(json.dumps({"query": q, "product_id": p, "label": l}) + "\n" for q, p, l in rows))
    else:
        sep = "," if fmt == "csv" else "\t"
        file.write_text("query,product_id,label\n".replace(",", sep) + "".join(f"{q}{sep}{p}{sep}{l}\n" for q, p, l in rows))
    ds = load_dataset({"name": "superb-triplets", "triplets": str(file), "products": str(products)})
    # qids: sorted query texts -> "best dress for summer" < "best usb cable"
    assert ds.topics().to_dict("list") == {"qid": ["q001", "q002"], "query": ["best dress for summer", "best usb cable"]}
    assert ds.qrels().to_dict("list") == {"qid": ["q002", "q002", "q001", "q002"], "docno": ["B01", "B02", "B04", "B77"],
                                          "label": [3, 2, 3, 0]}
    assert sorted(ds.docs_store()) == ["B01", "B02", "B04"]
    assert ds.stats["qrels_docno_not_in_corpus"] == 1  # B77 is not in the products file: kept, counted
    assert ds.rel_threshold == 2


def test_triplets_bad_rows(tmp_path):
    products = _write_esci(tmp_path / "esci") / "shopping_queries_dataset_products.parquet"
    bad = tmp_path / "bad.csv"
    bad.write_text("query,product_id,label\nbest mug,B99,5\n")
    with pytest.raises(DataError, match=r"not integers 0\.\.3.*5"):
        load_dataset({"name": "superb-triplets", "triplets": str(bad), "products": str(products)}).topics()
    bad.write_text("query,product_id,label\nbest mug,B99,1\nbest mug,B99,2\n")
    with pytest.raises(DataError, match=r"repeat a \(query, product_id\) pair.*'best mug'"):
        load_dataset({"name": "superb-triplets", "triplets": str(bad), "products": str(products)}).qrels()
    bad.write_text("q,pid,label\nbest mug,B99,1\n")
    with pytest.raises(DataError, match=r"missing columns \['query', 'product_id'\]"):
        load_dataset({"name": "superb-triplets", "triplets": str(bad), "products": str(products)}).qrels()
    with pytest.raises(DataError, match=r"nothere\.parquet.*products"):
        load_dataset({"name": "superb-triplets", "triplets": str(bad), "products": str(tmp_path / "nothere.parquet")})


# ---- local ----------------------------------------------------------------------------------------------------------
def _write_local(folder):
    folder.mkdir()
    docs = [{"docno": "d1", "title": "Trail running shoes", "brand": "Salomon"},
            {"docno": "d2", "title": "Road shoes", "brand": "Asics", "text": "custom text"},
            {"docno": "d3", "title": "", "brand": ""}]
    (folder / "docs.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    (folder / "queries.tsv").write_text("qid\tquery\n1\tbest trail shoes\n2\t   \n3\troad shoes\n")
    (folder / "qrels.txt").write_text("1 0 d1 2\n1 0 d2 0\n2 0 d1 1\n3 0 d2 1\n")
    return folder


def test_local(tmp_path):
    folder = _write_local(tmp_path / "local")
    ds = load_dataset({"name": "local", "docs": str(folder / "docs.jsonl"), "queries": str(folder / "queries.tsv"),
                       "qrels": str(folder / "qrels.txt"), "rel_threshold": 2})
    assert ds.fields == ("title", "brand") and ds.labels == (0, 1, 2) and ds.rel_threshold == 2
    assert ds.doc("d1")["text"] == "Trail running shoes\nSalomon"
    assert ds.doc("d2")["text"] == "custom text"
    # the empty query "2" is dropped with its qrel, and counted; the empty document is kept and counted
    assert ds.topics().to_dict("list") == {"qid": ["1", "3"], "query": ["best trail shoes", "road shoes"]}
    assert ds.qrels().to_dict("list") == {"qid": ["1", "1", "3"], "docno": ["d1", "d2", "d2"], "label": [2, 0, 1]}
    stats = ds.stats
    assert stats["queries_dropped_empty"] == 1 and stats["qrels_dropped_empty_query"] == 1
    assert stats["docs_empty_text"] == 1 and stats["docs"] == 3


def test_local_errors(tmp_path):
    folder = _write_local(tmp_path / "local")
    base = {"name": "local", "docs": str(folder / "docs.jsonl"), "queries": str(folder / "queries.tsv"),
            "qrels": str(folder / "qrels.txt")}
    with pytest.raises(SpecError, match=r"dataset\.text_fields.*\['colour'\]"):
        load_dataset({**base, "text_fields": ["colour"]})
    (folder / "qrels.txt").write_text("1 0 d1\n")
    with pytest.raises(DataError, match=r"qrels\.txt:1: expected 4 columns"):
        load_dataset(base)
    with pytest.raises(DataError, match=r"missing\.jsonl.*option `docs`"):
        load_dataset({**base, "docs": str(folder / "missing.jsonl")})
    with pytest.raises(SpecError, match=r"cfg\.docs"):
        load_dataset({"name": "local"}, path="cfg")


# ---- dispatch -------------------------------------------------------------------------------------------------------
def test_unknown_data_set_lists_known_ones():
    with pytest.raises(SpecError, match=r"dataset\.name.*'chorus'.*'esci'.*'local'.*'superb-triplets'.*'wands'"):
        load_dataset({"name": "msmarco"})
    with pytest.raises(SpecError, match=r"^spec\.dataset: expected a data set name such as \"chorus\" or a table"):
        load_dataset(["chorus"], path="spec.dataset")  # a name ("chorus") is the Python form: see test_data_chorus


def test_register_loader(tmp_path, monkeypatch):
    import superb.data

    monkeypatch.setattr(superb.data, "_LOADERS", dict(superb.data._LOADERS))  # keep the registration local
    folder = _write_local(tmp_path / "local")

    def bench(config, path):
        return load_dataset({"name": "local", "docs": str(folder / "docs.jsonl"),
                             "queries": str(folder / "queries.tsv"), "qrels": str(folder / "qrels.txt")}, path)

    register_loader("toy-bench", bench)
    assert len(load_dataset({"name": "toy-bench"}).topics()) == 2


def test_esci_filters_that_keep_no_row_are_named(tmp_path):
    """Issue 23.10: every Spanish row is in the test split; before, the empty selection surfaced as
    "queries.subset: 12 unknown qids ... valid ones look like []"."""
    ds = load_dataset({"name": "esci", "path": str(_write_esci(tmp_path / "esci")), "locale": "es", "split": "train"})
    with pytest.raises(DataError, match=r"no example row matches the data set options locale = 'es', split = "
                                        r"'train', small_version = true \(each alone keeps: locale = 'es': 1 of 6 "
                                        r"rows; split = 'train': 2 of 6 rows; small_version = true: 4 of 6 rows\)"):
        ds.topics()
