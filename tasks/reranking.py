"""LLM reranking: the chat model scores each of the top fused passages 0-10 for the query.

Rule: passages are reordered by score (best first; equal scores keep their fused order). If the
model's answer for any passage of a query cannot be read, that query keeps its fused order, and
the fallback is counted: a partial reordering would mix scored and unscored passages.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, Field

from tasks.models import few_shot_messages, one_line

RERANK_PROMPT_VERSION = "rerank-0-10/1"


class RelevanceScore(BaseModel):
    """How well the passage answers the query: 0 (not at all) to 10 (fully)."""

    score: int = Field(ge=0, le=10)


@dataclass
class RerankStats:
    """Queries reranked, queries that fell back to the fused order, and unreadable passage scores."""

    queries: int = 0
    fallbacks: int = 0
    unreadable_scores: int = 0

    def as_metrics(self) -> dict[str, float]:
        return {"rerank_queries": self.queries, "rerank_fallbacks": self.fallbacks, "rerank_unreadable_scores": self.unreadable_scores}


def rerank_messages(query: str, passage: str) -> list[dict]:
    """The prompt (version RERANK_PROMPT_VERSION) that scores one passage for one query."""
    return few_shot_messages(
        "Rate how well the passage answers the query, from 0 (unrelated) to 10 (answers it fully). "
        'Reply as JSON: {"score": <0-10>}.',
        [
            ("Query: At what temperature does beeswax melt?\nPassage: Beeswax melts between 62 and 64 degrees.", '{"score": 10}'),
            ("Query: At what temperature does beeswax melt?\nPassage: Smoke calms guard bees.", '{"score": 0}'),
        ],
        f"Query: {query}\nPassage: {one_line(passage)}",
    )


def rerank_order(scores: list[int | None]) -> list[int] | None:
    """Positions of the passages in reranked order, or None (keep the fused order) when any
    score is missing."""
    if any(score is None for score in scores):
        return None
    return sorted(range(len(scores)), key=lambda position: (-scores[position], position))
