"""The retrieval evaluation flow: golden questions × configurations, scored and logged as a batch."""

from __future__ import annotations

from prefect import flow

from ragassay.config import RetrievalEvalConfig
from ragassay.tracking import Batch
from tasks.eval_retrieval import (
    RetrievalEvalReport,
    load_golden_questions,
    log_retrieval_batch,
    publish_retrieval_report,
    score_configuration,
    search_golden_questions,
    summarize_batch,
)


@flow(name="eval-retrieval", validate_parameters=True)
def eval_retrieval_flow(config: RetrievalEvalConfig, batch: Batch | None = None) -> RetrievalEvalReport:
    """Search every golden question under each configuration, score, compare, log one batch (or
    into the pipeline's batch), and show the outcome on the flow run."""
    questions, context = load_golden_questions(config)
    searched, per_question = {}, {}
    for configuration in config.configurations:
        label = configuration.label
        searched[label] = search_golden_questions(config.home, config.collections, questions, configuration, config.depth)
        per_question[label] = score_configuration(label, questions, searched[label].rankings, config.metrics(), config.depth)
    summary = summarize_batch(config, per_question)
    report = log_retrieval_batch(config, context, searched, per_question, summary, batch)
    publish_retrieval_report(config, report)
    return report
