"""RM3 query expansion as a pure function over term counts (used by the PISA first stage; Terrier has its own).

Given the original query terms q, feedback documents D (the top ``fb_docs`` of a first BM25 pass) with term counts
tf(t, d), lengths |d| = sum_t tf(t, d) and retrieval scores s_d:

    document weight     w_d    = s_d / sum_{d' in D} s_d'            (normalised scores; uniform if all are <= 0)
    relevance model     P(t|R) = sum_{d in D} w_d * tf(t, d) / |d|  (RM1; stopwords excluded from t)
    top terms           T      = the ``fb_terms`` terms with the largest P(t|R); P(t|R) renormalised over T
    original query      P(t|q) = count(t, q) / |q|
    expanded query      w(t)   = fb_lambda * P(t|q) + (1 - fb_lambda) * P(t|R)

so ``fb_lambda`` is the weight kept by the original query (Terrier's and Anserini's convention). Ties between
candidate terms are broken by the term string, so the expansion is deterministic.
"""

from __future__ import annotations

from collections import Counter
from typing import Iterable, Mapping, Sequence


def relevance_model(
    feedback: Sequence[tuple[Mapping[str, int], float]],
    *,
    fb_terms: int,
    exclude: Iterable[str] = (),
) -> dict[str, float]:
    """P(t|R) over the ``fb_terms`` best terms, renormalised to sum to 1 (``{}`` without usable feedback)."""
    excluded = set(exclude)
    docs = [(counts, score) for counts, score in feedback if sum(counts.values()) > 0]
    if not docs or fb_terms < 1:
        return {}
    scores = [max(float(score), 0.0) for _, score in docs]
    total = sum(scores)
    weights = [s / total for s in scores] if total > 0 else [1.0 / len(docs)] * len(docs)
    model: Counter = Counter()
    for (counts, _), weight in zip(docs, weights):
        length = sum(counts.values())
        for term, tf in counts.items():
            if term not in excluded and tf > 0:
                model[term] += weight * tf / length
    best = sorted(model.items(), key=lambda item: (-item[1], item[0]))[:fb_terms]
    mass = sum(p for _, p in best)
    return {term: p / mass for term, p in best} if mass > 0 else {}


def rm3_expansion(
    query_terms: Sequence[str],
    feedback: Sequence[tuple[Mapping[str, int], float]],
    *,
    fb_terms: int,
    fb_lambda: float,
    exclude: Iterable[str] = (),
) -> dict[str, float]:
    """The RM3 query: term -> weight, summing to 1. Without feedback it is the original query distribution."""
    counts = Counter(query_terms)
    length = sum(counts.values())
    original = {t: c / length for t, c in counts.items()} if length else {}
    expansion = relevance_model(feedback, fb_terms=fb_terms, exclude=exclude)
    if not expansion:
        return original
    if not original:
        return expansion
    terms = set(original) | set(expansion)
    return {t: fb_lambda * original.get(t, 0.0) + (1.0 - fb_lambda) * expansion.get(t, 0.0) for t in sorted(terms)}
