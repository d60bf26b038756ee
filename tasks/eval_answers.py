"""Prefect tasks of answer evaluation: load the questions and the judge, answer every question under
a configuration, judge the answers, compare configurations pairwise, log the batch to MLflow."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from prefect import task
from prefect.cache_policies import NO_CACHE

from ragassay import tracking
from ragassay.answer.settings import AnswerConfiguration
from ragassay.config import AnswerEvalConfig
from ragassay.evaluation import answer_judging, answer_outcomes, outcomes, system_answers
from ragassay.evaluation.answer_judging import JudgedConfiguration, PairComparison
from ragassay.evaluation.answer_outcomes import AnswerQuestions
from ragassay.evaluation.answer_summary import AnsweredQuestion, ConfigurationSummary, summarize_configuration
from ragassay.evaluation.outcomes import AnswerEvalReport
from ragassay.evaluation.questions import EvalQuestion, gather_golden_questions, gather_unanswerable
from ragassay.evaluation.reports import answers_markdown
from ragassay.judge.calibration import aligned_store, correction, support
from ragassay.judge.calibration.alignment import AlignedJudges
from ragassay.judge.judge import Judge
from ragassay.llm.settings import ChatModelConfig, model_id_of
from ragassay.metrics.judge_calibration import JudgeCalibration
from ragassay.systems.settings import SystemConfiguration
from ragassay.tracking import Batch
from ragassay.work_span import WorkSpan
from tasks.publish import flow_run_line, log_or_keep, publish, publish_verdict
from tasks.resources import MODEL_SERVER_RETRIES, TRACKING_RETRIES, worker_judge, worker_resources


@task(name="load-answer-questions", cache_policy=NO_CACHE)
def load_answer_questions(config: AnswerEvalConfig) -> AnswerQuestions:
    """The golden questions and dialogues (seeded samples; a dialogue's unanswerable turns among
    them) and the unanswerable file's questions; a bad file fails here, before any model call."""
    started = time.perf_counter()
    golden, context = gather_golden_questions(
        config.home, config.collections, config.max_questions, config.seed, config.max_dialogues
    )
    unanswerable = gather_unanswerable(config.unanswerable, config.max_unanswerable, config.seed)
    return AnswerQuestions(golden=golden, unanswerable=unanswerable, context=context, started=started)


@task(name="load-judge", cache_policy=NO_CACHE)
def load_judge(config: ChatModelConfig, home: Path) -> Judge:
    """The judge of one evaluation: it remembers its judgements until the evaluation ends, and
    its model calls in the workspace's completion cache (the model loads on the first call that
    is not remembered)."""
    return Judge(worker_resources().chat_model(config, home))


@task(name="load-aligned-judges", cache_policy=NO_CACHE)
def load_aligned_judges(judge: ChatModelConfig, home: Path, collections: tuple[str, ...]) -> AlignedJudges:
    """The collections' aligned judges for this judge (`judge calibrate --collection` fits them), read
    once so that every verdict of the evaluation and its correction use the same ones."""
    return aligned_store.load_aligned_judges(home, collections, model_id_of(judge))


@task(name="load-judge-calibration", cache_policy=NO_CACHE, **MODEL_SERVER_RETRIES)
def load_judge_calibration(
    judge: ChatModelConfig,
    home: Path,
    collections: tuple[str, ...],
    evaluation: str,
    aligned: AlignedJudges | None = None,
) -> JudgeCalibration | None:
    """The labels the judged metrics are corrected with: the collections' own (each labelled
    statement's verdict by this judge, or by its aligned judge where the evaluation used one; one
    judged anew only when another judge or prompt made its stored verdict), else none."""
    return correction.judge_calibration(
        home,
        collections,
        model_id_of(judge),
        lambda row: support.label_support(worker_judge(judge, home, evaluation), row),
        aligned,
    )


@task(name="answer-questions", cache_policy=NO_CACHE, **MODEL_SERVER_RETRIES)
def answer_questions(
    home: Path,
    collections: tuple[str, ...],
    questions: list[tuple[EvalQuestion, bool]],
    configuration: AnswerConfiguration,
) -> list[AnsweredQuestion]:
    """Each (question, answerable) through exactly `ragassay answer`'s code path under one
    configuration (all of its questions, or one part of them)."""
    return answer_judging.answer_questions(worker_resources(), home, collections, questions, configuration)


@task(name="ask-system-for-answers", cache_policy=NO_CACHE)
def ask_system_for_answers(
    home: Path,
    collections: tuple[str, ...],
    questions: list[tuple[EvalQuestion, bool]],
    configuration: SystemConfiguration,
) -> list[AnsweredQuestion]:
    """Each (question, answerable) answered by a team's own system (called, or read from its
    records), its contexts and citations kept for the judge; failed calls kept with their error."""
    return system_answers.system_answers(
        home, collections, questions, configuration, worker_resources().completion_cache(home)
    )


def answering_task(configuration: AnswerConfiguration | SystemConfiguration):
    """The task that answers under a configuration: a team's own system answers for itself."""
    return ask_system_for_answers if configuration.system_under_test else answer_questions


@task(name="save-answer-records", cache_policy=NO_CACHE)
def save_answer_records(folder: Path, answered: dict[str, list[AnsweredQuestion]]) -> list[Path]:
    """Each configuration's answers as `<folder>/<label>.jsonl`, to keep and re-score later."""
    return system_answers.save_answer_records(folder, answered)


