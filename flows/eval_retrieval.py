"""The retrieval evaluation flow: golden questions × configurations, scored and logged as a batch."""

from __future__ import annotations

import time
import uuid

from prefect import flow
from pydantic import BaseModel

from ragassay.config import RetrievalEvalConfig
from tasks import tracking
from tasks.eval_tasks import load_golden_questions, log_retrieval_batch, score_configuration, search_golden_questions
from tasks.scoring import check_assertions, compare_configurations, mean_scores, parse_assertion


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


@flow(name="eval-retrieval", validate_parameters=True)
def eval_retrieval_flow(config: RetrievalEvalConfig) -> RetrievalEvalReport:
    """Search every golden question under each configuration, score, compare, and log one batch."""
    batch_id = uuid.uuid4().hex[:12]
    metrics = config.metrics()
    questions, context = load_golden_questions(config)
    runs, per_question, seconds, costs = {}, {}, {}, {}
    for configuration in config.configurations:
        started = time.perf_counter()
        rankings, runs[configuration.label], costs[configuration.label] = search_golden_questions(
            config.home, config.collections, questions, configuration, config.depth
        )
        seconds[configuration.label] = round(time.perf_counter() - started, 3)
        per_question[configuration.label] = score_configuration(configuration.label, questions, rankings, metrics, config.depth)
    means = {label: mean_scores(table, metrics) for label, table in per_question.items()}
    comparisons = compare_configurations(per_question, metrics, seed=config.seed)
    parent_run_id, run_ids = log_retrieval_batch(config, batch_id, context, runs, per_question, means, comparisons, costs)
    return RetrievalEvalReport(
        batch_id=batch_id,
        experiment=tracking.experiment_name(list(config.collections)),
        parent_run_id=parent_run_id,
        run_ids=run_ids,
        questions=len(questions),
        metrics=[str(m) for m in metrics],
        means=means,
        comparisons=comparisons.to_dicts(),
        assertions=check_assertions([parse_assertion(a) for a in config.assertions], means),
        warnings=context.warnings,
        seconds_searching=seconds,
        model_costs=costs,
        tracking_uri=tracking.tracking_uri(config.home),
        ui_command=tracking.ui_command(config.home),
    )
