"""Prefect tasks of the pipeline: open its MLflow batch, check a stage's inputs, add the golden
file, log the ingest, index and golden stages as runs of the batch, and close the batch with the
pipeline's summary (on MLflow's parent run and as the flow run's Markdown artifact)."""

from __future__ import annotations

import time

from prefect import task
from prefect.cache_policies import NO_CACHE
from prefect.runtime import flow_run

from ragassay import pipeline_stages, tracking
from ragassay.config import PipelineConfig
from ragassay.gates.assertions import assertion_rows, batch_verdict
from ragassay.golden import store
from ragassay.golden.generation import GenerationReport
from ragassay.pipeline_stages import GoldenFileOutcome, GoldenStageReport, PipelineReport, StageReports
from ragassay.tracking import Batch
from ragassay.work_span import WorkSpan
from tasks.publish import flow_run_url, name_flow_run, publish, publish_verdict, run_origin
from tasks.resources import TRACKING_RETRIES


def end_stopped_runs(reason: str) -> None:
    """The MLflow runs a stopped flow run leaves unfinished end KILLED, tagged with the reason. A
    plain function, not a task: a flow run being cancelled starts no new task runs."""
    tracking.end_unfinished_runs(reason)


@task(name="open-pipeline-batch", cache_policy=NO_CACHE, **TRACKING_RETRIES)
def open_pipeline_batch(config: PipelineConfig) -> Batch:
    """The pipeline run's MLflow batch: one parent run whose children are every stage's runs.
    Retried: the tracking server may be briefly unreachable; one that does not answer through
    MLflow's retries fails the run at once with TrackingStoreFailed, before any work."""
    with tracking.store_failures_as_typed(config.home):
        return _open_batch(config)


def _open_batch(config: PipelineConfig) -> Batch:
    params = tracking.flatten_params({"pipeline": config.model_dump(mode="json", exclude={"home"}, exclude_none=True)})
    batch = tracking.open_batch(
        config.home, [config.collection], "pipeline", params, run_origin("ragassay run"), owned=False
    )
    labels = [c.label for stage in (config.retrieval, config.answers) if stage.enabled for c in stage.configurations]
    name_flow_run("pipeline", [config.collection], batch.batch_id, list(dict.fromkeys(labels)))
    return batch


@task(name="check-stage-inputs", cache_policy=NO_CACHE)
def check_stage_inputs(config: PipelineConfig, stage: str) -> None:
    """Fail before the stage starts when what it needs is missing, naming the stage that makes it."""
    pipeline_stages.check_inputs(config, stage)


@task(name="add-golden-file", cache_policy=NO_CACHE)
def add_golden_file(config: PipelineConfig) -> GoldenFileOutcome:
    """The golden files' entries and dialogues not yet stored, validated and added."""
    return pipeline_stages.golden_file_outcome(
        [store.add_from_file(config.home, config.collection, path) for path in config.golden.files]
    )


@task(name="log-stage-run", cache_policy=NO_CACHE, **TRACKING_RETRIES)
def log_stage_run(
    config: PipelineConfig,
    batch: Batch,
    stage: str,
    metrics: dict[str, float],
    params: dict[str, str],
    work_span: WorkSpan | None = None,
) -> str:
    """A stage without configurations of its own (ingest, index) as one child run of the batch,
    over the time the stage took (work_span). A tracking server that does not answer fails the
    stage with TrackingStoreFailed, naming it (what the stage stored in the workspace stays)."""
    with tracking.store_failures_as_typed(config.home):
        return tracking.log_configuration_run(
            tracking.client(config.home), batch, stage, config.collection, params, metrics, {}, work_span=work_span
        )


@task(name="summarize-golden-stage", cache_policy=NO_CACHE)
def summarize_golden_stage(
    config: PipelineConfig, file_outcome: GoldenFileOutcome | None, generation: GenerationReport | None
) -> GoldenStageReport:
    """The golden stage's outcome: the file's entries, this run's generation, and the totals of
    this seed over every run."""
    return pipeline_stages.golden_stage_report(config, file_outcome, generation)


@task(name="mark-pipeline-failed", cache_policy=NO_CACHE)
def mark_pipeline_failed(config: PipelineConfig, batch: Batch, stage: str, error: str) -> None:
    """The batch's parent run ends FAILED, tagged with the stage and the error; what earlier stages
    logged and wrote stays. A tracking server that does not answer is left as it is: the stage's
    own error says so."""
    try:
        with tracking.store_failures_as_typed(config.home):
            tracking.mark_failed(config.home, batch, stage, error)
    except tracking.TrackingStoreFailed:
        return


@task(name="finish-pipeline", cache_policy=NO_CACHE, **TRACKING_RETRIES)
def finish_pipeline(
    config: PipelineConfig, batch: Batch, started: float, stage_seconds: dict[str, float], reports: StageReports
) -> PipelineReport:
    """The pipeline's figures on the batch's parent run (stage seconds, documents, golden-set size,
    the gates) with its verdict, the run finished; the summary, the batch's metrics and its
    assertions published on the flow run; the report."""
    flow_run_id = flow_run.root_flow_run_id or flow_run.id
    report = pipeline_stages.pipeline_report(
        config,
        reports,
        tracking.locate_batch(config.home, batch),
        stage_seconds,
        time.time() - started,
        flow_run_id,
        flow_run_url(flow_run_id),
    )
    verdict = batch_verdict(report.assertions)
    markdown = pipeline_stages.pipeline_markdown(report)
    # A stage that found the server gone says so: asking it again would only cost another wait.
    not_logged = next((r.not_logged for r in (report.answers, report.retrieval) if r and r.not_logged), None)
    if not_logged is None:
        try:
            with tracking.store_failures_as_typed(config.home):
                mlflow_client = tracking.client(config.home)
                tracking.log_values(mlflow_client, batch.parent_run_id, {}, pipeline_stages.pipeline_metrics(report))
                tracking.describe_run(config.home, batch.parent_run_id, markdown)
                tracking.log_verdict(mlflow_client, batch, "pipeline", verdict, assertion_rows(report.assertions))
                tracking.finish(mlflow_client, batch.parent_run_id, tracking.verdict_status(verdict))
        except tracking.TrackingStoreFailed as error:
            not_logged = str(error)
    if not_logged is not None:
        kept_in = str(tracking.unlogged_folder(config.home, batch.batch_id))
        report = report.model_copy(update={"not_logged": not_logged, "kept_in": kept_in})
        markdown = pipeline_stages.pipeline_markdown(report)
        tracking.keep_report(kept_in, markdown)
    publish(
        "pipeline",
        [config.collection],
        pipeline_stages.pipeline_metric_rows(report),
        markdown,
        f"pipeline run, MLflow batch {batch.batch_id}, verdict {verdict}",
    )
    publish_verdict("pipeline", [config.collection], report.assertions)
    return report
