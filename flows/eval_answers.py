"""The answer evaluation flow: golden and unanswerable questions × configurations, answered through
the real answer path, judged, compared pairwise, and logged as one MLflow batch."""

from __future__ import annotations

import time
import uuid

import polars as pl
from prefect import flow
from pydantic import BaseModel

from ragassay.config import AnswerEvalConfig
from ragassay.judge_service import Judge
from tasks import tracking
from tasks.answer_eval_tasks import (
    answer_questions,
    compare_answers,
    configuration_pairs,
    judge_answers,
    load_answer_questions,
    log_answer_batch,
)
from tasks.answer_metrics import tally_pairs
from tasks.answer_scoring import summarize_configuration
from tasks.answering import ANSWER_PROMPT_VERSION
from tasks.judging import PROMPT_VERSIONS
from tasks.models import model_id_of
from tasks.schemas import PAIRWISE


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


@flow(name="eval-answers", validate_parameters=True)
def eval_answers_flow(config: AnswerEvalConfig) -> AnswerEvalReport:
    """Answer every question under each configuration, judge, compare, and log one batch."""
    started = time.perf_counter()
    batch_id = uuid.uuid4().hex[:12]
    golden, unanswerable, context = load_answer_questions(config)
    questions = [(q, True) for q in golden] + [(q, False) for q in unanswerable]
    judge = Judge(config.judge)
    answered, summaries = {}, {}
    for configuration in config.configurations:
        label = configuration.label
        answered[label] = answer_questions(config.home, config.collections, questions, configuration)
        judgements, judge_usage, reused = judge_answers(config.home, judge, answered[label], label)
        summaries[label] = summarize_configuration(label, answered[label], judgements, judge_usage, reused)
    pairs = configuration_pairs(list(answered)) if config.pairwise else []
    compared = [compare_answers(judge, a, answered[a], b, answered[b]) for a, b in pairs]
    pair_tables = [table for table, _ in compared]
    pairwise = [
        {"configuration_a": a, "configuration_b": b, **tally_pairs(table["outcome"].to_list()), **usage.as_metrics("judge")}
        for (a, b), (table, usage) in zip(pairs, compared)
    ]
    warnings = [w for summary in summaries.values() for w in summary.warnings]
    warnings += [
        {"configuration": "", "metric": "golden", "question": "", "reason": text} for text in context.warnings
    ]
    answer_model_ids = {c.label: model_id_of(c.model) for c in config.configurations}
    all_pairs = pl.concat(pair_tables) if pair_tables else PAIRWISE.empty()
    parent_run_id, run_ids = log_answer_batch(
        config, batch_id, context, len(unanswerable), judge.model_id, answer_model_ids, summaries, all_pairs, pairwise, warnings
    )
    return AnswerEvalReport(
        batch_id=batch_id,
        experiment=tracking.experiment_name(list(config.collections)),
        parent_run_id=parent_run_id,
        run_ids=run_ids,
        questions=len(golden),
        unanswerable=len(unanswerable),
        metrics={label: summary.metrics for label, summary in summaries.items()},
        pairwise=pairwise,
        warnings=warnings,
        judge_model=judge.model_id,
        prompt_versions={"answer": ANSWER_PROMPT_VERSION, **PROMPT_VERSIONS},
        seconds=round(time.perf_counter() - started, 3),
        tracking_uri=tracking.tracking_uri(config.home),
        ui_command=tracking.ui_command(config.home),
    )
