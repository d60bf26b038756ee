"""BM25 tokenization (stemming, stopwords) and reciprocal-rank fusion, checked by hand."""

from __future__ import annotations

import pytest

from ragassay.search.fusion import reciprocal_rank_fusion
from ragassay.search.lexical import LexicalIndex, tokenize


def test_stemming_matches_plural_and_inflections():
    assert tokenize(["agents", "agent"]) == [["agent"], ["agent"]]
    assert tokenize(["Swarming colonies swarmed"])[0] == ["swarm", "coloni", "swarm"]


def test_stopwords_and_case_are_removed():
    assert tokenize(["The Queen AND the drones"])[0] == ["queen", "drone"]


def test_bm25_finds_the_stemmed_document_and_scores_others_zero(tmp_path):
    texts = ["An agent inspects the hive.", "Beeswax melts at 63 degrees.", "Smoke calms the bees."]
    index = LexicalIndex.build(texts)
    index.save(tmp_path / "bm25")
    reloaded = LexicalIndex.load(tmp_path / "bm25", size=3)
    scores = reloaded.scores("agents")
    assert scores[0] > 0 and scores[1] == 0 and scores[2] == 0
    assert list(reloaded.scores("the of and")) == [0, 0, 0]
    assert list(reloaded.scores("unknownword")) == [0, 0, 0]


def test_empty_index_scores_nothing(tmp_path):
    index = LexicalIndex.build([])
    index.save(tmp_path / "bm25")
    assert len(LexicalIndex.load(tmp_path / "bm25", size=0).scores("bees")) == 0


def test_rrf_matches_the_formula():
    fused = dict(reciprocal_rank_fusion([["a", "b", "c"], ["c", "a"]], k=60))
    assert fused["a"] == pytest.approx(1 / 61 + 1 / 62)
    assert fused["b"] == pytest.approx(1 / 62)
    assert fused["c"] == pytest.approx(1 / 63 + 1 / 61)


def test_rrf_orders_best_first_and_breaks_ties_by_first_appearance():
    ranking = [item for item, _ in reciprocal_rank_fusion([["x", "y"], ["y", "x"]], k=10)]
    assert ranking == ["x", "y"]


def test_rrf_refuses_k_below_one():
    with pytest.raises(ValueError):
        reciprocal_rank_fusion([["a"]], k=0)
