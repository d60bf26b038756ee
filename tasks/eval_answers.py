"""Prefect tasks of answer evaluation: load the questions and the judge, answer every question under
a configuration, judge the answers, compare configurations pairwise, log the batch to MLflow."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import polars as pl
from prefect import task
from prefect.cache_policies import NO_CACHE
from pydantic import BaseModel

from ragassay import plots, tracking
from ragassay.answer.grounding import ANSWER_PROMPT_VERSION
from ragassay.answer.settings import AnswerConfiguration
from ragassay.config import AnswerEvalConfig
from ragassay.evaluation import answers
from ragassay.evaluation.answer_summary import (
    ANSWER_INTERVAL_METRICS,
    AnsweredQuestion,
    ConfigurationSummary,
    answer_intervals,
    summarize_configuration,
    warnings_frame,
)
from ragassay.evaluation.answers import JudgedConfiguration, PairComparison, batch_warnings
from ragassay.evaluation.questions import EvalQuestion, GoldenContext, gather_golden_questions, read_unanswerable
from ragassay.evaluation.reports import answers_markdown
from ragassay.gates.assertions import check_assertions, parse_answer_assertion
from ragassay.judge.judge import Judge, support_threshold_for
from ragassay.judge.prompts import PROMPT_VERSIONS
from ragassay.llm.settings import ChatModelConfig, model_id_of
from ragassay.store.schemas import PAIRWISE
from ragassay.tracking import Batch
from tasks.publish import publish, stage_batch
from tasks.resources import MODEL_SERVER_RETRIES, TRACKING_RETRIES, worker_judge, worker_resources


class AnswerEvalReport(BaseModel):
    """Metrics per configuration, pairwise tallies, warnings, cost, and where the runs are."""

    batch_id: str
    experiment: str
    parent_run_id: str
    run_ids: dict[str, str]
    questions: int
    unanswerable: int
    metrics: dict[str, dict[str, float]]
    pairwise: list[dict]
    warnings: list[dict]
    assertions: list[dict]
    judge_model: str
    prompt_versions: dict[str, str]
    intervals: list[dict]
    seconds: float
    tracking_uri: str
    ui_command: str
    mlflow_url: str | None = None


@dataclass(frozen=True)
class AnswerQuestions:
    """The questions of one answer evaluation, and when it started (for its duration)."""

    golden: list[EvalQuestion]
    unanswerable: list[EvalQuestion]
    context: GoldenContext
    started: float

    @property
    def all(self) -> list[tuple[EvalQuestion, bool]]:
        """(question, answerable): the golden questions, then the unanswerable ones."""
        return [(q, True) for q in self.golden] + [(q, False) for q in self.unanswerable]


@task(name="load-answer-questions", cache_policy=NO_CACHE)
def load_answer_questions(config: AnswerEvalConfig) -> AnswerQuestions:
    """The golden questions (seeded sample) and the unanswerable ones; a bad file fails here,
    before any model call."""
    started = time.perf_counter()
    golden, context = gather_golden_questions(config.home, config.collections, config.max_questions, config.seed)
    unanswerable = read_unanswerable(config.unanswerable) if config.unanswerable else []
    return AnswerQuestions(golden=golden, unanswerable=unanswerable, context=context, started=started)


@task(name="load-judge", cache_policy=NO_CACHE)
def load_judge(config: ChatModelConfig, home: Path) -> Judge:
    """The judge of one evaluation: it remembers its judgements until the evaluation ends, and
    its model calls in the workspace's completion cache (the model loads on the first call that
    is not remembered)."""
    return Judge(worker_resources().chat_model(config, home))


@task(name="answer-questions", cache_policy=NO_CACHE, **MODEL_SERVER_RETRIES)
def answer_questions(
    home: Path,
    collections: tuple[str, ...],
    questions: list[tuple[EvalQuestion, bool]],
    configuration: AnswerConfiguration,
) -> list[AnsweredQuestion]:
    """Each (question, answerable) through exactly `ragassay answer`'s code path under one
    configuration (all of its questions, or one part of them)."""
    return answers.answer_questions(worker_resources(), home, collections, questions, configuration)


@task(name="judge-answers", cache_policy=NO_CACHE, **MODEL_SERVER_RETRIES)
def judge_answers(
    home: Path, judge: ChatModelConfig, evaluation: str, answered: list[AnsweredQuestion], label: str
) -> JudgedConfiguration:
    """Every answer metric of each answerable question (of a configuration, or of one part of its
    questions). The judge is this process's for the evaluation (tasks/resources.worker_judge)."""
    return answers.judge_answers(worker_resources(), home, worker_judge(judge, home, evaluation), answered, label)


@task(name="summarize-answers", cache_policy=NO_CACHE)
def summarize_answers(
    label: str, answered: list[AnsweredQuestion], judged: list[JudgedConfiguration]
) -> ConfigurationSummary:
    """A configuration's answer metrics and cost, from its answers and the parts they were judged in."""
    combined = JudgedConfiguration.combined(judged)
    return summarize_configuration(label, answered, combined.judgements, combined.usage, combined.reused)


@task(name="compare-answers", cache_policy=NO_CACHE, **MODEL_SERVER_RETRIES)
def compare_answers(
    home: Path,
    judge: ChatModelConfig,
    evaluation: str,
    label_a: str,
    answered_a: list[AnsweredQuestion],
    label_b: str,
    answered_b: list[AnsweredQuestion],
) -> PairComparison:
    """The judge's preference per answerable question, asked in both orders, and its cost."""
    return answers.compare_answers(worker_judge(judge, home, evaluation), label_a, answered_a, label_b, answered_b)


