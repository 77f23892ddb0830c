"""Every number a README states as a result is bound to one place in a results file, and equals it.

The markup (scripts/readme_numbers.py has the details): a number is a reference-style markdown link whose text is the
number and whose target is the file, relative to the README, with a fragment naming the place:

    BM25 reaches nDCG@10 [0.5952][7] ...
    [7]: <table.csv#system=BM25&measure=nDCG@10&col=mean>

- CSV: `column=value` filters that must select exactly one row, and `col=` the column stated;
  `minus.column=value` states the difference between that row and the row with the filter changed (one column).
- JSON/TOML: `key=a/b/0/c`, a key path; a list element by index or by `field:value` (`f:v;g:w` for several).
The written number must be the value at its place rounded to the written precision (1,736 for 1736; 71% for 0.71 or
71; a written sign is compared signed, an unsigned number with |value|): one digit more or less in the last place
fails. Inside `<!-- numbers from FILES -->` ... `<!-- end numbers -->` every number must be bound (names such as
nDCG@10, 1.5B, `0-3`, "issue 9" and numbers in code spans are not numbers). README.md, results/README.md,
results/*/README.md and docs/*.md are checked.

After a results table is re-issued: `python scripts/readme_numbers.py check` names each README number that no longer
matches, with the file's current value at its place; `rebind FILE` writes those values into the README (then read the
sentence again); `bind FILE` binds the plain numbers of a block, choosing among the cells that hold the value by the
names around the number, and prints the choices to review.
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("readme_numbers", ROOT / "scripts" / "readme_numbers.py")
rn = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("readme_numbers", rn)  # dataclasses look their module up there
_spec.loader.exec_module(rn)

READMES = [p for p in rn.readmes() if p.is_file()]


def test_results_are_stated_in_bound_numbers():
    bound = [b for p in READMES for b in rn.bound_numbers(p)]
    assert len(bound) >= 300, f"only {len(bound)} README numbers are bound to a results file"
    assert any(p.name == "README.md" and p.parent.name == "results" for p in READMES), "results/README.md is missing"


@pytest.mark.parametrize("readme", READMES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_bound_number_equals_its_place(readme):
    found = rn.problems(readme)
    assert found == [], "\n".join(found)


def mutations(written: str):
    """The written number with its last digit one up and one down (9 -> 8 and 0, 0 -> 1 and 9); a bound (<0.0001) is
    mutated into a point value one up from it, 0.0002, and the bound one digit tighter, <0.0000 (a looser bound still
    holds, and 0.0001 is the rounding of a value in [0.00005, 0.0001))."""
    if written.startswith("<"):
        yield written[1:-1] + str(int(written[-1]) + 1)
        yield written[:-1] + "0"
        return
    i = max(i for i, c in enumerate(written) if c.isdigit())
    for step in (1, -1):
        yield written[:i] + str((int(written[i]) + step) % 10) + written[i + 1:]


def test_a_change_in_the_last_digit_of_any_bound_number_fails():
    """The meta-test: every binding of every README, mutated in its last digit, is rejected by the checker."""
    checked, bindings = 0, 0
    for readme in READMES:
        for b in rn.bound_numbers(readme):
            bindings += 1
            assert rn.mismatch(b) is None
            for wrong in mutations(b.written):
                assert rn.REF.fullmatch(f"[{wrong}][1]") or rn.INLINE.fullmatch(f"[{wrong}](x.csv)")
                message = rn.mismatch(rn.Bound(b.readme, b.line, wrong, b.target, b.start, b.end))
                holds = "" if b.written.startswith("<") else b.written  # a bound's value is not its written text
                assert message and f": {wrong} but the file holds {holds}" in message.replace("\u2212", "-"), (
                    f"{readme.relative_to(ROOT)}:{b.line}: {b.written} -> {wrong} is not caught ({b.target})")
                checked += 1
    assert bindings >= 300 and checked == 2 * bindings


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "table.csv").write_text(
        "system,view,measure,mean,delta\nBM25,full,nDCG@10,0.5952,\nA >> B,full,nDCG@10,0.6119,0.0167\n"
        "A >> B,condensed,nDCG@10,0.6884,0.0097\n", encoding="utf-8")
    (tmp_path / "usage.json").write_text(json.dumps({"rows": [{"name": "A", "calls": 1736}]}), encoding="utf-8")
    return tmp_path


def write(folder: Path, body: str) -> Path:
    readme = folder / "README.md"
    readme.write_text(f"<!-- numbers from x -->\n{body}\n<!-- end numbers -->\n", encoding="utf-8")
    return readme


def test_the_checker_reads_csv_rows_json_paths_and_differences(folder):
    readme = write(folder, "BM25 [0.5952][1] -> [0.6119][2] ([+0.0167][3], [+0.017][4]); [1,736][5] calls, "
                           "[0.60][6] ([61%][7]); condensed gain [+0.0765][8] over full; `top 20` and nDCG@10.\n\n"
                           "[1]: <table.csv#system=BM25&col=mean>\n"
                           "[2]: <table.csv#system=A \\>\\> B&view=full&col=mean>\n"
                           "[3]: <table.csv#system=A \\>\\> B&view=full&col=delta>\n"
                           "[4]: <table.csv#system=A \\>\\> B&view=full&col=delta>\n"
                           "[5]: <usage.json#key=rows/name:A/calls>\n"
                           "[6]: <table.csv#system=BM25&col=mean>\n"
                           "[7]: <table.csv#system=A \\>\\> B&view=full&col=mean>\n"
                           "[8]: <table.csv#system=A \\>\\> B&view=condensed&col=mean&minus.view=full>")
    assert rn.problems(readme) == []


def test_the_checker_names_the_place_and_the_current_value(folder):
    readme = write(folder, "[0.6118][1], [-0.0167][2], [0.5952][3], [0.6][4] and 12 unbound.\n\n"
                           "[1]: <table.csv#system=A \\>\\> B&view=full&col=mean>\n"
                           "[2]: <table.csv#system=A \\>\\> B&view=full&col=delta>\n"
                           "[3]: <table.csv#system=A \\>\\> B&col=mean>\n"
                           "[4]: <table.csv#system=BM25&col=median>")
    found = "\n".join(rn.problems(readme))
    assert "0.6118 but the file holds 0.6119" in found
    assert "-0.0167 but the file holds +0.0167" in found  # a written sign is compared signed
    assert "2 rows match {'system': 'A >> B'}" in found
    assert "has no column 'median'" in found
    assert "12 is in a numbers block but not bound" in found
    rn.rebind(readme)
    assert "[0.6119][1]" in readme.read_text(encoding="utf-8")


def test_bind_proposes_the_cell_the_context_names(folder, monkeypatch):
    monkeypatch.setattr(rn, "ROOT", folder)
    readme = folder / "README.md"
    readme.write_text("<!-- numbers from table.csv -->\nA >> B: 0.6119 full / 0.6884 condensed (+0.0097).\n"
                      "<!-- end numbers -->\n", encoding="utf-8")
    rn.bind(readme)
    text = readme.read_text(encoding="utf-8")
    assert re.search(r"\[0\.6884\]\[(\d+)\]", text)
    assert rn.problems(readme) == []
    assert "view=condensed&col=delta" in text


def test_a_p_value_below_its_digits_is_written_as_a_bound(folder):
    """A p-value of 0.00003 is "<0.0001", not "0.0000": the bound holds for any value under it and fails for one above;
    rebind writes the bound back when the value falls under it again."""
    (folder / "tests.csv").write_text("system,p\nA,0.00003\nB,0.0004\nC,0.0\n", encoding="utf-8")
    readme = write(folder, "[<0.0001][1] [<0.0001][2] [<0.0001][3] [<0.001][2]\n\n[1]: <tests.csv#system=A&col=p>\n"
                           "[2]: <tests.csv#system=B&col=p>\n[3]: <tests.csv#system=C&col=p>")
    found = rn.problems(readme)
    assert len(found) == 1 and "<0.0001 but the file holds 0.0004" in found[0]
    assert rn.matches(0.00003, "<0.0001") and not rn.matches(0.0001, "<0.0001") and not rn.matches(-0.00001, "<0.0001")
    assert rn.render(0.00003, "<0.001") == "<0.001" and rn.render(0.02, "<0.001") == "0.020"


def test_unbind_gives_back_the_plain_text(folder, monkeypatch):
    monkeypatch.setattr(rn, "ROOT", folder)
    readme = folder / "README.md"
    plain = "<!-- numbers from table.csv -->\nA >> B: 0.6119 full, +0.0097 condensed.\n<!-- end numbers -->\n"
    readme.write_text(plain, encoding="utf-8")
    rn.bind(readme)
    assert "[0.6119][1]" in readme.read_text(encoding="utf-8")
    rn.unbind(readme)
    assert readme.read_text(encoding="utf-8") == plain


def test_a_measured_value_in_a_code_span_is_not_exempt(folder):
    """A number with three or more decimals in a code span (`0.0327`) is a measured value written to escape the
    check (issue 34): inside a block it counts as unbound, while a constant or a command in a code span does not."""
    readme = write(folder, "H3 detects `0.0327` full; aim `tau >= 0.8`; run `superb run x.toml`; `3` calls.")
    found = rn.problems(readme)
    assert len(found) == 1 and "0.0327 is in a numbers block but not bound" in found[0]
    readme = write(folder, "BM25 reaches [0.5952](<table.csv#system=BM25&view=full&measure=nDCG@10&col=mean>).")
    assert rn.problems(readme) == []


def test_no_readme_states_a_measured_value_in_a_code_span():
    """Every README: a changed digit of a number in a code span inside a block would go unnoticed only if such a
    number could exist; none does (each is bound, or the sentence no longer states it)."""
    for readme in READMES:
        text = readme.read_text(encoding="utf-8")
        for block in rn.BLOCK.finditer(text):
            assert not rn.MEASURED_IN_CODE.search(block.group(2)), readme.relative_to(ROOT)


# ---- sign and identity, not only the magnitude (issue 46) ------------------------------------------------------
@pytest.fixture
def deltas(tmp_path):
    (tmp_path / "table.csv").write_text(
        "system,baseline,mean,delta\nA,,0.60,\nB,A,0.55,-0.0500\nC,A,0.62,0.0200\n", encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize("sentence, ok", [
    ("B against A: [0.0500][1]", False),                     # unsigned but negative: which side?
    ("B is behind A by [0.0500][1]", True),                  # the text says the side, the cell agrees
    ("A is ahead of B by [0.0500][1]", False),               # ahead, bound to B - A: the opposite sign
    ("A is ahead of B by [0.0500][2]", True),                # ahead, bound to A - B
    ("C is behind A by [0.0200][3]", False),                 # behind, but the cell says C is ahead
    ("B against A: [-0.0500][1]", True),                     # a written sign is compared signed
])
def test_an_unsigned_number_bound_to_a_cell_of_the_other_sign_fails(deltas, sentence, ok):
    readme = write(deltas, sentence + "\n\n[1]: <table.csv#system=B&col=delta>\n"
                                      "[2]: <table.csv#system=A&col=mean&minus.system=B>\n"
                                      "[3]: <table.csv#system=C&col=delta>")
    assert (rn.problems(readme) == []) is ok, rn.problems(readme)


def test_two_numbers_of_a_line_bound_to_one_place_fail(deltas):
    readme = write(deltas, "weights [0.55][1] / [0.55][2]\n\n[1]: <table.csv#system=B&col=mean>\n"
                           "[2]: <table.csv#system=B&col=mean>")
    assert any("are bound to one place" in p for p in rn.problems(readme))


def test_every_unsigned_binding_fails_when_its_cell_flips_sign(monkeypatch):
    """The meta-test for signs: each README number written without a sign, its cell's value negated, is rejected."""
    flipped = 0
    for readme in READMES:
        text = readme.read_text(encoding="utf-8")
        for b in rn.bound_numbers(readme, text):
            if b.written[:1] in "+-\u2212<":
                continue
            v = rn.value_at(b.target, readme.parent)
            if rn.wrong_sign(-v, b, text) is None and rn.style(b.written)[2] >= 0 and not rn.matches(-v, b.written):
                continue  # a value that rounds to 0 keeps no sign
            if round(abs(v), rn.style(b.written)[2] + (2 if b.written.endswith("%") else 0)) == 0:
                continue
            assert rn.wrong_sign(-v, b, text), f"{readme.relative_to(ROOT)}:{b.line}: {b.written} flipped passes"
            flipped += 1
    assert flipped >= 200


