"""Pure parsing of model outputs: permutations (hand cases + properties over arbitrary strings), labels, logprobs."""

import math
from types import SimpleNamespace

from hypothesis import given, settings
from hypothesis import strategies as st

from superb.llm.parsing import (
    LABEL_TOKENS,
    YES_NO_TOKENS,
    first_distribution,
    parse_confidence,
    parse_label,
    parse_permutation,
    parse_yes_no,
    token_distribution,
)


def test_clean_answer():
    order, repairs = parse_permutation("[3] > [1] > [2]", 3)
    assert order == [2, 0, 1]
    assert sum(repairs.values()) == 0


def test_duplicates_unknown_and_missing_are_repaired_and_counted():
    order, repairs = parse_permutation("[2] > [2] > [9] > [4] > [0]", 4)
    # 2 kept once, 9 and 0 unknown, 4 kept; 1 and 3 appended in prior order
    assert order == [1, 3, 0, 2]
    assert repairs == {"duplicate": 1, "unknown_id": 2, "missing": 2}


def test_unbracketed_numbers_are_read():
    order, repairs = parse_permutation("2 > 3 > 1", 3)
    assert order == [1, 2, 0]
    assert repairs["unbracketed"] == 1


def test_empty_or_chatty_answer_keeps_prior_order():
    order, repairs = parse_permutation("I cannot rank these products.", 3)
    assert order == [0, 1, 2]
    assert repairs == {"empty": 1}
    assert parse_permutation("", 0) == ([], {})


def test_huge_numbers_do_not_crash():
    order, repairs = parse_permutation("[99999999999999999999] > [1]", 2)
    assert order == [0, 1] and repairs["unknown_id"] == 1 and repairs["missing"] == 1


@settings(max_examples=300, deadline=None)
@given(text=st.text(), n=st.integers(min_value=0, max_value=30))
def test_any_text_gives_a_permutation(text, n):
    order, repairs = parse_permutation(text, n)
    assert sorted(order) == list(range(n))
    assert all(v > 0 for v in repairs.values())


@settings(max_examples=200, deadline=None)
@given(ids=st.lists(st.integers(min_value=-3, max_value=40), max_size=40), n=st.integers(min_value=1, max_value=25),
       sep=st.sampled_from([" > ", ">", ", ", " ", "\n"]))
def test_answer_shaped_text_gives_a_permutation_in_stated_order(ids, n, sep):
    text = sep.join(f"[{i}]" for i in ids)
    order, _ = parse_permutation(text, n)
    assert sorted(order) == list(range(n))
    stated = []
    for i in ids:
        if 1 <= i <= n and i - 1 not in stated:
            stated.append(i - 1)
    assert order[: len(stated)] == stated


def test_labels_yes_no_confidence():
    assert parse_label(" 2") == 2
    assert parse_label("Grade: 3 (excellent)") == 3
    assert parse_label("12 or 7 or 1") == 1  # multi-digit numbers and out-of-scale digits are skipped
    assert parse_label("none") is None
    assert parse_yes_no(" Yes.") is True and parse_yes_no("no, it is a case") is False
    assert parse_yes_no("maybe") is None
    assert parse_confidence("2\nConfidence: 80%") == 0.8
    assert parse_confidence("confidence 0.65") == 0.65
    assert parse_confidence("2") is None


def test_token_distribution_renormalises_and_merges_variants():
    top = {"3": math.log(0.4), " 3": math.log(0.1), "2": math.log(0.25), "The": math.log(0.25)}
    dist = token_distribution(top, LABEL_TOKENS)
    # label mass: 3 -> 0.5, 2 -> 0.25; renormalised over 0.75
    assert math.isclose(dist[3], 2 / 3) and math.isclose(dist[2], 1 / 3)
    assert token_distribution({"The": -0.1}, LABEL_TOKENS) is None
    yn = token_distribution({"Yes": math.log(0.3), "no": math.log(0.1)}, YES_NO_TOKENS)
    assert math.isclose(yn[True], 0.75)


