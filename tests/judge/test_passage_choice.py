"""Which passage a statement is judged against first (judge/passage_choice.py): the formula by
hand, and the order of ties."""

from __future__ import annotations

import math

import pytest

from ragassay.judge.passage_choice import (
    MAX_PASSAGES_ASKED,
    MIN_RELATIVE_SIMILARITY,
    lexical_similarity,
    most_similar_first,
    passages_to_ask,
)


def test_lexical_similarity_is_the_idf_weighted_share_of_the_statements_terms():
    passages = [
        "The queen lays eggs in the brood comb.",
        "Drones are male bees; they do not lay eggs.",
        "Propolis seals the hive.",
    ]
    # Statement terms after stopwords and stemming: queen, lay, egg. "lay" (lays, lay) and "egg"
    # are in passages 0 and 1 (df 2), "queen" only in passage 0 (df 1).
    rare, common = math.log(1 + 3 / 1), math.log(1 + 3 / 2)
    total = rare + 2 * common
    similarity = lexical_similarity("A queen lays eggs.", passages)
    assert similarity == pytest.approx([1.0, 2 * common / total, 0.0])
    assert most_similar_first("A queen lays eggs.", passages) == [0, 1, 2]


def test_ties_keep_the_retrieval_order_and_a_statement_without_terms_scores_zero():
    passages = ["Bees make honey.", "Honey bees.", "Wax."]
    assert most_similar_first("honey bees", passages) == [0, 1, 2]
    assert lexical_similarity("It is.", passages) == [0.0, 0.0, 0.0]
    assert most_similar_first("It is.", passages) == [0, 1, 2]


def test_passages_far_less_similar_than_the_first_are_not_asked():
    passages = [
        "Propolis seals the hive.",
        "The queen lays eggs in the brood comb.",
        "Drones do not lay eggs.",
        "Queen cells hang from the comb; the queen lays eggs.",
        "The queen lays eggs; the queen is fed royal jelly.",
    ]
    similarity = lexical_similarity("A queen lays eggs.", passages)
    order = passages_to_ask("A queen lays eggs.", passages)
    assert 0 not in order, "a passage sharing nothing with the statement is never asked"
    assert len(order) <= MAX_PASSAGES_ASKED and order[0] == max(range(5), key=lambda i: (similarity[i], -i))
    assert all(similarity[i] >= MIN_RELATIVE_SIMILARITY * similarity[order[0]] for i in order)
    assert passages_to_ask("It is.", passages) == [0, 1, 2][:MAX_PASSAGES_ASKED], "no shared term: retrieval order"
