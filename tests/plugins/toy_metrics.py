"""Two answer metrics added as a team would add one (ARCHITECTURE.md, "How to add a metric"): one
module, its declarations in METRICS, loaded with RAGASSAY_PLUGINS.

- brevity: counted, no judge.
- lead_supported: the judge asked whether the retrieved passages support the answer's first
  statement.
"""

from __future__ import annotations

from ragassay.judge.metric_input import MetricInput
from ragassay.metrics.answers import UNREADABLE, Scored
from ragassay.metrics.declared import AnswerMetric

BRIEF_WORDS = 40


def brevity(given: MetricInput) -> Scored:
    """brevity = 1 when the answer has at most BRIEF_WORDS words, else 0."""
    return Scored(1.0 if len(given.answer.text.split()) <= BRIEF_WORDS else 0.0, None, 0)


def lead_supported(given: MetricInput) -> Scored:
    """lead support = 1 when the retrieved passages support the answer's first statement, else 0."""
    if not given.answer.statements:
        return Scored(None, "the answer has no statements")
    verdict = given.supported(given.answer.statements[0].text)
    if verdict is None:
        return Scored(None, UNREADABLE, 1)
    return Scored(1.0 if verdict else 0.0, None, 1)


METRICS = [
    AnswerMetric(
        "brevity",
        "brevity",
        "the share of answers (refusals too) of at most 40 words",
        asks_judge=False,
        scored_when_refused=True,
        score=brevity,
    ),
    AnswerMetric(
        "lead_supported",
        "lead supported",
        "the share of answers whose first statement is supported",
        score=lead_supported,
    ),
]
