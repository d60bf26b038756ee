"""Prefect tasks of retrieval evaluation: gather golden questions, search them, score, log to MLflow."""

from __future__ import annotations

from pathlib import Path

import polars as pl
from prefect import task
from prefect.cache_policies import NO_CACHE

from ragassay import tracking
from ragassay.config import RetrievalConfiguration, RetrievalEvalConfig
from ragassay.evaluation import outcomes
from ragassay.evaluation.outcomes import RetrievalEvalReport, RetrievalSummary
from ragassay.evaluation.questions import (
    DocKey,
    EvalQuestion,
    GoldenContext,
    gather_golden_questions,
    with_expected_documents,
)
from ragassay.evaluation.reports import retrieval_markdown
from ragassay.evaluation.retrieval_scoring import (
    SearchedConfiguration,
    per_question_frame,
    score_rankings,
    search_questions,
)
from ragassay.evaluation.system_runs import run_system, save_records
from ragassay.metrics.averaging import on_common_questions
from ragassay.metrics.names import MetricName, headline_retrieval_metrics
from ragassay.systems.settings import SystemConfiguration
from ragassay.tracking import Batch
from ragassay.work_span import WorkSpan
from tasks.publish import flow_run_line, log_or_keep, publish, publish_verdict
from tasks.resources import MODEL_SERVER_RETRIES, TRACKING_RETRIES, worker_resources


@task(name="load-golden-questions", cache_policy=NO_CACHE)
def load_golden_questions(config: RetrievalEvalConfig) -> tuple[list[EvalQuestion], GoldenContext]:
    """Golden entries and dialogues' answerable turns of every collection, sampled when
    max_questions or max_dialogues is set; problems become warnings."""
    return with_expected_documents(
        *gather_golden_questions(
            config.home, config.collections, config.max_questions, config.seed, config.max_dialogues
        )
    )


@task(name="search-golden-questions", cache_policy=NO_CACHE, **MODEL_SERVER_RETRIES)
def search_golden_questions(
    home: Path,
    collections: tuple[str, ...],
    questions: list[EvalQuestion],
    configuration: RetrievalConfiguration,
    depth: int,
) -> SearchedConfiguration:
    """Each question through `ragassay search`'s code path to the evaluation's max rank; the run as a table,
    and the cost of any model calls (reranking) with the reranker's fallbacks."""
    return search_questions(worker_resources(), home, collections, questions, configuration, depth)


@task(name="ask-system-under-test", cache_policy=NO_CACHE)
def ask_system(
    home: Path,
    collections: tuple[str, ...],
    questions: list[EvalQuestion],
    configuration: SystemConfiguration,
    depth: int,
) -> SearchedConfiguration:
    """Each question's record from a team's own system (read from its records or run file, or
    called), its ids mapped to the collection's; failed calls kept as rows with their error."""
    return run_system(home, collections, questions, configuration, depth, worker_resources().completion_cache(home))


def searching_task(configuration: RetrievalConfiguration | SystemConfiguration):
    """The task that ranks under a configuration: a team's own system is asked (or its records
    read) instead of searched."""
    return ask_system if configuration.system_under_test else search_golden_questions


@task(name="save-configuration-records", cache_policy=NO_CACHE)
def save_configuration_records(
    folder: Path, questions: list[EvalQuestion], searched: dict[str, SearchedConfiguration]
) -> list[Path]:
    """Each configuration's records as `<folder>/<label>.jsonl`, to keep and re-score later."""
    return save_records(folder, questions, searched)


@task(name="score-configuration", cache_policy=NO_CACHE)
def score_configuration(
    label: str,
    questions: list[EvalQuestion],
    rankings: list[list[DocKey]],
    metrics: list[MetricName],
    depth: int,
    answered: list[bool] | None = None,
    queries: list[str] | None = None,
) -> pl.DataFrame:
    """Every metric of every question of one configuration, one row per question (null where a
    system under test did not answer), with what each question searched."""
    scores = score_rankings(questions, rankings, metrics, depth)
    return per_question_frame(label, questions, rankings, scores, answered, queries)


