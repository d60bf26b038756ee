"""Prefect tasks of evaluation cases: answer a case and run its checks; log the suite to MLflow."""

from __future__ import annotations

import hashlib

import polars as pl
from prefect import task
from prefect.cache_policies import NO_CACHE

from ragassay.answer_service import answer_question
from ragassay.config import CaseSuite, EvalCase
from ragassay.judge_service import Judge, context_text, verdict_of
from tasks import tracking
from tasks.cases import CheckResult, case_passed, check_contains, check_excludes, check_grounded, check_judge_score
from tasks.judging import PROMPT_VERSIONS
from tasks.models import Usage


@task(name="run-case", cache_policy=NO_CACHE)
def run_case(suite: CaseSuite, case: EvalCase, judge: Judge, usage: Usage) -> dict:
    """Answer the case's input through `ragassay answer`'s code path and run each of its checks."""
    answer = answer_question(suite.home, list(suite.collections), case.input, suite.answer.answer_config(), usage)
    checks: list[CheckResult] = []
    if case.contains:
        checks.append(check_contains(answer.prose, case.contains))
    if case.excludes:
        checks.append(check_excludes(answer.prose, case.excludes))
    score = None
    if case.judge is not None:
        result = judge.criteria(case.input, answer.prose, case.judge.criteria)
        score = result.value
        checks.append(check_judge_score(score, result.error, case.judge.min_score))
    verdicts = []
    if case.grounded:
        context = context_text(answer.sources)
        verdicts = [verdict_of(judge.support(context, statement.text)) for statement in answer.statements]
        checks.append(check_grounded(verdicts, len(answer.sources), case.min_supported))
    return {
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


def suite_digest(suite: CaseSuite) -> str:
    return hashlib.sha256(suite.model_dump_json(exclude={"home"}).encode()).hexdigest()[:16]


@task(name="log-cases-run", cache_policy=NO_CACHE)
def log_cases_run(suite: CaseSuite, batch_id: str, results: pl.DataFrame, metrics: dict[str, float], judge_model_id: str) -> str:
    """One MLflow run for the suite: its settings, pass/fail counts and the per-case table."""
    collections = list(suite.collections)
    mlflow_client = tracking.client(suite.home)
    experiment_id = tracking.ensure_experiment(mlflow_client, suite.home, collections)
    params = {
        "suite": suite.name,
        "suite_digest": suite_digest(suite),
        "collections": collections,
        "answer": suite.answer.model_dump(),
        "judge": suite.judge.model_dump(),
        "judge_model_id": judge_model_id,
        "prompt_version": PROMPT_VERSIONS,
    }
    run_id = tracking.start_batch(mlflow_client, experiment_id, batch_id, "cases", collections, tracking.flatten_params(params))
    tracking.log_values(mlflow_client, run_id, {}, metrics)
    tracking.log_tables(mlflow_client, run_id, {"cases": results})
    tracking.finish(mlflow_client, run_id)
    return run_id
