"""The evaluation-case flow: every case of a suite answered and checked, logged as one MLflow run."""

from __future__ import annotations

import uuid

import polars as pl
from prefect import flow
from pydantic import BaseModel

from ragassay.config import CaseSuite
from ragassay.judge_service import Judge
from tasks import tracking
from tasks.case_tasks import log_cases_run, run_case
from tasks.models import Usage
from tasks.progress import ProgressReporter
from tasks.schemas import CASE_RESULTS


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


@flow(name="run-cases", validate_parameters=True)
def run_cases_flow(suite: CaseSuite) -> CaseReport:
    """Answer and check each case; a case passes only when all its checks pass."""
    batch_id = uuid.uuid4().hex[:12]
    judge = Judge(suite.judge)
    answer_usage = Usage()
    rows = []
    with ProgressReporter(f"running {len(suite.cases)} cases of {suite.name}") as progress:
        for done, case in enumerate(suite.cases, start=1):
            rows.append(run_case(suite, case, judge, answer_usage))
            progress(done, len(suite.cases))
    results = pl.DataFrame(rows, schema=CASE_RESULTS.schema)
    passed = int(results["passed"].sum())
    judge_errors = int(results["judge_error"].sum())
    metrics = {
        "cases": results.height,
        "cases_passed": passed,
        "cases_failed": results.height - passed,
        "judge_errors": judge_errors,
        **answer_usage.as_metrics("answer_model"),
        **judge.usage.as_metrics("judge"),
    }
    run_id = log_cases_run(suite, batch_id, results, metrics, judge.model_id)
    return CaseReport(
        suite=suite.name,
        batch_id=batch_id,
        run_id=run_id,
        cases=rows,
        passed=passed,
        failed=results.height - passed,
        judge_errors=judge_errors,
        judge_model=judge.model_id,
        tracking_uri=tracking.tracking_uri(suite.home),
    )