@dataclass(frozen=True)
class JudgeWork:
    """What every judging task of one evaluation shares: the workspace, the judge, the evaluation
    the judge's memory lasts for (tasks/resources.worker_judge), and the metrics asked for (None:
    every declared one)."""

    home: Path
    judge: ChatModelConfig
    evaluation: str
    metrics: frozenset[str] | None = None
    # The judge model's own P(supported) asked beside the verdict (AnswerEvalSettings.judge_odds).
    judge_odds: bool = False

    @classmethod
    def of(cls, config: AnswerEvalConfig, evaluation: str) -> JudgeWork:
        metrics = frozenset(config.metrics) if config.metrics else None
        return cls(config.home, config.judge, evaluation, metrics, config.judge_odds)

    def worker_judge(self):
        return worker_judge(self.judge, self.home, self.evaluation, self.judge_odds)


@task(name="judge-answers", cache_policy=NO_CACHE, **MODEL_SERVER_RETRIES)
def judge_answers(
    work: JudgeWork, answered: list[AnsweredQuestion], label: str, aligned: AlignedJudges | None = None
) -> JudgedConfiguration:
    """The asked answer metrics of each answerable question (of a configuration, or of one part of
    its questions), support verdicts read by its collection's aligned judge where there is one."""
    return answer_judging.judge_answers(
        worker_resources(), work.home, work.worker_judge(), answered, label, aligned, work.metrics
    )


@task(name="summarize-answers", cache_policy=NO_CACHE)
def summarize_answers(
    label: str, answered: list[AnsweredQuestion], judged: list[JudgedConfiguration]
) -> ConfigurationSummary:
    """A configuration's answer metrics and cost, from its answers and the parts they were judged in."""
    combined = JudgedConfiguration.combined(judged)
    return summarize_configuration(
        label, answered, combined.judgements, combined.usage, combined.reused, combined.seconds
    )


def summarize_each(
    answered: dict[str, list[AnsweredQuestion]], judged: dict[str, list[JudgedConfiguration]]
) -> dict[str, ConfigurationSummary]:
    """Each configuration's summary (summarize_answers), in the order the configurations were answered."""
    return {label: summarize_answers(label, answered[label], judged[label]) for label in answered}


@task(name="compare-answers", cache_policy=NO_CACHE, **MODEL_SERVER_RETRIES)
def compare_answers(
    work: JudgeWork,
    label_a: str,
    answered_a: list[AnsweredQuestion],
    label_b: str,
    answered_b: list[AnsweredQuestion],
) -> PairComparison:
    """The judge's preference per answerable question, asked in both orders, and its cost."""
    return answer_judging.compare_answers(work.worker_judge(), label_a, answered_a, label_b, answered_b)


@task(name="log-answer-batch", cache_policy=NO_CACHE, **TRACKING_RETRIES)
def log_answer_batch(
    config: AnswerEvalConfig,
    questions: AnswerQuestions,
    judge_model_id: str,
    summaries: dict[str, ConfigurationSummary],
    preferences: list[PairComparison],
    judge_calibration: JudgeCalibration | None = None,
    batch: Batch | None = None,
    work_spans: dict[str, WorkSpan] | None = None,
) -> AnswerEvalReport:
    """One child run per configuration under the batch's parent run (a new batch unless a
    pipeline passes its batch), each over the time its work took (work_spans), the summary on the
    parent; the report. Retried: the tracking server may be briefly unreachable."""
    summary = answer_outcomes.summarize_answer_batch(config, questions, summaries, preferences, judge_calibration)
    shared = answer_outcomes.answer_params(config, questions, judge_model_id, judge_calibration)
    labels = [c.label for c in config.configurations]
    logged = log_or_keep(
        config.home,
        list(config.collections),
        lambda batch_id: answer_outcomes.answer_record(
            config, questions, judge_model_id, summary, shared, batch_id, work_spans
        ),
        kind="answers",
        params=shared,
        batch=batch,
        source="ragassay eval answers",
        labels=labels,
        work_spans=work_spans,
    )
    return answer_outcomes.answer_report(
        config, questions, judge_model_id, summary, logged, time.perf_counter() - questions.started
    )


@task(name="publish-answer-report", cache_policy=NO_CACHE)
def publish_answer_report(config: AnswerEvalConfig, report: AnswerEvalReport, describe_batch: bool = True) -> None:
    """The outcome on the flow run's page: configurations × answer metrics with scored counts and
    95% intervals, and the Markdown report (who is ahead, paired differences, refusal both ways,
    pairwise, warnings, MLflow link); the same report as the MLflow batch's description when the
    batch is the evaluation's own (a pipeline describes its batch itself)."""
    markdown = answers_markdown(report)
    publish(
        "answers",
        list(config.collections),
        outcomes.published_intervals(report.intervals),
        markdown,
        f"answer evaluation, MLflow batch {report.batch_id}",
    )
    if report.kept_in:
        tracking.keep_report(report.kept_in, markdown)
    elif describe_batch:
        tracking.describe_run(config.home, report.parent_run_id, markdown + flow_run_line())
    if describe_batch:
        publish_verdict("answers", list(config.collections), report.assertions)
