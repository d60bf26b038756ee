"""LLM reranking: the ordering rule by hand, then the real SmolLM2 through search and evaluation."""

from __future__ import annotations

import pytest

from ragassay.config import RetrievalEvalConfig
from ragassay.config_errors import parse_config
from ragassay.resources import Resources
from ragassay.search.rerank import rerank_order
from ragassay.search.run import run_search
from ragassay.search.settings import SearchSettings


def test_passages_are_ordered_by_score_with_fused_order_breaking_ties():
    assert rerank_order([3, 9, 3, 10]) == [3, 1, 0, 2]


def test_an_unreadable_score_keeps_the_fused_order():
    assert rerank_order([5, None, 7]) is None


@pytest.mark.slow
def test_search_with_the_llm_reranker_scores_each_candidate_and_keeps_k(sample_home):
    question = "How do I check a colony for varroa mites?"
    fused = run_search(Resources(), sample_home, ["sample"], question, SearchSettings(search_type="hybrid"), 3).hits
    result = run_search(
        Resources(),
        sample_home,
        ["sample"],
        question,
        SearchSettings(search_type="hybrid", rerank="llm", rerank_candidates=3),
        2,
    )
    reranked, usage, stats = result.hits, result.usage, result.rerank
    assert len(reranked) == 2 and [h.rank for h in reranked] == [1, 2]
    assert {h.doc_id for h in reranked} <= {h.doc_id for h in fused}
    assert stats.queries == 1 and usage.calls >= 3
    if stats.fallbacks:
        assert [h.doc_id for h in reranked] == [h.doc_id for h in fused[:2]]
    else:
        assert all(0 <= h.score <= 10 for h in reranked)


@pytest.mark.slow
@pytest.mark.flows
def test_a_reranked_configuration_logs_its_model_cost_and_fallbacks(sample_home):
    from flows.eval_retrieval import eval_retrieval_flow
    from ragassay.golden.store import add_from_file
    from tests.conftest import SAMPLE

    add_from_file(sample_home, "sample", SAMPLE / "golden.jsonl")
    config = parse_config(
        RetrievalEvalConfig,
        collections=["sample"],
        configurations=[{"label": "hybrid-llm", "search_type": "hybrid", "rerank": "llm", "rerank_candidates": 3}],
        ks=[1, 3],
        max_questions=2,
        home=sample_home,
    )
    report = eval_retrieval_flow(config)
    costs = report.model_costs["hybrid-llm"]
    assert costs["rerank_queries"] == 2 and costs["model_calls"] >= 6
    assert costs["rerank_fallbacks"] <= 2 and report.questions == 2
