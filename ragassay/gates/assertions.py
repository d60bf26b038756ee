"""Quality gates on retrieval evaluation: `--assert LABEL:METRIC OP NUMBER` parsed and checked
against each configuration's means (a failed one makes the command exit 1)."""

from __future__ import annotations

import operator
import re
from dataclasses import dataclass

from ragassay.metrics.names import MetricName, parse_metric

_OPERATORS = {">=": operator.ge, ">": operator.gt, "<=": operator.le, "<": operator.lt, "==": operator.eq}
_ASSERTION = re.compile(r"^\s*(?P<label>[^:\s]+)\s*:\s*(?P<metric>[\w@]+)\s*(?P<op>>=|<=|==|>|<)\s*(?P<bound>[-+]?\d*\.?\d+)\s*$")


@dataclass(frozen=True)
class Assertion:
    """A quality gate such as `hybrid:recall@5>=0.8`."""

    label: str
    metric: MetricName
    op: str
    bound: float

    def __str__(self) -> str:
        return f"{self.label}:{self.metric}{self.op}{self.bound:g}"


def parse_assertion(text: str) -> Assertion:
    """Parse LABEL:METRIC OP NUMBER; ValueError says what form is expected."""
    match = _ASSERTION.match(text)
    if match is None:
        raise ValueError(f"assertion {text!r} must look like 'LABEL:METRIC>=NUMBER' (operators: >= > <= < ==)")
    return Assertion(match["label"], parse_metric(match["metric"]), match["op"], float(match["bound"]))


def check_assertions(assertions: list[Assertion], means: dict[str, dict[str, float]]) -> list[dict]:
    """Each assertion with the measured value and whether it holds."""
    results = []
    for assertion in assertions:
        value = means[assertion.label][str(assertion.metric)]
        results.append(
            {"assertion": str(assertion), "value": value, "passed": bool(_OPERATORS[assertion.op](value, assertion.bound))}
        )
    return results
