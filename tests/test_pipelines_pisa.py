"""What only the PISA first stage does: a failed build on a bad docno. The behaviour shared with Terrier is tested
for both engines in test_pipelines_engines.py."""

from __future__ import annotations

import pytest

from superb.errors import DataError
from superb.pipelines import first_stage
from test_pipelines_corpus import PRODUCTS, TinyProducts


def test_a_failed_build_leaves_no_index_and_a_later_build_succeeds(tmp_path, monkeypatch):
    monkeypatch.setenv("SUPERB_HOME", str(tmp_path))
    broken = TinyProducts(name="broken", products=PRODUCTS[:5] + [("bad id", "x", "y", "z", 1.0)] + PRODUCTS[5:])
    with pytest.raises(DataError, match="'bad id' contains whitespace"):
        first_stage(broken, engine="pisa").prepare()
    assert list((tmp_path / "indexes" / "broken").iterdir()) == []  # the half-written tmp folder is gone
    fixed = TinyProducts(name="broken")
    assert first_stage(fixed, engine="pisa").prepare().info["num_docs"] == len(PRODUCTS)
