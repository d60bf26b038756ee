"""The answer evaluation flow: golden and unanswerable questions × configurations, answered through
the real answer path, judged, compared pairwise, and logged as one MLflow batch."""

from __future__ import annotations

from prefect import flow

from ragassay.config import AnswerEvalConfig
from ragassay.evaluation.answers import configuration_pairs
from ragassay.tracking import Batch
from tasks.eval_answers import (
    AnswerEvalReport,
    answer_questions,
    compare_answers,
    judge_answers,
    load_answer_questions,
    load_judge,
    log_answer_batch,
    publish_answer_report,
)


@flow(name="eval-answers", validate_parameters=True)
def eval_answers_flow(config: AnswerEvalConfig, batch: Batch | None = None) -> AnswerEvalReport:
    """Answer every question under each configuration, judge, compare, log one batch (or into the
    pipeline's batch), and show the outcome on the flow run."""
    questions = load_answer_questions(config)
    judge = load_judge(config.judge, config.home)
    answered, summaries = {}, {}
    for configuration in config.configurations:
        answered[configuration.label] = answer_questions(config.home, config.collections, questions, configuration)
        summaries[configuration.label] = judge_answers(config.home, judge, answered[configuration.label], configuration.label)
    pairs = configuration_pairs(list(answered)) if config.pairwise else []
    comparisons = [compare_answers(judge, a, answered[a], b, answered[b]) for a, b in pairs]
    report = log_answer_batch(config, questions, judge.model_id, summaries, comparisons, batch)
    publish_answer_report(config, report)
    return report
