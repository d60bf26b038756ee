"""Assertions on an evaluation: `--assert LABEL:METRIC OP NUMBER` parsed and checked against
each configuration's means (a failed one makes the command exit 1). Retrieval assertions name a
retrieval metric (`hybrid:recall@5>=0.8`), answer assertions an answer metric
(`hybrid:faithfulness>=0.7`, `hybrid:false_refusal_rate<=0.2`), including the judge-corrected
estimate of a judged metric and its interval (`hybrid:faithfulness.corrected_low>=0.6`); either
evaluation can bound a system under test's `coverage` (`prod:coverage>=0.98`). A metric prefixed
`first.` or `followup.` bounds its mean over the golden dialogues' first turns or their follow-ups
(`hybrid:followup.recall@5>=0.7`), and `conversation_success` the share of dialogues every turn of
which was cited or declined as it should be.

A bound on a judged metric's plain name bounds the raw mean, the judge's own number: it keeps the
meaning it had when the gate was written, whatever labels are added later. `.corrected_low`
bounds what the labels let one claim; with few labels it is low, and without labels of the
collection there is no corrected estimate to bound."""

from __future__ import annotations

import operator
import re
from collections import defaultdict
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict

from ragassay.metrics.names import (
    CONVERSATION_SUCCESS,
    CORRECTED_METRICS,
    REPORTED_ANSWER_METRICS,
    TURN_SUBSETS,
    MetricName,
    metric_key,
    parse_metric,
)

# What either evaluation can bound besides its own metrics: the share of questions a system under
# test answered (its failed calls lower it; a built-in configuration has none to bound).
COVERAGE = "coverage"

# What an answer assertion can bound.
ANSWER_BOUNDS = (*REPORTED_ANSWER_METRICS, *CORRECTED_METRICS, CONVERSATION_SUCCESS, COVERAGE)
# What an answer assertion can bound on first turns or follow-ups (`followup.faithfulness`).
ANSWER_SUBSET_BOUNDS = REPORTED_ANSWER_METRICS

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
    subset: str | None = None  # first or followup: the metric's mean over those turns only

    @property
    def bounded(self) -> str:
        """What the assertion bounds as written: the metric, after its subset (`followup.recall@5`)."""
        return f"{self.subset}.{self.metric}" if self.subset else str(self.metric)

    def __str__(self) -> str:
        return f"{self.label}:{self.bounded}{self.op}{self.bound:g}"


def _subset_of(metric: str) -> tuple[str | None, str]:
    """(`first` or `followup`, the metric) of `followup.recall@5`; (None, metric) without one."""
    prefix, dot, rest = metric.partition(".")
    return (prefix, rest) if dot and prefix in TURN_SUBSETS else (None, metric)


def parse_assertion(text: str) -> Assertion:
    """Parse LABEL:[SUBSET.]METRIC OP NUMBER; ValueError says what form is expected."""
    match = _ASSERTION.match(text)
    if match is None:
        raise ValueError(f"assertion {text!r} must look like 'LABEL:METRIC>=NUMBER' (operators: >= > <= < ==)")
    subset, name = _subset_of(match["metric"])
    if name == COVERAGE and subset is not None:
        raise ValueError(f"assertion {text!r}: coverage is over every question, not {subset} turns")
    metric = COVERAGE if name == COVERAGE else parse_metric(name)
    return Assertion(match["label"], metric, match["op"], float(match["bound"]), subset)


def parse_answer_assertion(text: str) -> Assertion:
    """Parse LABEL:[SUBSET.]METRIC OP NUMBER for an answer metric; ValueError names the valid metrics."""
    match = _ASSERTION.match(text)
    if match is None:
        raise ValueError(f"assertion {text!r} must look like 'LABEL:METRIC>=NUMBER' (operators: >= > <= < ==)")
    subset, name = _subset_of(match["metric"])
    if subset is not None and name not in ANSWER_SUBSET_BOUNDS:
        raise ValueError(
            f"assertion {text!r}: a metric of {subset} turns must be one of {', '.join(ANSWER_SUBSET_BOUNDS)}"
        )
    if name not in ANSWER_BOUNDS:
        raise ValueError(f"assertion {text!r}: answer metric must be one of {', '.join(ANSWER_BOUNDS)}")
    return Assertion(match["label"], name, match["op"], float(match["bound"]), subset)


def is_answer_assertion(text: str) -> bool:
    """Whether an assertion bounds an answer metric (else it is a retrieval one, or coverage)."""
    match = _ASSERTION.match(text)
    name = _subset_of(match["metric"])[1] if match is not None else None
    return name in ANSWER_BOUNDS and name != COVERAGE


