"""Assertions on an evaluation: `--assert LABEL:METRIC OP NUMBER` parsed and checked against
each configuration's means (a failed one makes the command exit 1). Retrieval assertions name a
retrieval metric (`hybrid:recall@5>=0.8`), answer assertions an answer metric
(`hybrid:faithfulness>=0.7`, `hybrid:false_refusal_rate<=0.2`), including the judge-corrected
estimate of a judged metric and its interval (`hybrid:faithfulness.corrected_low>=0.6`); either
evaluation can bound a system under test's `coverage` (`prod:coverage>=0.98`).

A bound on a judged metric's plain name bounds the raw mean, the judge's own number: it keeps the
meaning it had when the gate was written, whatever labels are added later. `.corrected_low`
bounds what the labels let one claim; with the bundled prior only, or few labels, it is low."""

from __future__ import annotations

import operator
import re
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict

from ragassay.metrics.names import CORRECTED_METRICS, REPORTED_ANSWER_METRICS, MetricName, metric_key, parse_metric

# What either evaluation can bound besides its own metrics: the share of questions a system under
# test answered (its failed calls lower it; a built-in configuration has none to bound).
COVERAGE = "coverage"

# What an answer assertion can bound.
ANSWER_BOUNDS = (*REPORTED_ANSWER_METRICS, *CORRECTED_METRICS, COVERAGE)

_OPERATORS = {">=": operator.ge, ">": operator.gt, "<=": operator.le, "<": operator.lt, "==": operator.eq}
_ASSERTION = re.compile(
    r"^\s*(?P<label>[^:\s]+)\s*:\s*(?P<metric>[\w@.]+)\s*(?P<op>>=|<=|==|>|<)\s*(?P<bound>[-+]?\d*\.?\d+)\s*$"
)


@dataclass(frozen=True)
class Assertion:
    """An assertion such as `hybrid:recall@5>=0.8`."""

    label: str
    metric: MetricName | str
    op: str
    bound: float

    def __str__(self) -> str:
        return f"{self.label}:{self.metric}{self.op}{self.bound:g}"


def parse_assertion(text: str) -> Assertion:
    """Parse LABEL:METRIC OP NUMBER; ValueError says what form is expected."""
    match = _ASSERTION.match(text)
    if match is None:
        raise ValueError(f"assertion {text!r} must look like 'LABEL:METRIC>=NUMBER' (operators: >= > <= < ==)")
    metric = COVERAGE if match["metric"] == COVERAGE else parse_metric(match["metric"])
    return Assertion(match["label"], metric, match["op"], float(match["bound"]))


def parse_answer_assertion(text: str) -> Assertion:
    """Parse LABEL:METRIC OP NUMBER for an answer metric; ValueError names the valid metrics."""
    match = _ASSERTION.match(text)
    if match is None:
        raise ValueError(f"assertion {text!r} must look like 'LABEL:METRIC>=NUMBER' (operators: >= > <= < ==)")
    if match["metric"] not in ANSWER_BOUNDS:
        raise ValueError(f"assertion {text!r}: answer metric must be one of {', '.join(ANSWER_BOUNDS)}")
    return Assertion(match["label"], match["metric"], match["op"], float(match["bound"]))


def is_answer_assertion(text: str) -> bool:
    """Whether an assertion bounds an answer metric (else it is a retrieval one, or coverage)."""
    match = _ASSERTION.match(text)
    return match is not None and match["metric"] in ANSWER_BOUNDS and match["metric"] != COVERAGE


def coverage_label(text: str) -> str | None:
    """The configuration a `LABEL:coverage…` assertion bounds, None for any other assertion."""
    match = _ASSERTION.match(text)
    return match["label"] if match is not None and match["metric"] == COVERAGE else None


class AssertionResult(BaseModel):
    """An assertion checked: its text, the value measured (None when nothing was scored), whether
    it holds, and why it failed where the check says (a system that answered nothing)."""

    model_config = ConfigDict(frozen=True)

    assertion: str
    value: float | None
    passed: bool
    reason: str | None = None


def check_assertions(assertions: list[Assertion], means: dict[str, dict[str, float]]) -> list[AssertionResult]:
    """Each assertion with the measured value and whether it holds."""
    results = []
    for assertion in assertions:
        value = means[assertion.label].get(metric_key(str(assertion.metric)))
        # A metric nothing could score (no unanswerable questions, say) fails its gate: it is unknown.
        passed = value is not None and bool(_OPERATORS[assertion.op](value, assertion.bound))
        results.append(AssertionResult(assertion=str(assertion), value=value, passed=passed))
    return results


def measured(result: AssertionResult) -> str:
    """An assertion result's measured value as text ('nothing scored' when unknown), with its
    reason where the check says one (a system that answered nothing)."""
    value = "nothing scored" if result.value is None else f"measured {result.value:.4f}"
    return f"{value}: {result.reason}" if result.reason else value
