"""Which passages a statement is judged against, in which order. Pure: no model is called here.

A statement's support over several passages is the highest of its verdicts against the passages
asked (judge/judge.py, Judge.support_by_passage). Most statements are supported by the passage
that shares their words, so that passage is asked first; the next is asked only when it does not
support the statement, and only a passage that shares at least MIN_RELATIVE_SIMILARITY of the
first one's similarity, MAX_PASSAGES_ASKED at most. Both were chosen on MEMERAG-EXT's development
half from every passage's measured verdict (benchmarks/bench_judge_selection.py choose;
BENCHMARKS.md, "Cheaper verdicts"): the fewest calls at which, replayed, neither AUC nor balanced
accuracy fell below asking every passage (run for real, AUC was 0.008 lower).
"""

from __future__ import annotations

import math

from ragassay.search.lexical import tokenize

MAX_PASSAGES_ASKED = 3
MIN_RELATIVE_SIMILARITY = 0.5


def lexical_similarity(statement: str, passages: list[str]) -> list[float]:
    """Each passage's share of the statement's terms (lower-cased, stopwords removed, stemmed as the
    lexical index reads text), each term weighted by its inverse document frequency over these
    passages:

        similarity(s, p) = sum_{t in T(s) ∩ T(p)} idf(t) / sum_{t in T(s)} idf(t),
        idf(t) = ln(1 + N / df(t)), N = number of passages, df(t) = passages holding t (at least 1)

    so a name or number of the statement weighs more than a word every passage repeats. 0 for
    every passage when the statement has no terms."""
    statement_terms, *passage_terms = (set(tokens) for tokens in tokenize([statement, *passages]))
    weights = {
        term: math.log(1 + len(passages) / max(sum(term in terms for terms in passage_terms), 1))
        for term in statement_terms
    }
    # fsum: exact whatever order the terms come in (a set's order changes with Python's hash seed,
    # and a plain sum's last bit with it, which would break near ties differently run to run).
    total = math.fsum(weights.values())
    if total == 0:
        return [0.0] * len(passages)
    return [math.fsum(weight for term, weight in weights.items() if term in terms) / total for terms in passage_terms]


def most_similar_first(statement: str, passages: list[str]) -> list[int]:
    """The passages' positions, most lexically similar to the statement first; ties in the order
    the passages were given (their retrieval rank)."""
    similarity = lexical_similarity(statement, passages)
    return sorted(range(len(passages)), key=lambda position: (-similarity[position], position))


def passages_to_ask(statement: str, passages: list[str]) -> list[int]:
    """The positions of the passages a statement may be judged against, in the order they are
    asked: most similar first, then those at least MIN_RELATIVE_SIMILARITY times as similar as
    the first, MAX_PASSAGES_ASKED in all. Every passage is a candidate when none shares a term."""
    similarity = lexical_similarity(statement, passages)
    order = sorted(range(len(passages)), key=lambda position: (-similarity[position], position))
    first = similarity[order[0]] if order else 0.0
    close = [position for position in order if similarity[position] >= MIN_RELATIVE_SIMILARITY * first]
    return close[:MAX_PASSAGES_ASKED]
