"""Prefect tasks of retrieval evaluation: gather golden questions, search them, score, log to MLflow."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from pathlib import Path

import polars as pl
from prefect import task
from prefect.cache_policies import NO_CACHE
from pydantic import BaseModel

from ragassay import tracking
from ragassay.config import RetrievalConfiguration, RetrievalEvalConfig
from ragassay.evaluation.questions import DocKey, EvalQuestion, GoldenContext, gather_golden_questions
from ragassay.evaluation.retrieval import (
    SearchedConfiguration,
    compare_configurations,
    per_question_frame,
    score_rankings,
    search_questions,
)
from ragassay.gates.assertions import check_assertions, parse_assertion
from ragassay.metrics.averaging import mean_scores
from ragassay.metrics.names import MetricName
from tasks.resources import worker_resources


class RetrievalEvalReport(BaseModel):
    """Means per configuration, pairwise comparisons, gate results, and where the runs are."""

    batch_id: str
    experiment: str
    parent_run_id: str
    run_ids: dict[str, str]
    questions: int
    metrics: list[str]
    means: dict[str, dict[str, float]]
    comparisons: list[dict]
    assertions: list[dict]
    warnings: list[str]
    seconds_searching: dict[str, float]
    model_costs: dict[str, dict[str, float]]
    tracking_uri: str
    ui_command: str


@task(name="load-golden-questions", cache_policy=NO_CACHE)
def load_golden_questions(config: RetrievalEvalConfig) -> tuple[list[EvalQuestion], GoldenContext]:
    """Golden entries of every collection, sampled when max_questions is set; problems become warnings."""
    return gather_golden_questions(config.home, config.collections, config.max_questions, config.seed)


@task(name="search-golden-questions", cache_policy=NO_CACHE)
def search_golden_questions(
    home: Path, collections: tuple[str, ...], questions: list[EvalQuestion], configuration: RetrievalConfiguration, depth: int
) -> SearchedConfiguration:
    """Each question through `ragassay search`'s code path at depth max(ks); the run as a table,
    and the cost of any model calls (reranking) with the reranker's fallbacks."""
    return search_questions(worker_resources(), home, collections, questions, configuration, depth)


@task(name="score-configuration", cache_policy=NO_CACHE)
def score_configuration(
    label: str, questions: list[EvalQuestion], rankings: list[list[DocKey]], metrics: list[MetricName], depth: int
) -> pl.DataFrame:
    """Every metric of every question of one configuration, one row per question."""
    return per_question_frame(label, questions, rankings, score_rankings(questions, rankings, metrics, depth))


@dataclass(frozen=True)
class BatchSummary:
    """Means per configuration, every pairwise comparison, and the --assert gates' results."""

    means: dict[str, dict[str, float]]
    comparisons: pl.DataFrame
    assertions: list[dict]


@task(name="compare-configurations", cache_policy=NO_CACHE)
def summarize_batch(config: RetrievalEvalConfig, per_question: dict[str, pl.DataFrame]) -> BatchSummary:
    """Each configuration's means, paired comparisons of every pair, and the gates checked."""
    metrics = config.metrics()
    means = {label: mean_scores(table, metrics) for label, table in per_question.items()}
    comparisons = compare_configurations(per_question, metrics, seed=config.seed)
    return BatchSummary(means, comparisons, check_assertions([parse_assertion(a) for a in config.assertions], means))


@task(name="log-retrieval-batch", cache_policy=NO_CACHE)
def log_retrieval_batch(
    config: RetrievalEvalConfig,
    context: GoldenContext,
    searched: dict[str, SearchedConfiguration],
    per_question: dict[str, pl.DataFrame],
    summary: BatchSummary,
) -> RetrievalEvalReport:
    """One parent run for the batch and one child run per configuration; the report."""
    batch_id = uuid.uuid4().hex[:12]
    means, costs = summary.means, {label: result.costs for label, result in searched.items()}
    collections = list(config.collections)
    mlflow_client = tracking.client(config.home)
    experiment_id = tracking.ensure_experiment(mlflow_client, config.home, collections)
    shared = {
        "collections": list(config.collections),
        "ks": list(config.ks),
        "max_questions": config.max_questions,
        "seed": config.seed,
        "questions": len(context.questions),
        "index_digest": context.index_digests,
        "golden_digest": context.golden_digests,
        "golden_size": context.golden_sizes,
        "embedding_model": context.embedding_models,
    }
    parent = tracking.start_batch(
        mlflow_client, experiment_id, batch_id, "retrieval", collections, tracking.flatten_params(shared)
    )
    child_ids = {}
    for configuration in config.configurations:
        label = configuration.label
        child_ids[label] = tracking.log_configuration_run(
            mlflow_client,
            experiment_id,
            parent,
            batch_id,
            "retrieval",
            collections,
            label,
            params=tracking.flatten_params({**shared, "config": configuration.model_dump()}),
            metrics={**means[label], **costs[label], "questions_scored": per_question[label].height},
            artifacts={"per_question": per_question[label], "run": searched[label].run},
        )
    warnings = pl.DataFrame({"warning": context.warnings}, schema={"warning": pl.String})
    tracking.log_tables(mlflow_client, parent, {"comparisons": summary.comparisons, "warnings": warnings})
    tracking.finish(mlflow_client, parent)
    return RetrievalEvalReport(
        batch_id=batch_id,
        experiment=tracking.experiment_name(collections),
        parent_run_id=parent,
        run_ids=child_ids,
        questions=len(context.questions),
        metrics=[str(m) for m in config.metrics()],
        means=means,
        comparisons=summary.comparisons.to_dicts(),
        assertions=summary.assertions,
        warnings=context.warnings,
        seconds_searching={label: result.seconds for label, result in searched.items()},
        model_costs=costs,
        tracking_uri=tracking.tracking_uri(config.home),
        ui_command=tracking.ui_command(config.home),
    )
