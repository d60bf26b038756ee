"""Evaluation cases: the checks of one case on one answer. Pure: the answer and the judge's
outputs come in, check results go out.

A case passes when every one of its checks passes. A judge output that cannot be read fails its
check and is flagged as a judge error: it never passes silently.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ragassay.judge.prompts import CriteriaScore
from ragassay.metrics.answers import Verdict


@dataclass(frozen=True)
class CheckResult:
    check: str  # contains, excludes, judge or grounded
    passed: bool
    detail: str
    judge_error: bool = False


def check_contains(answer: str, needles: Sequence[str]) -> CheckResult:
    """Passes when the answer holds every needle (case-insensitive)."""
    missing = [n for n in needles if n.casefold() not in answer.casefold()]
    return CheckResult(
        "contains",
        not missing,
        "missing: " + ", ".join(repr(n) for n in missing) if missing else f"all {len(needles)} found",
    )


def check_excludes(answer: str, needles: Sequence[str]) -> CheckResult:
    """Passes when the answer holds none of the needles (case-insensitive)."""
    found = [n for n in needles if n.casefold() in answer.casefold()]
    return CheckResult(
        "excludes",
        not found,
        "found: " + ", ".join(repr(n) for n in found) if found else f"none of {len(needles)} found",
    )


def check_judge_score(score: CriteriaScore | None, error: str | None, min_score: float) -> CheckResult:
    """Passes when the judge's score is at least min_score; unreadable output fails as a judge error."""
    if score is None:
        return CheckResult("judge", False, f"judge error: {error or 'no output'}", judge_error=True)
    return CheckResult(
        "judge", score.score >= min_score, f"score {score.score:.2f} (min {min_score:.2f}): {score.reason}"
    )


def check_grounded(verdicts: Sequence[Verdict], passages: int, min_supported: float) -> CheckResult:
    """Passes when at least min_supported of the answer's claims are judged supported by the
    passages it was answered from. An answer with no claims (a refusal) asserts nothing
    unsupported and passes; an unreadable verdict fails the check as a judge error."""
    if any(v is None for v in verdicts):
        unreadable = sum(1 for v in verdicts if v is None)
        return CheckResult(
            "grounded", False, f"judge error: {unreadable} of {len(verdicts)} verdicts unreadable", judge_error=True
        )
    if not verdicts:
        return CheckResult("grounded", True, f"no claims to check ({passages} passages)")
    supported = sum(1 for v in verdicts if v)
    share = supported / len(verdicts)
    return CheckResult(
        "grounded",
        share >= min_supported,
        f"{supported}/{len(verdicts)} claims supported by {passages} passages (min {min_supported:.2f})",
    )


def case_passed(checks: Sequence[CheckResult]) -> bool:
    return bool(checks) and all(check.passed for check in checks)
