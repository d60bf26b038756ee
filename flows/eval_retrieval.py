"""The retrieval evaluation flow: golden questions × configurations, scored and logged as a batch."""

from __future__ import annotations

from typing import Any

from prefect import flow

from flows.finished import finished, with_verdict
from flows.run_names import run_name
from flows.runners import WorkClock, task_runner
from ragassay.config import RetrievalEvalConfig
from ragassay.config_errors import with_overrides
from ragassay.evaluation.outcomes import RetrievalEvalReport
from ragassay.systems.settings import SystemConfiguration
from ragassay.tracking import Batch
from tasks.eval_retrieval import (
    ask_system,
    keep_common_questions,
    load_golden_questions,
    log_retrieval_batch,
    publish_retrieval_report,
    save_configuration_records,
    score_configuration,
    search_golden_questions,
    summarize_retrieval,
)
from tasks.resources import locate_models


@flow(name="eval-retrieval", flow_run_name=run_name, validate_parameters=True)
def eval_retrieval_flow(
    config: RetrievalEvalConfig, batch: Batch | None = None, overrides: dict[str, Any] | None = None
) -> RetrievalEvalReport:
    """Search every golden question under each configuration, score, compare, log one batch (or
    into the pipeline's batch), and show the outcome on the flow run. overrides: dotted keys
    changed in config (config_errors.with_overrides)."""
    config = with_overrides(config, overrides)
    locate_models(config.chat_models())
    questions, context = load_golden_questions(config)
    # Configurations are searched where config.task_runner says (threads here, or Dask workers).
    clock = WorkClock()  # each configuration's run is logged over its searching
    with task_runner(config.task_runner) as runner:
        # A team's own system under test is asked (or its records read) instead of searched.
        futures = {
            c.label: clock.watch(
                c.label,
                runner.submit(
                    ask_system if isinstance(c, SystemConfiguration) else search_golden_questions,
                    {
                        "home": config.home,
                        "collections": config.collections,
                        "questions": questions,
                        "configuration": c,
                        "depth": config.depth,
                    },
                ),
            )
            for c in config.configurations
        }
        searched = {label: future.result() for label, future in futures.items()}
    if config.save_records is not None:
        save_configuration_records(config.save_records, questions, searched)
    per_question = {
        label: score_configuration(
            label, questions, found.rankings, config.metrics(), config.depth, found.answered, found.queries
        )
        for label, found in searched.items()
    }
    if config.common_questions:
        per_question = keep_common_questions(per_question, config.metrics())
    coverage = {label: found.costs["coverage"] for label, found in searched.items() if found.answered is not None}
    summary = summarize_retrieval(config, per_question, coverage)
    report = log_retrieval_batch(config, context, searched, per_question, summary, batch, clock.spans())
    publish_retrieval_report(config, report, describe_batch=batch is None)
    finished(report)
    # In a pipeline, the pipeline's flow run carries the verdict.
    return with_verdict(report, report.assertions) if batch is None else report
