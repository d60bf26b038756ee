"""BM25 tokenization (stemming, stopwords) and reciprocal-rank fusion, checked by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragassay.search.fusion import reciprocal_rank_fusion
from ragassay.search.lexical import LexicalIndex, tokenize

ROOT = Path(__file__).resolve().parents[2]


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


def test_batched_token_ids_index_as_bm25s_indexes_token_lists():
    """The build tokenizes into int32 ids a batch at a time, each batch numbering its tokens anew:
    the scores must equal bm25s indexing the whole corpus's token lists at once."""
    import bm25s
    import numpy as np
    import polars as pl

    texts = [path.read_text(encoding="utf-8") for path in sorted((ROOT / "data" / "sample" / "corpus").rglob("*.md"))]
    texts += ["", "the and of", "Swarming colonies swarmed; agents inspect hives."]
    queries = tokenize(["swarm agents", "queen honey wax", "the", "unknownword", "varroa mites treatment"])
    whole = bm25s.BM25()
    whole.index(tokenize(texts), show_progress=False)
    batched = LexicalIndex.build(pl.Series(texts), tokenize_batch=3)  # several batches, with tokens new to each
    expected = LexicalIndex(whole, len(texts)).scores_for_tokens(queries)
    assert np.array_equal(batched.scores_for_tokens(queries), expected) and (expected > 0).sum() > len(texts)


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
