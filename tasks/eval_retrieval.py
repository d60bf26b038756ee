"""Prefect tasks of retrieval evaluation: gather golden questions, search them, score, log to MLflow."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import polars as pl
from prefect import task
from prefect.cache_policies import NO_CACHE
from pydantic import BaseModel

from ragassay import plots, tracking
from ragassay.config import RetrievalConfiguration, RetrievalEvalConfig
from ragassay.evaluation.questions import DocKey, EvalQuestion, GoldenContext, gather_golden_questions
from ragassay.evaluation.reports import retrieval_markdown
from ragassay.evaluation.retrieval import (
    SearchedConfiguration,
    compare_configurations,
    per_question_frame,
    score_rankings,
    search_questions,
)
from ragassay.gates.assertions import check_assertions, parse_assertion
from ragassay.metrics.averaging import interval_table, mean_scores
from ragassay.metrics.names import MetricName, headline_retrieval_metrics
from ragassay.tracking import Batch
from tasks.publish import publish, stage_batch
from tasks.resources import MODEL_SERVER_RETRIES, TRACKING_RETRIES, worker_resources


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
    intervals: list[dict]
    seconds_searching: dict[str, float]
    model_costs: dict[str, dict[str, float]]
    tracking_uri: str
    ui_command: str
    mlflow_url: str | None = None


@task(name="load-golden-questions", cache_policy=NO_CACHE)
def load_golden_questions(config: RetrievalEvalConfig) -> tuple[list[EvalQuestion], GoldenContext]:
    """Golden entries of every collection, sampled when max_questions is set; problems become warnings."""
    return gather_golden_questions(config.home, config.collections, config.max_questions, config.seed)


@task(name="search-golden-questions", cache_policy=NO_CACHE, **MODEL_SERVER_RETRIES)
def search_golden_questions(
    home: Path,
    collections: tuple[str, ...],
    questions: list[EvalQuestion],
    configuration: RetrievalConfiguration,
    depth: int,
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
    """Means per configuration with their 95% intervals, every pairwise comparison, and the
    --assert gates' results."""

    means: dict[str, dict[str, float]]
    intervals: pl.DataFrame
    comparisons: pl.DataFrame
    assertions: list[dict]


@task(name="compare-configurations", cache_policy=NO_CACHE)
def summarize_batch(config: RetrievalEvalConfig, per_question: dict[str, pl.DataFrame]) -> BatchSummary:
    """Each configuration's means and intervals, paired comparisons of every pair, and the gates checked."""
    metrics = config.metrics()
    means = {label: mean_scores(table, metrics) for label, table in per_question.items()}
    intervals = interval_table(per_question, [str(m) for m in metrics], seed=config.seed)
    comparisons = compare_configurations(per_question, metrics, seed=config.seed)
    return BatchSummary(
        means, intervals, comparisons, check_assertions([parse_assertion(a) for a in config.assertions], means)
    )


@task(name="log-retrieval-batch", cache_policy=NO_CACHE, **TRACKING_RETRIES)
def log_retrieval_batch(
    config: RetrievalEvalConfig,
    context: GoldenContext,
    searched: dict[str, SearchedConfiguration],
    per_question: dict[str, pl.DataFrame],
    summary: BatchSummary,
    batch: Batch | None = None,
) -> RetrievalEvalReport:
    """One child run per configuration, under the batch's parent run (a new batch of its own
    unless a pipeline passes its batch): headline means, tables and pictures on the parent. Retried:
    the tracking server may be briefly unreachable."""
    means, costs = summary.means, {label: result.costs for label, result in searched.items()}
    collections = list(config.collections)
    shared = tracking.flatten_params(
        {
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
    )
    batch = stage_batch(config.home, collections, "retrieval", shared, batch, "ragassay eval retrieval")
    mlflow_client = tracking.client(config.home)
    child_ids = {}
    for configuration in config.configurations:
        label = configuration.label
        child_ids[label] = tracking.log_configuration_run(
            mlflow_client,
            batch,
            "retrieval",
            label,
            params={**shared, **tracking.flatten_params({"config": configuration.applicable_settings()})},
            metrics={**means[label], **costs[label], "questions_scored": per_question[label].height},
            artifacts={"per_question": per_question[label], "run": searched[label].run},
        )
    headline = headline_retrieval_metrics(config.ks)
    warnings = pl.DataFrame({"warning": context.warnings}, schema={"warning": pl.String})
    figures = {
        "retrieval_metrics": plots.interval_figure(
            summary.intervals, headline, f"retrieval, batch {batch.batch_id}: {len(context.questions)} questions"
        ),
        "retrieval_recall_at_k": plots.recall_curve_figure(means, list(config.ks), f"recall@k, batch {batch.batch_id}"),
    }
    tracking.log_batch_summary(
        mlflow_client,
        batch,
        "retrieval",
        {label: {m: values[m] for m in headline} for label, values in means.items()},
        {"comparisons": summary.comparisons, "warnings": warnings, "intervals": summary.intervals},
        figures,
    )
    if batch.owned:
        tracking.finish(mlflow_client, batch.parent_run_id)
    return RetrievalEvalReport(
        batch_id=batch.batch_id,
        experiment=tracking.experiment_name(collections),
        parent_run_id=batch.parent_run_id,
        run_ids=child_ids,
        questions=len(context.questions),
        metrics=[str(m) for m in config.metrics()],
        means=means,
        comparisons=summary.comparisons.to_dicts(),
        assertions=summary.assertions,
        warnings=context.warnings,
        intervals=summary.intervals.to_dicts(),
        seconds_searching={label: result.seconds for label, result in searched.items()},
        model_costs=costs,
        tracking_uri=tracking.tracking_uri(config.home),
        ui_command=tracking.ui_command(config.home),
        mlflow_url=tracking.run_url(config.home, batch),
    )


@task(name="publish-retrieval-report", cache_policy=NO_CACHE)
def publish_retrieval_report(config: RetrievalEvalConfig, report: RetrievalEvalReport) -> None:
    """The outcome on the flow run's page: configurations × metrics with scored counts and 95%
    intervals, and the Markdown report (significance, gates, warnings, the MLflow link)."""
    headline = headline_retrieval_metrics(config.ks)
    table = [
        {**row, "mean": round(row["mean"], 4), "ci_low": round(row["ci_low"], 4), "ci_high": round(row["ci_high"], 4)}
        for row in report.intervals
        if row["metric"] in headline and row["mean"] is not None
    ]
    markdown = retrieval_markdown(
        report.batch_id,
        report.questions,
        report.means,
        headline,
        report.comparisons,
        report.assertions,
        report.warnings,
        report.mlflow_url,
        report.ui_command,
    )
    publish(
        "retrieval", list(config.collections), table, markdown, f"retrieval evaluation, MLflow batch {report.batch_id}"
    )
