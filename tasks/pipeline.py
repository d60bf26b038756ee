"""Prefect tasks of the pipeline: open its MLflow batch, check a stage's inputs, add the golden
file, log the ingest, index and golden stages as runs of the batch, and close the batch with the
pipeline's summary (on MLflow's parent run and as the flow run's Markdown artifact)."""

from __future__ import annotations

import time

from prefect import task
from prefect.cache_policies import NO_CACHE
from prefect.runtime import flow_run

from ragassay import pipeline, tracking
from ragassay.config import PipelineConfig
from ragassay.evaluation.reports import warning_text
from ragassay.golden import store
from ragassay.golden.generation import GenerationReport
from ragassay.index.build import IndexReport
from ragassay.ingest.files import IngestReport
from ragassay.pipeline import PipelineReport
from ragassay.tracking import Batch
from tasks.eval_answers import AnswerEvalReport
from tasks.eval_retrieval import RetrievalEvalReport
from tasks.publish import flow_run_url, publish, run_origin
from tasks.resources import TRACKING_RETRIES


@task(name="open-pipeline-batch", cache_policy=NO_CACHE, **TRACKING_RETRIES)
def open_pipeline_batch(config: PipelineConfig) -> Batch:
    """The pipeline run's MLflow batch: one parent run whose children are every stage's runs.
    Retried: the tracking server may be briefly unreachable."""
    params = tracking.flatten_params({"pipeline": config.model_dump(mode="json", exclude={"home"}, exclude_none=True)})
    return tracking.open_batch(
        config.home, [config.collection], "pipeline", params, run_origin("ragassay run"), owned=False
    )


@task(name="check-stage-inputs", cache_policy=NO_CACHE)
def check_stage_inputs(config: PipelineConfig, stage: str) -> None:
    """Fail before the stage starts when what it needs is missing, naming the stage that makes it."""
    pipeline.check_inputs(config, stage)


@task(name="add-golden-file", cache_policy=NO_CACHE)
def add_golden_file(config: PipelineConfig) -> dict:
    """The golden file's entries not yet stored, validated and added."""
    return pipeline.golden_file_outcome(store.add_from_file(config.home, config.collection, config.golden.file))


@task(name="log-stage-run", cache_policy=NO_CACHE, **TRACKING_RETRIES)
def log_stage_run(
    config: PipelineConfig, batch: Batch, stage: str, metrics: dict[str, float], params: dict[str, str]
) -> str:
    """A stage without configurations of its own (ingest, index) as one child run of the batch."""
    return tracking.log_configuration_run(
        tracking.client(config.home), batch, stage, config.collection, params, metrics, {}
    )


@task(name="summarize-golden-stage", cache_policy=NO_CACHE)
def summarize_golden_stage(
    config: PipelineConfig, file_outcome: dict | None, generation: GenerationReport | None
) -> dict:
    """The golden stage's outcome: the file's entries, this run's generation, and the totals of
    this seed over every run."""
    return {
        "file": file_outcome,
        "generation": generation.model_dump() if generation else None,
        "totals": pipeline.generation_totals(config),
    }


@task(name="mark-pipeline-failed", cache_policy=NO_CACHE)
def mark_pipeline_failed(config: PipelineConfig, batch: Batch, stage: str, error: str) -> None:
    """The batch's parent run ends FAILED, tagged with the stage and the error; what earlier stages
    logged and wrote stays."""
    mlflow_client = tracking.client(config.home)
    mlflow_client.set_tag(batch.parent_run_id, "ragassay.failed_stage", stage)
    mlflow_client.set_tag(batch.parent_run_id, "ragassay.error", error[:5000])
    tracking.finish(mlflow_client, batch.parent_run_id, "FAILED")


@task(name="finish-pipeline", cache_policy=NO_CACHE, **TRACKING_RETRIES)
def finish_pipeline(
    config: PipelineConfig,
    batch: Batch,
    started: float,
    stage_seconds: dict[str, float],
    ingest: IngestReport | None,
    index: IndexReport | None,
    golden: dict | None,
    retrieval: RetrievalEvalReport | None,
    answers: AnswerEvalReport | None,
) -> PipelineReport:
    """The pipeline's figures on the batch's parent run (stage seconds, documents, golden-set size,
    the gates), the run finished, the summary published on the flow run; the report."""
    ingest_dump = {**ingest.model_dump(), "counts": ingest.counts()} if ingest else None
    index_dump = index.model_dump() if index else None
    retrieval_dump = retrieval.model_dump() if retrieval else None
    answers_dump = answers.model_dump() if answers else None
    warnings = [f"ingest: rejected {r.path}: {r.reason} ({r.detail})" for r in (ingest.rejected if ingest else [])]
    if golden and golden["file"]:
        warnings += [f"golden file: {p['source']}: {p['reason']} ({p['detail']})" for p in golden["file"]["refused"]]
    warnings += [f"retrieval: {w}" for w in (retrieval.warnings if retrieval else [])]
    warnings += [f"answers: {warning_text(w)}" for w in (answers.warnings if answers else [])]
    assertions = (retrieval.assertions if retrieval else []) + (answers.assertions if answers else [])
    flow_run_id = flow_run.root_flow_run_id or flow_run.id
    report = PipelineReport(
        collection=config.collection,
        batch_id=batch.batch_id,
        parent_run_id=batch.parent_run_id,
        stages=config.enabled_stages(),
        stage_seconds=stage_seconds,
        ingest=ingest_dump,
        index=index_dump,
        golden=golden,
        retrieval=retrieval_dump,
        answers=answers_dump,
        cache=pipeline.cache_lines(ingest_dump, index_dump, golden, answers_dump),
        warnings=warnings,
        assertions=assertions,
        seconds=round(time.time() - started, 3),
        mlflow_url=tracking.run_url(config.home, batch),
        mlflow_ui_command=tracking.ui_command(config.home),
        prefect_flow_run_id=flow_run_id,
        prefect_flow_run_url=flow_run_url(flow_run_id),
    )
    metrics = {f"seconds/{stage}": seconds for stage, seconds in stage_seconds.items()}
    metrics["seconds/total"] = report.seconds
    if ingest:
        metrics.update({f"documents/{outcome}": count for outcome, count in ingest.counts().items()})
    if golden:
        metrics["golden/size"] = golden["totals"]["golden_size"]
        metrics["golden/accepted_total"] = golden["totals"]["accepted"]
    metrics["gates/failed"] = sum(1 for a in assertions if not a["passed"])
    mlflow_client = tracking.client(config.home)
    tracking.log_values(mlflow_client, batch.parent_run_id, {}, metrics)
    tracking.finish(mlflow_client, batch.parent_run_id)
    publish(
        "pipeline",
        [config.collection],
        [],
        pipeline.pipeline_markdown(report),
        f"pipeline run, MLflow batch {batch.batch_id}",
    )
    return report
