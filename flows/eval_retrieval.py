"""The retrieval evaluation flow: golden questions × configurations, scored and logged as a batch."""

from __future__ import annotations

from typing import Any

from prefect import flow

from flows.finished import finished, with_verdict
from flows.run_names import run_name
from flows.runners import FannedOut, WorkClock, task_runner
from ragassay.config import RetrievalEvalConfig
from ragassay.config_errors import with_overrides
from ragassay.evaluation.outcomes import RetrievalEvalReport
from ragassay.tracking import Batch
from tasks.eval_retrieval import (
    coverage_of_systems,
    load_golden_questions,
    log_retrieval_batch,
    publish_retrieval_report,
    save_configuration_records,
    score_each,
    searching_task,
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
        searching = FannedOut(runner, clock)
        for c in config.configurations:
            searching.submit(
                c.label,
                searching_task(c),
                home=config.home,
                collections=config.collections,
                questions=questions,
                configuration=c,
                depth=config.depth,
            )
        searched = searching.single()
    if config.save_records is not None:
        save_configuration_records(config.save_records, questions, searched)
    per_question = score_each(config, questions, searched)
    summary = summarize_retrieval(config, per_question, coverage_of_systems(searched))
    report = log_retrieval_batch(config, context, searched, per_question, summary, batch, clock.spans())
    publish_retrieval_report(config, report, describe_batch=batch is None)
    finished(report)
    # In a pipeline, the pipeline's flow run carries the verdict.
    return with_verdict(report, report.assertions) if batch is None else report