@task(name="log-answer-batch", cache_policy=NO_CACHE, **TRACKING_RETRIES)
def log_answer_batch(
    config: AnswerEvalConfig,
    questions: AnswerQuestions,
    judge_model_id: str,
    summaries: dict[str, ConfigurationSummary],
    comparisons: list[PairComparison],
    batch: Batch | None = None,
) -> AnswerEvalReport:
    """One child run per configuration under the batch's parent run (a new batch unless a
    pipeline passes its batch); on the parent: each configuration's answer metrics, the pairwise
    tallies and their cost as `pairwise/A/B/...` metrics, the pairwise, warnings and interval
    tables, and the pictures. Retried: the tracking server may be briefly unreachable."""
    context, unanswerable_count = questions.context, len(questions.unanswerable)
    answer_model_ids = {c.label: model_id_of(c.model) for c in config.configurations}
    pairwise_tallies = [comparison.tally() for comparison in comparisons]
    pairwise = pl.concat([c.table for c in comparisons]) if comparisons else PAIRWISE.empty()
    warnings = batch_warnings([summary.warnings for summary in summaries.values()], context)
    intervals = answer_intervals({label: summary.answers for label, summary in summaries.items()}, config.seed)
    collections = list(config.collections)
    shared = tracking.flatten_params(
        {
            "collections": collections,
            "max_questions": config.max_questions,
            "seed": config.seed,
            "questions": len(context.questions),
            "unanswerable_questions": unanswerable_count,
            "unanswerable_file": str(config.unanswerable) if config.unanswerable else None,
            "judge": config.judge.model_dump(exclude_none=True),
            "judge_model_id": judge_model_id,
            "judge_support_threshold": support_threshold_for(judge_model_id),
            "prompt_version": {"answer": ANSWER_PROMPT_VERSION, **PROMPT_VERSIONS},
            "index_digest": context.index_digests,
            "golden_digest": context.golden_digests,
            "embedding_model": context.embedding_models,
        }
    )
    batch = stage_batch(config.home, collections, "answers", shared, batch, "ragassay eval answers")
    mlflow_client = tracking.client(config.home)
    child_ids = {}
    for configuration in config.configurations:
        label = configuration.label
        summary = summaries[label]
        child_ids[label] = tracking.log_configuration_run(
            mlflow_client,
            batch,
            "answers",
            label,
            params={
                **shared,
                **tracking.flatten_params(
                    {"answer_model_id": answer_model_ids[label], "config": configuration.applicable_settings()}
                ),
            },
            metrics=summary.metrics,
            artifacts={"answers": summary.answers, "judgments": summary.judgments},
        )
    tallies = {
        f"pairwise/{t['configuration_a']}/{t['configuration_b']}/{key}": value
        for t in pairwise_tallies
        for key, value in t.items()
        if key not in ("configuration_a", "configuration_b")
    }
    tracking.log_values(mlflow_client, batch.parent_run_id, {}, tallies)
    headline = {
        label: {m: s.metrics[m] for m in ANSWER_INTERVAL_METRICS if m in s.metrics} for label, s in summaries.items()
    }
    figure = plots.interval_figure(
        intervals,
        list(ANSWER_INTERVAL_METRICS),
        f"answers, batch {batch.batch_id}: {len(questions.golden)} answerable + {unanswerable_count} unanswerable, judge {judge_model_id}",
    )
    tracking.log_batch_summary(
        mlflow_client,
        batch,
        "answers",
        headline,
        {"pairwise": pairwise, "warnings": warnings_frame(warnings), "intervals": intervals},
        {"answer_metrics": figure},
    )
    if batch.owned:
        tracking.finish(mlflow_client, batch.parent_run_id)
    return AnswerEvalReport(
        batch_id=batch.batch_id,
        experiment=tracking.experiment_name(collections),
        parent_run_id=batch.parent_run_id,
        run_ids=child_ids,
        questions=len(questions.golden),
        unanswerable=unanswerable_count,
        metrics={label: summary.metrics for label, summary in summaries.items()},
        pairwise=pairwise_tallies,
        warnings=warnings,
        assertions=check_assertions(
            [parse_answer_assertion(a) for a in config.assertions], {label: s.metrics for label, s in summaries.items()}
        ),
        judge_model=judge_model_id,
        prompt_versions={"answer": ANSWER_PROMPT_VERSION, **PROMPT_VERSIONS},
        intervals=intervals.to_dicts(),
        seconds=round(time.perf_counter() - questions.started, 3),
        tracking_uri=tracking.tracking_uri(config.home),
        ui_command=tracking.ui_command(config.home),
        mlflow_url=tracking.run_url(config.home, batch),
    )


@task(name="publish-answer-report", cache_policy=NO_CACHE)
def publish_answer_report(config: AnswerEvalConfig, report: AnswerEvalReport) -> None:
    """The outcome on the flow run's page: configurations × answer metrics with scored counts and
    95% intervals, and the Markdown report (refusal both ways, pairwise, warnings, MLflow link)."""
    table = [
        {**row, "mean": round(row["mean"], 4), "ci_low": round(row["ci_low"], 4), "ci_high": round(row["ci_high"], 4)}
        for row in report.intervals
        if row["mean"] is not None
    ]
    markdown = answers_markdown(
        report.batch_id,
        report.questions,
        report.unanswerable,
        report.judge_model,
        report.metrics,
        report.pairwise,
        report.assertions,
        report.warnings,
        report.mlflow_url,
        report.ui_command,
    )
    publish("answers", list(config.collections), table, markdown, f"answer evaluation, MLflow batch {report.batch_id}")
