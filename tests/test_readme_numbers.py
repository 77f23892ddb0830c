"""Numbers in README.md and results/*/README.md come from the results files.

A README states results inside marked blocks that name their sources:

    <!-- numbers from results/chorus_pointwise/table.csv results/chorus_pointwise/usage.csv -->
    ... nDCG@10 0.596 -> 0.623 (p = 0.0060) ...
    <!-- end numbers -->

Every number written in a block (not those inside names such as nDCG@10, 1.5B or P(rel=2)@5) must be found in one
of the named files at the precision it is written with: 0.623 matches 0.62317..., 1,736 matches 1736, 71% matches
0.709 or 71. A re-run that changes a table without its README fails here. Paths are relative to the repository.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
READMES = [ROOT / "README.md", *sorted((ROOT / "results").glob("*/README.md"))]
BLOCK = re.compile(r"<!-- numbers from (.+?) -->\n(.*?)<!-- end numbers -->", re.S)
# a number standing alone: not part of a name (nDCG@10, P(rel=2), 1.5B, Qwen2.5, MiniLM-L6, 0-3), maybe signed, maybe %
WRITTEN = re.compile(r"(?<![\w@.=/^\-])[+\-\u2212]?(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(%?)(?![\w@]|\.\d)")
IN_FILE = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


def blocks():
    for readme in READMES:
        text = readme.read_text(encoding="utf-8")
        for m in BLOCK.finditer(text):
            line = text[: m.start()].count("\n") + 1
            yield pytest.param(readme, m.group(1).split(), m.group(2), id=f"{readme.relative_to(ROOT)}:{line}")


def file_values(paths: list[str]) -> list[float]:
    values = []
    for p in paths:
        path = ROOT / p
        assert path.is_file(), f"the block names {p}, which does not exist"
        values += [abs(float(x)) for x in IN_FILE.findall(path.read_text(encoding="utf-8"))]
    return values


def found(token: re.Match, values: list[float]) -> bool:
    whole, decimals, percent = token.group(1).replace(",", ""), token.group(2) or "", token.group(3)
    x = float(whole + decimals)
    tolerance = 0.5 * 10 ** -(len(decimals) - 1 if decimals else 0) + 1e-9
    candidates = [x, x / 100] if percent else [x]
    scale = [tolerance, tolerance / 100] if percent else [tolerance]
    return any(abs(v - c) <= t for v in values for c, t in zip(candidates, scale))


def test_every_readme_states_its_results_in_checked_blocks():
    assert len(list(blocks())) >= 8, "README.md and the results READMEs mark their numbers"


@pytest.mark.parametrize("readme, sources, text", list(blocks()))
def test_numbers_are_in_the_named_files(readme, sources, text):
    values = file_values(sources)
    missing = [t.group(0) for t in WRITTEN.finditer(text) if not found(t, values)]
    assert missing == [], f"{readme.name}: {missing} are not in {sources}"


def test_the_checker_finds_a_wrong_number(tmp_path):
    good, bad = "nDCG@10 0.596 -> 0.623 (1,736 requests, 71%)", "1,008 requests"
    values = [0.5961, 0.6232, 1736.0, 0.709]
    assert all(found(t, values) for t in WRITTEN.finditer(good))
    assert [t.group(0) for t in WRITTEN.finditer(bad) if not found(t, values)] == ["1,008"]
    assert [t.group(0) for t in WRITTEN.finditer("P(rel=2)@10 on the 1.5B and Qwen2.5 with 0-3 labels")] == ["0"]
