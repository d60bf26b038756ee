"""The evaluation-case flow: every case of a suite answered and checked, logged as one MLflow run."""

from __future__ import annotations

from prefect import flow
from prefect.runtime import flow_run

from flows.finished import finished
from flows.run_names import run_name
from ragassay.gates.case_runs import CaseReport
from ragassay.gates.suite import CaseSuite
from tasks.eval_answers import load_judge, load_judge_calibration
from tasks.resources import locate_models
from tasks.run_cases import log_cases_run, run_suite


@flow(name="run-cases", flow_run_name=run_name, validate_parameters=True)
def run_cases_flow(suite: CaseSuite) -> CaseReport:
    """Answer and check each case; a case passes only when all its checks pass."""
    locate_models(suite.chat_models())
    judge = load_judge(suite.judge, suite.home)
    calibration = load_judge_calibration(suite.judge, suite.home, suite.collections, str(flow_run.id))
    return finished(log_cases_run(suite, run_suite(suite, judge, calibration), judge.model_id))
