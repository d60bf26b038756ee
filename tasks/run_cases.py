"""Prefect tasks of evaluation cases: run a suite (answer each case and check it); log the suite to
MLflow."""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE
from pydantic import BaseModel

from ragassay import tracking
from ragassay.gates import case_runs
from ragassay.gates.case_runs import SuiteResult, suite_digest
from ragassay.gates.suite import CaseSuite
from ragassay.judge.judge import Judge
from ragassay.judge.prompts import PROMPT_VERSIONS
from tasks.publish import run_origin
from tasks.resources import MODEL_SERVER_RETRIES, worker_resources


class CaseReport(BaseModel):
    """Per-case results, counts, and where the run is."""

    suite: str
    batch_id: str
    run_id: str
    cases: list[dict]
    passed: int
    failed: int
    judge_errors: int
    judge_model: str
    tracking_uri: str


@task(name="run-suite", cache_policy=NO_CACHE, **MODEL_SERVER_RETRIES)
def run_suite(suite: CaseSuite, judge: Judge) -> SuiteResult:
    """Answer and check every case of the suite."""
    return case_runs.run_suite(worker_resources(), suite, judge)


@task(name="log-cases-run", cache_policy=NO_CACHE)
def log_cases_run(suite: CaseSuite, result: SuiteResult, judge_model_id: str) -> CaseReport:
    """One MLflow run for the suite: its settings, pass/fail counts and the per-case table."""
    collections = list(suite.collections)
    params = {
        "suite": suite.name,
        "suite_digest": suite_digest(suite),
        "collections": collections,
        "answer": suite.answer.model_dump(),
        "judge": suite.judge.model_dump(),
        "judge_model_id": judge_model_id,
        "prompt_version": PROMPT_VERSIONS,
    }
    batch = tracking.open_batch(
        suite.home, collections, "cases", tracking.flatten_params(params), run_origin("ragassay cases run")
    )
    batch_id, run_id = batch.batch_id, batch.parent_run_id
    mlflow_client = tracking.client(suite.home)
    tracking.log_values(mlflow_client, run_id, {}, result.metrics)
    tracking.log_tables(mlflow_client, run_id, {"cases": result.results})
    tracking.finish(mlflow_client, run_id)
    return CaseReport(
        suite=suite.name,
        batch_id=batch_id,
        run_id=run_id,
        cases=result.rows,
        passed=result.passed,
        failed=result.results.height - result.passed,
        judge_errors=result.judge_errors,
        judge_model=judge_model_id,
        tracking_uri=tracking.tracking_uri(suite.home),
    )