def test_results_readme_summarises_every_committed_folder():
    """results/README.md names every folder of results/ that git holds (issue 46: chorus_expansion_test was missing)."""
    import subprocess

    listed = subprocess.run(["git", "ls-files", "results"], cwd=ROOT, capture_output=True, text=True).stdout.split()
    folders = sorted({p.split("/")[1] for p in listed if p.count("/") >= 2})
    text = (ROOT / "results" / "README.md").read_text(encoding="utf-8")
    missing = [f for f in folders if f"[`{f}/`]({f}/)" not in text]
    assert folders and missing == [], f"results/README.md does not summarise {missing}"


@pytest.mark.parametrize("selector, ok", [("engine:pisa;model:bm25", True), ("engine:terrier;model:rm3", False)])
def test_a_number_bound_to_another_element_holding_the_same_value_fails(tmp_path, selector, ok):
    """Identity (issue 46: docs/spec.md bound PISA BM25's 0.573 to Terrier RM3's cell, which held 0.573 too)."""
    (tmp_path / "first_stage.json").write_text(json.dumps({"pipelines": [
        {"engine": "terrier", "model": "bm25", "nDCG@10": 0.582}, {"engine": "terrier", "model": "rm3", "nDCG@10": 0.573},
        {"engine": "pisa", "model": "bm25", "nDCG@10": 0.573}]}), encoding="utf-8")
    readme = write(tmp_path, f"BM25 nDCG@10 [0.582][1] (Terrier) vs [0.573][2] (PISA).\n\n"
                             f"[1]: <first_stage.json#key=pipelines/engine:terrier;model:bm25/nDCG@10>\n"
                             f"[2]: <first_stage.json#key=pipelines/{selector}/nDCG@10>")
    found = rn.problems(readme)
    assert (found == []) is ok, found
    if not ok:
        assert "another element of that list holds the same number" in found[0] and "model:rm3" in found[0]
