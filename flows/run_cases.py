"""The evaluation-case flow: every case of a suite answered and checked, logged as one MLflow run."""

from __future__ import annotations

from typing import Any

from prefect import flow
from prefect.runtime import flow_run

from flows.finished import finished, with_verdict
from flows.run_names import run_name
from ragassay.config_errors import with_overrides
from ragassay.gates.case_runs import CaseReport
from ragassay.gates.suite import CaseSuite
from tasks.eval_answers import load_judge, load_judge_calibration
from tasks.resources import locate_models
from tasks.run_cases import log_cases_run, run_suite


@flow(name="run-cases", flow_run_name=run_name, validate_parameters=True)
def run_cases_flow(suite: CaseSuite, overrides: dict[str, Any] | None = None) -> CaseReport:
    """Answer and check each case; a case passes only when all its checks pass, and the flow run
    only when every case does. overrides: dotted keys changed in suite (config_errors.with_overrides)."""
    suite = with_overrides(suite, overrides)
    locate_models(suite.chat_models())
    judge = load_judge(suite.judge, suite.home)
    calibration = load_judge_calibration(suite.judge, suite.home, suite.collections, str(flow_run.id))
    report = finished(log_cases_run(suite, run_suite(suite, judge, calibration), judge.model_id))
    return with_verdict(report, report.assertions)  # logged: a failed case now fails the flow run
