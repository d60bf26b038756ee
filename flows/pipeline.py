"""The pipeline flow: ingest → index → golden set → retrieval evaluation → answer evaluation, each
stage a subflow of one flow run and every MLflow run in one batch. Stages switched off in the
config are skipped; a stage whose inputs are missing fails before it starts, naming the stage
that provides them; a failed stage fails the flow run with the stage named, and what earlier
stages wrote stays. A run whose assertions do not all hold ends Failed once everything is logged,
its message naming each failed one."""

from __future__ import annotations

import time
from typing import Any

from prefect import flow

from flows.eval_answers import eval_answers_flow
from flows.eval_retrieval import eval_retrieval_flow
from flows.finished import finished, stage_finished, with_verdict
from flows.generate_golden import generate_golden_flow
from flows.index import index_flow
from flows.ingest import ingest_flow
from flows.run_names import TAG_PIPELINE, run_name, tagged
from ragassay.config import PipelineConfig
from ragassay.config_errors import with_overrides
from ragassay.errors import RagassayError
from ragassay.pipeline_stages import PipelineReport, StagesDone
from ragassay.tracking import Batch
from ragassay.work_span import WorkSpan, now_ms
from tasks.pipeline import (
    add_golden_file,
    check_stage_inputs,
    end_stopped_runs,
    finish_pipeline,
    log_stage_run,
    mark_pipeline_failed,
    open_pipeline_batch,
    summarize_golden_stage,
)
from tasks.resources import locate_models


class StageFailed(RagassayError):
    """A pipeline stage failed; the message names it."""


def _ingest(config: PipelineConfig, batch: Batch):
    started = now_ms()
    report = ingest_flow(config.ingest_config())
    log_stage_run(config, batch, "ingest", report.counts, config.ingest.run_params(), WorkSpan.since(started))
    return report


def _index(config: PipelineConfig, batch: Batch):
    started = now_ms()
    report = index_flow(config.index_config())
    log_stage_run(config, batch, "index", report.run_metrics(), report.run_params(), WorkSpan.since(started))
    return report


def _golden(config: PipelineConfig, batch: Batch):
    file_outcome = add_golden_file(config) if config.golden.file else None
    generation = generate_golden_flow(config.generate_config(), batch) if config.golden.generate else None
    return summarize_golden_stage(config, file_outcome, generation)


STAGES = {
    "ingest": _ingest,
    "index": _index,
    "golden": _golden,
    "retrieval": lambda config, batch: eval_retrieval_flow(config.retrieval_config(), batch),
    "answers": lambda config, batch: eval_answers_flow(config.answer_config(), batch),
}


@flow(name="pipeline", flow_run_name=run_name, validate_parameters=True)
def pipeline_flow(config: PipelineConfig, overrides: dict[str, Any] | None = None) -> PipelineReport:
    """Run every enabled stage of one collection as subflows, logged as one MLflow batch.
    overrides: dotted keys changed in config (`{"answers.max_questions": 2}`), so a deployment's
    run can send only what differs from its parameters (config_errors.with_overrides)."""
    config = with_overrides(config, overrides)
    started = time.time()
    locate_models(config.chat_models())
    batch = open_pipeline_batch(config)
    done = StagesDone()
    try:
        for stage in config.enabled_stages():
            stage_started = time.perf_counter()
            try:
                check_stage_inputs(config, stage)
                with tagged(config, TAG_PIPELINE, f"batch:{batch.batch_id}"):
                    stage_report = STAGES[stage](config, batch)
            except Exception as error:
                mark_pipeline_failed(config, batch, stage, f"{type(error).__name__}: {error}")
                raise StageFailed(f"pipeline stage {stage} failed: {error}") from error
            done.add(stage, stage_report, time.perf_counter() - stage_started)
            stage_finished(stage, stage_report)  # a command shows it now, while the next stage runs
        report = finished(finish_pipeline(config, batch, started, done.seconds, done.reports))
    except BaseException as stop:
        if not isinstance(stop, Exception):
            # Ctrl-C, SIGTERM, or the flow run cancelled from the Prefect UI (its worker's
            # SIGTERM): the batch ends KILLED with what its stages logged, not RUNNING for ever.
            end_stopped_runs(f"stopped: {type(stop).__name__}")
        raise
    # Everything is logged and published: a failed assertion now fails the flow run, naming it.
    return with_verdict(report, report.assertions)
