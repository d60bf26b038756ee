"""Running a suite of evaluation cases: each case's input answered through the real answer path and
its checks (gates/cases.py) run on the answer, with what the answer model and judge cost."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import ClassVar

import polars as pl
from pydantic import BaseModel

from ragassay.answer.answering import answer_question
from ragassay.gates.assertions import AssertionResult
from ragassay.gates.cases import (
    CheckResult,
    case_passed,
    check_contains,
    check_excludes,
    check_grounded,
    check_judge_score,
)
from ragassay.gates.suite import CaseSuite, EvalCase
from ragassay.judge.judge import Judge, context_text, judging_cost, verdict_of
from ragassay.judge.prompts import PROMPT_VERSIONS
from ragassay.llm.structured import Usage
from ragassay.metrics.corrected_rows import CorrectedEstimate
from ragassay.metrics.judge_calibration import JudgeCalibration
from ragassay.metrics.judge_error import corrected_mean
from ragassay.progress import ProgressReporter
from ragassay.resources import Resources
from ragassay.store.schemas import CASE_RESULTS
from ragassay.tracking import LoggedBatch


@dataclass(frozen=True)
class CaseResult:
    """One case's row of cases.parquet, and what answering and judging it cost."""

    row: dict
    answer_usage: Usage
    judge_usage: Usage


def run_case(resources: Resources, suite: CaseSuite, case: EvalCase, judge: Judge) -> CaseResult:
    """Answer the case's input through `ragassay answer`'s code path and run each of its checks."""
    answer = answer_question(resources, suite.home, list(suite.collections), case.input, suite.answer)
    checks: list[CheckResult] = []
    asked = []
    if case.contains:
        checks.append(check_contains(answer.prose, case.contains))
    if case.excludes:
        checks.append(check_excludes(answer.prose, case.excludes))
    score = None
    if case.judge is not None:
        result = judge.criteria(case.input, answer.prose, case.judge.criteria)
        asked.append(result)
        score = result.value
        checks.append(check_judge_score(score, result.error, case.judge.min_score))
    verdicts = []
    if case.grounded:
        passages = context_text(answer.sources).splitlines()
        supports = judge.support_by_passage(passages, [statement.text for statement in answer.statements], case.input)
        asked += supports
        verdicts = [verdict_of(result) for result in supports]
        checks.append(check_grounded(verdicts, len(answer.sources), case.min_supported))
    row = {
        "case_id": case.id,
        "input": case.input,
        "outcome": answer.outcome,
        "answer": answer.text,
        "passed": case_passed(checks),
        "checks": "\n".join(f"{c.check} {'ok' if c.passed else 'FAILED'}: {c.detail}" for c in checks),
        "failures": "; ".join(c.check for c in checks if not c.passed),
        "judge_score": score.score if score else None,
        "judge_reason": score.reason if score else next((c.detail for c in checks if c.check == "judge"), None),
        "judge_error": any(c.judge_error for c in checks),
        "claims": len(verdicts) if case.grounded else None,
        "claims_supported": sum(1 for v in verdicts if v) if case.grounded else None,
        "passages": len(answer.sources),
    }
    return CaseResult(row, answer.usage, judging_cost(asked)[0])


@dataclass(frozen=True)
class SuiteResult:
    """Every case's row, the run metrics (counts and cost), and the rows as a table."""

    rows: list[dict]
    results: pl.DataFrame
    metrics: dict[str, float]
    # The grounded claims' supported share over the suite, raw and judge-corrected (grounded_share).
    grounded: GroundedShare | None = None

    @property
    def passed(self) -> int:
        return int(self.metrics["cases_passed"])

    @property
    def judge_errors(self) -> int:
        return int(self.metrics["judge_errors"])