def coverage_label(text: str) -> str | None:
    """The configuration a `LABEL:coverage…` assertion bounds, None for any other assertion."""
    match = _ASSERTION.match(text)
    return match["label"] if match is not None and match["metric"] == COVERAGE else None


class AssertionResult(BaseModel):
    """An assertion checked: its text, the configuration, metric, operator and bound it names, the
    value measured (None when nothing was scored), whether it holds, and why it failed where the
    check says (a system that answered nothing)."""

    model_config = ConfigDict(frozen=True)

    assertion: str
    value: float | None
    passed: bool
    reason: str | None = None
    configuration: str | None = None
    metric: str | None = None
    operator: str | None = None
    bound: float | None = None

    @property
    def outcome(self) -> str:
        return PASSED if self.passed else FAILED


# A batch's verdict: every assertion held, one failed, or the batch had none to check.
PASSED, FAILED, NO_ASSERTIONS = "passed", "failed", "none"


def check_assertions(assertions: list[Assertion], means: dict[str, dict[str, float]]) -> list[AssertionResult]:
    """Each assertion with the measured value and whether it holds."""
    results = []
    for assertion in assertions:
        value = means[assertion.label].get(metric_key(assertion.bounded))
        # A metric nothing could score (no unanswerable questions, say) fails its gate: it is unknown.
        passed = value is not None and bool(_OPERATORS[assertion.op](value, assertion.bound))
        # A corrected bound is unknown for its own reason: nothing to correct with.
        reason = (
            "no judge-corrected estimate: no labels of these documents for this judge, or labels that do not show "
            "it separating the classes (`ragassay judge label`)"
            if value is None and assertion.bounded in CORRECTED_METRICS
            else None
        )
        results.append(
            AssertionResult(
                assertion=str(assertion),
                value=value,
                passed=passed,
                reason=reason,
                configuration=assertion.label,
                metric=assertion.bounded,
                operator=assertion.op,
                bound=assertion.bound,
            )
        )
    return results


# Decimals an assertion's measured value is shown with, in its message and its table alike.
SHOWN_DECIMALS = 4


def measured(result: AssertionResult) -> str:
    """An assertion result's measured value as text ('nothing scored' when unknown), with its
    reason where the check says one (a system that answered nothing)."""
    value = "nothing scored" if result.value is None else f"measured {result.value:.{SHOWN_DECIMALS}f}"
    return f"{value}: {result.reason}" if result.reason else value


def batch_verdict(results: list[AssertionResult]) -> str:
    """A batch's verdict: `failed` when an assertion failed, `passed` when every one held, `none`
    when it had none."""
    if not results:
        return NO_ASSERTIONS
    return FAILED if any(not r.passed for r in results) else PASSED


def configuration_verdicts(results: list[AssertionResult]) -> defaultdict[str, str]:
    """Each configuration's verdict on the assertions that name it (batch_verdict; `none` for one
    that none names)."""
    named: defaultdict[str, list[AssertionResult]] = defaultdict(list)
    for result in results:
        named[result.configuration or ""].append(result)
    return defaultdict(lambda: NO_ASSERTIONS, {label: batch_verdict(found) for label, found in named.items()})


def failed_assertions_text(results: list[AssertionResult]) -> str:
    """Each failed assertion with its bound and what was measured, as one line ('' when none
    failed): `2 of 3 assertions failed: hybrid:recall@5>=0.9 (measured 0.8000); …`."""
    failed = [r for r in results if not r.passed]
    if not failed:
        return ""
    listed = "; ".join(f"{r.assertion} ({measured(r)})" for r in failed)
    return f"{len(failed)} of {len(results)} assertions failed: {listed}"


# How a row names its operator: in words, since Prefect's table artifact reads each cell as
# Markdown, where a leading `>` starts a quotation (`>=` showed as a bar and `=`).
OPERATOR_WORDS = {">=": "at least", ">": "above", "<=": "at most", "<": "below", "==": "equal to"}


def assertion_rows(results: list[AssertionResult]) -> list[dict]:
    """The assertions as a batch's `assertions.json` and its Prefect table show them: each one's
    text, configuration, metric, operator (in words: `at least`), bound, measured value, outcome
    and reason. The measured value to SHOWN_DECIMALS, the digits its message (`measured`) gives:
    a table that says 0.9253010399562124 where the message says 0.9253 reads as two numbers."""
    return [
        {
            "assertion": r.assertion,
            "configuration": r.configuration,
            "metric": r.metric,
            "operator": OPERATOR_WORDS.get(r.operator, r.operator),
            "bound": r.bound,
            "value": None if r.value is None else round(r.value, SHOWN_DECIMALS),
            "outcome": r.outcome,
            "reason": r.reason,
        }
        for r in results
    ]
