"""Prefect tasks of evaluation cases: run a suite (answer each case and check it); log the suite to
MLflow."""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE

from ragassay import tracking
from ragassay.gates import case_runs
from ragassay.gates.assertions import assertion_rows, batch_verdict
from ragassay.gates.case_runs import CaseReport, SuiteResult
from ragassay.gates.suite import CaseSuite
from ragassay.judge.judge import Judge
from ragassay.metrics.judge_calibration import JudgeCalibration
from tasks.publish import publish_verdict, run_origin
from tasks.resources import MODEL_SERVER_RETRIES, worker_resources


@task(name="run-suite", cache_policy=NO_CACHE, **MODEL_SERVER_RETRIES)
def run_suite(suite: CaseSuite, judge: Judge, calibration: JudgeCalibration | None = None) -> SuiteResult:
    """Answer and check every case of the suite; the grounded claims' share corrected for the judge's error."""
    return case_runs.run_suite(worker_resources(), suite, judge, calibration)


@task(name="log-cases-run", cache_policy=NO_CACHE)
def log_cases_run(suite: CaseSuite, result: SuiteResult, judge_model_id: str) -> CaseReport:
    """One MLflow run for the suite: its settings, pass/fail counts, the per-case table and its
    verdict (each case an assertion); the verdict's table on the flow run too. A tracking server
    that does not answer is TrackingStoreFailed naming it and its reason."""
    with tracking.store_failures_as_typed(suite.home):
        return _log_cases_run(suite, result, judge_model_id)


def _log_cases_run(suite: CaseSuite, result: SuiteResult, judge_model_id: str) -> CaseReport:
    params = tracking.flatten_params(case_runs.suite_params(suite, judge_model_id))
    batch = tracking.open_batch(suite.home, list(suite.collections), "cases", params, run_origin("ragassay cases run"))
    mlflow_client = tracking.client(suite.home)
    tracking.log_values(mlflow_client, batch.parent_run_id, {}, result.metrics)
    tracking.log_tables(mlflow_client, batch.parent_run_id, {"cases": result.results})
    report = case_runs.case_report(suite, result, judge_model_id, tracking.locate_batch(suite.home, batch))
    verdict = batch_verdict(report.assertions)
    tracking.log_verdict(mlflow_client, batch, "cases", verdict, assertion_rows(report.assertions))
    tracking.finish(mlflow_client, batch.parent_run_id, tracking.verdict_status(verdict))
    publish_verdict("cases", list(suite.collections), report.assertions)
    return report
