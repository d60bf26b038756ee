"""Retrieval evaluation: golden questions searched under one configuration and scored per
question. Averaging is metrics/averaging.py's, comparing configurations metrics/significance.py's;
questions without expected documents never reach this module.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import polars as pl

from ragassay.config import RetrievalConfiguration
from ragassay.evaluation.questions import DocKey, EvalQuestion
from ragassay.llm.settings import ChatModelConfig
from ragassay.llm.structured import Usage
from ragassay.metrics.names import MetricName
from ragassay.metrics.retrieval import judge_run
from ragassay.progress import ProgressReporter
from ragassay.resources import Resources
from ragassay.run_warnings import RunWarning
from ragassay.search.followups import Exchange, search_query
from ragassay.search.rerank import RerankStats
from ragassay.search.run import rank_queries, run_search
from ragassay.store.schemas import RUN, per_question_spec


@dataclass(frozen=True)
class SearchedConfiguration:
    """Every question's ranking under one configuration, the run as a table, what reranking cost
    (empty without reranking) and the seconds searching took. A system under test also says which
    questions it answered (the others count in no metric), what it noticed, and its records."""

    rankings: list[list[DocKey]]
    run: pl.DataFrame
    costs: dict[str, float]
    seconds: float
    answered: list[bool] | None = None
    warnings: list = field(default_factory=list)
    records: list | None = None
    # What each question searched (a follow-up with its conversation); None: the questions as written.
    queries: list[str] | None = None


def search_questions(
    resources: Resources,
    home: Path,
    collections: tuple[str, ...],
    questions: list[EvalQuestion],
    configuration: RetrievalConfiguration,
    depth: int,
) -> SearchedConfiguration:
    """Each question ranked as `ragassay search` ranks it, with the configuration's settings, at
    the evaluation's max rank: all questions in one batch (search/run.rank_queries), or one by one through
    run_search when the configuration reranks. A dialogue's follow-up searches with its earlier
    questions as the configuration's `followup_query` says (search/followups.py)."""
    started = time.perf_counter()
    queries, usage = followup_queries(resources, home, questions, configuration)
    rerank = RerankStats()
    ranked: list[list[tuple[DocKey, float]]] = []
    with ProgressReporter(
        f"searching {len(questions)} questions ({configuration.label})", total=len(questions)
    ) as progress:
        if configuration.rerank == "off":
            # All questions at once: one tokenization, one batched embedding call, scores by block.
            ranked = rank_queries(resources, home, list(collections), queries, configuration, depth, progress)
        else:
            for done, query in enumerate(queries, start=1):
                result = run_search(resources, home, list(collections), query, configuration, depth)
                usage, rerank = usage + result.usage, rerank + result.rerank
                ranked.append([((hit.collection, hit.doc_id), hit.score) for hit in result.hits])
                progress(done, len(questions))
    rankings = [[key for key, _ in ranking] for ranking in ranked]
    # Model calls (reranking, rewriting follow-ups) are costs; a search without them has none.
    costs = usage.as_metrics() if configuration.rerank != "off" or configuration.followup_query == "rewrite" else {}
    if configuration.rerank != "off":
        costs |= rerank.as_metrics()
    # A fallback is never silent: the questions keep their fused order, and the run says so.
    warnings = (
        [RunWarning(configuration=configuration.label, reason=rerank.fallback_reason())] if rerank.fallbacks else []
    )
    return SearchedConfiguration(
        rankings,
        run_table(configuration.label, questions, ranked),
        costs,
        round(time.perf_counter() - started, 3),
        warnings=warnings,
        queries=queries,
    )


def followup_queries(
    resources: Resources, home: Path, questions: list[EvalQuestion], configuration: RetrievalConfiguration
) -> tuple[list[str], Usage]:
    """What each question searches (search/followups.search_query: a follow-up with its dialogue's
    earlier questions; a retrieval evaluation has no answers to show a rewrite), and what
    rewriting cost."""
    model = (
        resources.chat_model(configuration.rewrite_model or ChatModelConfig(), home)
        if configuration.followup_query == "rewrite" and any(q.history for q in questions)
        else None
    )
    made = [
        search_query(configuration.followup_query, [Exchange(asked) for asked in q.history], q.question, model)
        for q in questions
    ]
    return [query.text for query in made], Usage.total(query.usage for query in made)


def run_table(label: str, questions: list[EvalQuestion], ranked: list[list[tuple[DocKey, float]]]) -> pl.DataFrame:
    """The run as stored: one row per question and rank. Built column by column, as rows of
    dicts took as long as the search itself (30,000 rows for SciFact at depth 100)."""
    lengths = np.array([len(ranking) for ranking in ranked], dtype=np.int64)
    owner = np.repeat(np.arange(len(questions)), lengths)
    first_row = np.repeat(np.cumsum(lengths) - lengths, lengths)
    pairs = list(itertools.chain.from_iterable(ranked))
    return pl.DataFrame(
        {
            "configuration": pl.repeat(label, len(pairs), dtype=pl.String, eager=True),
            "query_collection": pl.Series([q.query_collection for q in questions], dtype=pl.String).gather(owner),
            "query_id": pl.Series([q.query_id for q in questions], dtype=pl.String).gather(owner),
            "collection": [key[0] for key, _ in pairs],
            "doc_id": [key[1] for key, _ in pairs],
            "rank": np.arange(len(pairs)) - first_row + 1,
            "score": [score for _, score in pairs],
        },
        schema=RUN.schema,
    )


def score_rankings(
    questions: list[EvalQuestion], rankings: list[list[DocKey]], metrics: list[MetricName], depth: int
) -> dict[str, np.ndarray]:
    """Per-question values of each metric, keyed by metric name (`ndcg@10`)."""
    judged = judge_run(rankings, [q.judgements for q in questions], depth)
    return {str(metric): metric.compute(judged) for metric in metrics}


def per_question_frame(
    label: str,
    questions: list[EvalQuestion],
    rankings: list[list[DocKey]],
    scores: dict[str, np.ndarray],
    answered: list[bool] | None = None,
    queries: list[str] | None = None,
) -> pl.DataFrame:
    """One row per question of one configuration, one column per metric; null where the question
    was not answered (a system under test whose call failed), so it counts in no mean. queries:
    what each question searched (None: the questions as written)."""
    spec = per_question_spec(list(scores))
    if answered is not None:
        unanswered = ~np.asarray(answered, dtype=bool)
        scores = {
            name: [None if skip else float(v) for v, skip in zip(values, unanswered)] for name, values in scores.items()
        }
    return pl.DataFrame(
        {
            "configuration": [label] * len(questions),
            "query_collection": [q.query_collection for q in questions],
            "query_id": [q.query_id for q in questions],
            "question": [q.question for q in questions],
            "dialogue_id": [q.dialogue_id for q in questions],
            "turn": [q.turn for q in questions],
            "search_query": queries or [q.question for q in questions],
            "relevant_count": [sum(1 for g in q.judgements.values() if g > 0) for q in questions],
            "retrieved": [len(r) for r in rankings],
            **dict(scores.items()),
        },
        schema=spec.schema,
    )