def test_first_distribution_skips_positions_without_answers():
    pos = [SimpleNamespace(token="\n", logprob=-0.1, top={"\n": -0.1, "Grade": -3.0}),
           SimpleNamespace(token="1", logprob=math.log(0.5), top={"2": math.log(0.5)})]
    dist, at = first_distribution(pos, LABEL_TOKENS)
    assert at == 1 and math.isclose(dist[1], 0.5) and math.isclose(dist[2], 0.5)
    assert first_distribution(None, LABEL_TOKENS) == (None, -1)


# ---- letter labels (pairwise, setwise, listwise by likelihood) -----------------------------------------------------

from superb.llm.parsing import (  # noqa: E402
    LETTERS, first_letter_distribution, letter_distribution, letter_of, parse_letter,
)


def test_letter_token_variants_read_as_the_letter():
    ab = ("A", "B")
    for token in ("A", " A", "[A", "**A", "(A", "A.", "A)", "A:", "\nA", "'A'", "A>"):
        assert letter_of(token, ab) == "A", token
    for token in ("a", "AB", "C", "Answer", "", " ", "1"):
        assert letter_of(token, ab) is None, token


def test_letter_distribution_merges_variants_and_reports_the_mass():
    top = {"A": math.log(0.3), " A": math.log(0.1), "[B": math.log(0.2), "The": math.log(0.4)}
    dist, mass = letter_distribution(top, ("A", "B", "C"))
    # A: 0.4, B: 0.2, C absent -> 0; renormalised over 0.6
    assert math.isclose(dist["A"], 2 / 3) and math.isclose(dist["B"], 1 / 3) and dist["C"] == 0.0
    assert math.isclose(mass, 0.6)


def test_letter_distribution_all_mass_outside_the_labels():
    assert letter_distribution({"The": -0.1, "Product": -2.5, "a": -3.0}, ("A", "B")) == (None, 0.0)
    assert letter_distribution({}, ("A", "B")) == (None, 0.0)
    # non-finite logprobs are ignored, not summed
    assert letter_distribution({"A": float("-inf"), "B": float("nan")}, ("A", "B")) == (None, 0.0)


def test_first_letter_distribution_reads_only_the_first_position():
    pos = [SimpleNamespace(token="**", logprob=-0.1, top={"**": -0.1}),
           SimpleNamespace(token="B", logprob=-0.1, top={"B": -0.1})]
    assert first_letter_distribution(pos, ("A", "B")) == (None, 0.0)  # the letter written second is not the answer
    only_chosen = [SimpleNamespace(token=" B", logprob=math.log(0.9), top={})]
    dist, mass = first_letter_distribution(only_chosen, ("A", "B"))
    assert dist == {"A": 0.0, "B": 1.0} and math.isclose(mass, 0.9)
    assert first_letter_distribution(None, ("A",)) == (None, 0.0)


def test_parse_letter_from_generated_text():
    abc = LETTERS[:3]
    assert [parse_letter(t, abc) for t in ("B", "**C**", "[A]", "Product B", "answer: c", "(A) because", "C > A")] \
        == ["B", "C", "A", "B", "C", "A", "C"]
    assert [parse_letter(t, abc) for t in ("", None, "D", "a", "ABC", "The first one", "1")] == [None] * 7


@settings(max_examples=200, deadline=None)
@given(top=st.dictionaries(st.text(max_size=4), st.floats(allow_nan=True, allow_infinity=True), max_size=25),
       n=st.integers(1, 20))
def test_letter_distribution_is_a_distribution_or_none(top, n):
    dist, mass = letter_distribution(top, LETTERS[:n])
    if dist is None:
        assert mass == 0.0
    else:
        assert set(dist) == set(LETTERS[:n]) and math.isclose(sum(dist.values()), 1.0)
        assert all(0.0 <= p <= 1.0 for p in dist.values()) and 0.0 < mass <= 1.0