def score_each(
    config: RetrievalEvalConfig, questions: list[EvalQuestion], searched: dict[str, SearchedConfiguration]
) -> dict[str, pl.DataFrame]:
    """Each configuration's per-question scores (score_configuration), on the questions all of
    them answered when config.common_questions says so."""
    per_question = {
        label: score_configuration(
            label, questions, found.rankings, config.metrics(), config.depth, found.answered, found.queries
        )
        for label, found in searched.items()
    }
    return keep_common_questions(per_question, config.metrics()) if config.common_questions else per_question


def coverage_of_systems(searched: dict[str, SearchedConfiguration]) -> dict[str, float]:
    """Each system under test's share of questions answered (built-in configurations answer all)."""
    return {label: found.costs["coverage"] for label, found in searched.items() if found.answered is not None}


@task(name="keep-common-questions", cache_policy=NO_CACHE)
def keep_common_questions(per_question: dict[str, pl.DataFrame], metrics: list[MetricName]) -> dict[str, pl.DataFrame]:
    """`common_questions`: every configuration scored only on the questions all of them answered
    (the others null in every table, so in no mean)."""
    return on_common_questions(per_question, [str(m) for m in metrics])


@task(name="summarize-retrieval", cache_policy=NO_CACHE)
def summarize_retrieval(
    config: RetrievalEvalConfig, per_question: dict[str, pl.DataFrame], coverage: dict[str, float]
) -> RetrievalSummary:
    """Each configuration's means and intervals, paired comparisons of every pair, the bounds checked."""
    return outcomes.summarize_retrieval(config, per_question, coverage)


@task(name="log-retrieval-batch", cache_policy=NO_CACHE, **TRACKING_RETRIES)
def log_retrieval_batch(
    config: RetrievalEvalConfig,
    context: GoldenContext,
    searched: dict[str, SearchedConfiguration],
    per_question: dict[str, pl.DataFrame],
    summary: RetrievalSummary,
    batch: Batch | None = None,
    work_spans: dict[str, WorkSpan] | None = None,
) -> RetrievalEvalReport:
    """One child run per configuration under the batch's parent run (a new batch of its own
    unless a pipeline passes its batch), each over the time its work took (work_spans), the summary
    on the parent; the report. Retried: the tracking server may be briefly unreachable."""
    shared = outcomes.retrieval_params(config, context)
    labels = [c.label for c in config.configurations]
    logged = log_or_keep(
        config.home,
        list(config.collections),
        lambda batch_id: outcomes.retrieval_record(
            config, context, searched, per_question, summary, shared, batch_id, work_spans
        ),
        kind="retrieval",
        params=shared,
        batch=batch,
        source="ragassay eval retrieval",
        labels=labels,
        work_spans=work_spans,
    )
    return outcomes.retrieval_report(config, context, searched, summary, logged)


@task(name="publish-retrieval-report", cache_policy=NO_CACHE)
def publish_retrieval_report(
    config: RetrievalEvalConfig, report: RetrievalEvalReport, describe_batch: bool = True
) -> None:
    """The outcome on the flow run's page: configurations × metrics with scored counts and 95%
    intervals, and the Markdown report (who is ahead, significance, gates, warnings, the MLflow
    link); the same report as the MLflow batch's description when the batch is the evaluation's
    own (a pipeline describes its batch itself)."""
    headline = headline_retrieval_metrics(config.ks)
    markdown = retrieval_markdown(report, headline)
    publish(
        "retrieval",
        list(config.collections),
        outcomes.published_intervals(report.intervals, [*headline, *outcomes.bounded_metrics(report.assertions)]),
        markdown,
        f"retrieval evaluation, MLflow batch {report.batch_id}",
    )
    if report.kept_in:
        tracking.keep_report(report.kept_in, markdown)
    elif describe_batch:
        tracking.describe_run(config.home, report.parent_run_id, markdown + flow_run_line())
    if describe_batch:
        publish_verdict("retrieval", list(config.collections), report.assertions)