def run_suite(
    resources: Resources, suite: CaseSuite, judge: Judge, calibration: JudgeCalibration | None = None
) -> SuiteResult:
    """Answer and check each case; a case passes only when all its checks pass. The suite's
    grounded claims are also summed up as a share, with its judge-corrected estimate."""
    outcomes = []
    with ProgressReporter(f"running {len(suite.cases)} cases of {suite.name}", total=len(suite.cases)) as progress:
        for done, case in enumerate(suite.cases, start=1):
            outcomes.append(run_case(resources, suite, case, judge))
            progress(done, len(suite.cases))
    rows = [outcome.row for outcome in outcomes]
    results = pl.DataFrame(rows, schema=CASE_RESULTS.schema)
    passed = int(results["passed"].sum())
    metrics = {
        "cases": results.height,
        "cases_passed": passed,
        "cases_failed": results.height - passed,
        "judge_errors": int(results["judge_error"].sum()),
        **Usage.total(o.answer_usage for o in outcomes).as_metrics("answer_model"),
        **Usage.total(o.judge_usage for o in outcomes).as_metrics("judge"),
    }
    grounded = grounded_share(rows, calibration)
    if grounded is not None:
        metrics |= {
            f"grounded_{key}": value
            for key, value in grounded.model_dump(include=GroundedShare.METRICS).items()
            if value is not None
        }
    return SuiteResult(rows, results, metrics, grounded)


class GroundedShare(CorrectedEstimate):
    """The share of grounded claims judged supported over a suite's cases, its judge-corrected
    estimate, what the correction rests on, and notes of its limits."""

    # The fields logged as run metrics (`grounded_<field>`).
    METRICS: ClassVar[set[str]] = {"cases", "supported", "corrected", "corrected_low", "corrected_high"}

    cases: int
    supported: float
    calibration: str | None
    notes: list[str]


def grounded_share(rows: list[dict], calibration: JudgeCalibration | None) -> GroundedShare | None:
    """Over the cases whose `grounded` check judged claims: the mean share of claims judged
    supported, and its judge-corrected estimate with a 95% interval over the cases and the labels
    (metrics/judge_error.corrected_mean); a case's own check stays the judge's verdict. None when
    no case judged a claim."""
    shares = [row["claims_supported"] / row["claims"] for row in rows if row["claims"] and not row["judge_error"]]
    if not shares:
        return None
    corrected = corrected_mean(shares, calibration.strata) if calibration is not None else None
    return GroundedShare(
        cases=len(shares),
        supported=sum(shares) / len(shares),
        corrected=corrected.estimate if corrected else None,
        corrected_low=corrected.low if corrected else None,
        corrected_high=corrected.high if corrected else None,
        calibration=f"{calibration.source}: {calibration.description}" if calibration else None,
        notes=calibration.warnings()
        if calibration
        else ["no labels of these documents for this judge: the share is the judge's own"],
    )


def suite_digest(suite: CaseSuite) -> str:
    """Identity of a suite's settings and cases (its workspace left out)."""
    return hashlib.sha256(suite.model_dump_json(exclude={"home"}).encode()).hexdigest()[:16]


def case_assertions(suite: CaseSuite, rows: list[dict]) -> list[AssertionResult]:
    """Each case as an assertion (`case queen-eggs passes`: every check of it passed), for the
    suite run's verdict; a failed one's reason names its failed checks."""
    return [
        AssertionResult(
            assertion=f"case {row['case_id']} passes",
            value=1.0 if row["passed"] else 0.0,
            passed=row["passed"],
            reason=None if row["passed"] else f"failed checks: {row['failures']}",
            configuration=suite.name,
            metric="passed",
            operator="==",
            bound=1.0,
        )
        for row in rows
    ]


class CaseReport(BaseModel):
    """Per-case results, counts, each case as an assertion, and where the run is."""

    suite: str
    batch_id: str
    run_id: str
    cases: list[dict]
    passed: int
    failed: int
    judge_errors: int
    judge_model: str
    tracking_uri: str
    grounded: GroundedShare | None = None
    assertions: list[AssertionResult] = []


def suite_params(suite: CaseSuite, judge_model_id: str) -> dict:
    """What a suite's run records as its settings."""
    return {
        "suite": suite.name,
        "suite_digest": suite_digest(suite),
        "collections": list(suite.collections),
        "answer": suite.answer.model_dump(),
        "judge": suite.judge.model_dump(),
        "judge_model_id": judge_model_id,
        "prompt_version": PROMPT_VERSIONS,
    }


def case_report(suite: CaseSuite, result: SuiteResult, judge_model_id: str, logged: LoggedBatch) -> CaseReport:
    return CaseReport(
        suite=suite.name,
        batch_id=logged.batch_id,
        run_id=logged.parent_run_id,
        cases=result.rows,
        passed=result.passed,
        failed=result.results.height - result.passed,
        judge_errors=result.judge_errors,
        judge_model=judge_model_id,
        tracking_uri=logged.tracking_uri,
        grounded=result.grounded,
        assertions=case_assertions(suite, result.rows),
    )
