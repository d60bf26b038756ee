"""Prefect tasks of answer evaluation: load the questions and the judge, answer every question under
a configuration, judge the answers, compare configurations pairwise, log the batch to MLflow."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import polars as pl
from prefect import task
from prefect.cache_policies import NO_CACHE
from pydantic import BaseModel

from ragassay import tracking
from ragassay.answer.grounding import ANSWER_PROMPT_VERSION
from ragassay.config import AnswerConfiguration, AnswerEvalConfig
from ragassay.evaluation import answers
from ragassay.evaluation.answer_summary import (
    AnsweredQuestion,
    ConfigurationSummary,
    summarize_configuration,
    warnings_frame,
)
from ragassay.evaluation.answers import PairComparison, batch_warnings
from ragassay.evaluation.questions import EvalQuestion, GoldenContext, gather_golden_questions, read_unanswerable
from ragassay.judge.judge import Judge, support_threshold_for
from ragassay.judge.prompts import PROMPT_VERSIONS
from ragassay.llm.models import ChatModelConfig, model_id_of
from ragassay.store.schemas import PAIRWISE
from tasks.resources import worker_resources


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
    judge_model: str
    prompt_versions: dict[str, str]
    seconds: float
    tracking_uri: str
    ui_command: str


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
def load_judge(config: ChatModelConfig) -> Judge:
    """The judge of one evaluation: it remembers its judgements until the evaluation ends."""
    return Judge(worker_resources().chat_models.get(config))


@task(name="answer-questions", cache_policy=NO_CACHE)
def answer_questions(
    home: Path, collections: tuple[str, ...], questions: AnswerQuestions, configuration: AnswerConfiguration
) -> list[AnsweredQuestion]:
    """Each question through exactly `ragassay answer`'s code path under one configuration."""
    return answers.answer_questions(worker_resources(), home, collections, questions.all, configuration)


@task(name="judge-answers", cache_policy=NO_CACHE)
def judge_answers(home: Path, judge: Judge, answered: list[AnsweredQuestion], label: str) -> ConfigurationSummary:
    """Every answer metric of each answerable question, summarized with the configuration's cost."""
    judged = answers.judge_answers(worker_resources(), home, judge, answered, label)
    return summarize_configuration(label, answered, judged.judgements, judged.usage, judged.reused)


@task(name="compare-answers", cache_policy=NO_CACHE)
def compare_answers(
    judge: Judge, label_a: str, answered_a: list[AnsweredQuestion], label_b: str, answered_b: list[AnsweredQuestion]
) -> PairComparison:
    """The judge's preference per answerable question, asked in both orders, and its cost."""
    return answers.compare_answers(judge, label_a, answered_a, label_b, answered_b)


@task(name="log-answer-batch", cache_policy=NO_CACHE)
def log_answer_batch(
    config: AnswerEvalConfig,
    questions: AnswerQuestions,
    judge_model_id: str,
    summaries: dict[str, ConfigurationSummary],
    comparisons: list[PairComparison],
) -> AnswerEvalReport:
    """One parent run for the batch (pairwise tallies and their cost as `pairwise/A/B/...`
    metrics, the pairwise and warnings tables), one child run per configuration; the report."""
    batch_id = uuid.uuid4().hex[:12]
    context, unanswerable_count = questions.context, len(questions.unanswerable)
    answer_model_ids = {c.label: model_id_of(c.model) for c in config.configurations}
    pairwise_tallies = [comparison.tally() for comparison in comparisons]
    pairwise = pl.concat([c.table for c in comparisons]) if comparisons else PAIRWISE.empty()
    warnings = batch_warnings([summary.warnings for summary in summaries.values()], context)
    collections = list(config.collections)
    mlflow_client = tracking.client(config.home)
    experiment_id = tracking.ensure_experiment(mlflow_client, config.home, collections)
    shared = {
        "collections": collections,
        "max_questions": config.max_questions,
        "seed": config.seed,
        "questions": len(context.questions),
        "unanswerable_questions": unanswerable_count,
        "unanswerable_file": str(config.unanswerable) if config.unanswerable else None,
        "judge": config.judge.model_dump(),
        "judge_model_id": judge_model_id,
        "judge_support_threshold": support_threshold_for(judge_model_id),
        "prompt_version": {"answer": ANSWER_PROMPT_VERSION, **PROMPT_VERSIONS},
        "index_digest": context.index_digests,
        "golden_digest": context.golden_digests,
        "embedding_model": context.embedding_models,
    }
    parent = tracking.start_batch(mlflow_client, experiment_id, batch_id, "answers", collections, tracking.flatten_params(shared))
    child_ids = {}
    for configuration in config.configurations:
        label = configuration.label
        summary = summaries[label]
        child_ids[label] = tracking.log_configuration_run(
            mlflow_client,
            experiment_id,
            parent,
            batch_id,
            "answers",
            collections,
            label,
            params=tracking.flatten_params({**shared, "answer_model_id": answer_model_ids[label], "config": configuration.model_dump()}),
            metrics=summary.metrics,
            artifacts={"answers": summary.answers, "judgments": summary.judgments},
        )
    tallies = {
        f"pairwise/{t['configuration_a']}/{t['configuration_b']}/{key}": value
        for t in pairwise_tallies
        for key, value in t.items()
        if key not in ("configuration_a", "configuration_b")
    }
    tracking.log_values(mlflow_client, parent, {}, tallies)
    tracking.log_tables(mlflow_client, parent, {"pairwise": pairwise, "warnings": warnings_frame(warnings)})
    tracking.finish(mlflow_client, parent)
    return AnswerEvalReport(
        batch_id=batch_id,
        experiment=tracking.experiment_name(collections),
        parent_run_id=parent,
        run_ids=child_ids,
        questions=len(questions.golden),
        unanswerable=unanswerable_count,
        metrics={label: summary.metrics for label, summary in summaries.items()},
        pairwise=pairwise_tallies,
        warnings=warnings,
        judge_model=judge_model_id,
        prompt_versions={"answer": ANSWER_PROMPT_VERSION, **PROMPT_VERSIONS},
        seconds=round(time.perf_counter() - questions.started, 3),
        tracking_uri=tracking.tracking_uri(config.home),
        ui_command=tracking.ui_command(config.home),
    )
