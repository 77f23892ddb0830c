"""A short name two installed packages register in the entry-point group ``superb.rerankers``, or one that shadows
superb's own type, is an error naming both, never resolved silently to one of them (issue 50)."""

from __future__ import annotations

import pytest

from plugin_lab import lab, spec
from superb.cli import main


def install(site, package: str, version: str, entries: str) -> None:
    """A distribution ``package`` in ``site`` (on sys.path) registering ``entries`` (lines ``name = module:attr``)."""
    module = site / package.replace("-", "_")
    module.mkdir(parents=True)
    (module / "__init__.py").write_text("import pyterrier as pt\n\n\ndef make() -> pt.Transformer:\n"
                                        "    return pt.apply.doc_score(lambda row: 1.0)\n", encoding="utf-8")
    info = site / f"{package.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {package}\nVersion: {version}\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(f"[superb.rerankers]\n{entries}\n", encoding="utf-8")


@pytest.fixture()
def site(tmp_path, monkeypatch):
    lab(tmp_path, monkeypatch)
    found = tmp_path / "site"
    install(found, "fast-rankers", "1.0", "grade = fast_rankers:make\npointwise = fast_rankers:make")
    install(found, "slow-rankers", "2.1", "grade = slow_rankers:make")
    monkeypatch.syspath_prepend(str(found))
    return tmp_path


@pytest.mark.parametrize("type_name, message", [
    ("grade", "type 'grade' is registered by several installed packages: fast-rankers 1.0 (fast_rankers:make) and "
              "slow-rankers 2.1 (slow_rankers:make); superb does not pick one"),
    ("pointwise", "type 'pointwise' is superb's own (superb.transformers.pointwise:PointwiseReranker) and is also "
                  "registered by fast-rankers 1.0 (fast_rankers:make)"),
])
def test_a_name_claimed_twice_is_an_error_naming_both_packages(site, capsys, type_name, message):
    path = spec(site, "claimed", [f'{{ type = "{type_name}" }}'])
    assert main(["run", str(path), "--out", str(site / "out"), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert f"pipelines[1].rerank[0].type: {message}" in err, err
    assert "Traceback" not in err


def test_a_name_one_package_claims_is_its_stage(site):
    install(site / "site", "one-ranker", "0.1", "lengthy = one_ranker:make")
    path = spec(site, "single", ['{ type = "lengthy" }'])
    assert main(["run", str(path), "--out", str(site / "out")]) == 0
