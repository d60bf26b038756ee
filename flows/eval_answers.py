"""The answer evaluation flow: golden and unanswerable questions × configurations, answered through
the real answer path, judged, compared pairwise, and logged as one MLflow batch."""

from __future__ import annotations

from typing import Any

from prefect import flow
from prefect.runtime import flow_run

from flows.finished import finished, with_verdict
from flows.run_names import run_name
from flows.runners import FannedOut, WorkClock, task_runner
from ragassay.config import AnswerEvalConfig
from ragassay.config_errors import with_overrides
from ragassay.evaluation.answer_judging import configuration_pairs
from ragassay.evaluation.outcomes import AnswerEvalReport
from ragassay.llm.settings import model_id_of
from ragassay.tracking import Batch
from ragassay.work_parts import in_parts
from tasks.eval_answers import (
    JudgeWork,
    answering_task,
    compare_answers,
    judge_answers,
    load_aligned_judges,
    load_answer_questions,
    load_judge_calibration,
    log_answer_batch,
    publish_answer_report,
    save_answer_records,
    summarize_each,
)
from tasks.resources import locate_models


@flow(name="eval-answers", flow_run_name=run_name, validate_parameters=True)
def eval_answers_flow(
    config: AnswerEvalConfig, batch: Batch | None = None, overrides: dict[str, Any] | None = None
) -> AnswerEvalReport:
    """Answer every question under each configuration, judge, compare, log one batch (or into the
    pipeline's batch), and show the outcome on the flow run. overrides: dotted keys changed in
    config (config_errors.with_overrides)."""
    config = with_overrides(config, overrides)
    locate_models(config.chat_models())
    questions = load_answer_questions(config)
    evaluation = str(flow_run.id)  # the judges' memory lasts one evaluation (tasks/resources.worker_judge)
    aligned = load_aligned_judges(config.judge, config.home, config.collections)
    judge = JudgeWork.of(config, evaluation)
    # Configurations (or parts of their questions, config.questions_per_task) are answered, judged
    # and compared where config.task_runner says: threads here, or Dask worker processes, each
    # with its own in-process models.
    parts = questions.parts(config.questions_per_task)  # a dialogue stays in one part
    clock = WorkClock()  # each configuration's run is logged over its answering and judging
    with task_runner(config.task_runner) as runner:
        answering = FannedOut(runner, clock)
        for c in config.configurations:
            for part in parts:
                answering.submit(
                    c.label,
                    answering_task(c),
                    home=config.home,
                    collections=config.collections,
                    questions=part,
                    configuration=c,
                )
        answered = answering.joined()
        if config.save_records is not None:
            save_answer_records(config.save_records, answered)
        judging, comparing = FannedOut(runner, clock), FannedOut(runner)
        for label, items in answered.items():
            for part in in_parts(items, config.questions_per_task):
                judging.submit(label, judge_answers, work=judge, answered=part, label=label, aligned=aligned)
        for a, b in configuration_pairs(list(answered)) if config.pairwise else []:
            comparing.submit(
                f"{a} vs {b}",
                compare_answers,
                work=judge,
                label_a=a,
                answered_a=answered[a],
                label_b=b,
                answered_b=answered[b],
            )
        judged, preferences = judging.results(), comparing.all()
    judge_calibration = load_judge_calibration(config.judge, config.home, config.collections, evaluation, aligned)
    summaries = summarize_each(answered, judged)
    report = log_answer_batch(
        config, questions, model_id_of(config.judge), summaries, preferences, judge_calibration, batch, clock.spans()
    )
    publish_answer_report(config, report, describe_batch=batch is None)
    finished(report)
    # In a pipeline, the pipeline's flow run carries the verdict.
    return with_verdict(report, report.assertions) if batch is None else report
