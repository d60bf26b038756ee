"""A judged metric written as a built-in one is (metrics/answer_metrics/faithfulness.py): one
module with its formula, its statements read over the passages, its judge calls, and the question
people are asked to label its verdicts with. Loaded with RAGASSAY_PLUGINS for the test of
tests/metrics/test_built_in_style_metric.py; nothing else of the library is touched for it.
"""

from __future__ import annotations

from ragassay.metrics.answer_metric import AnswerMetric, JudgeCalls, LabelPrompt, MetricInput
from ragassay.metrics.answers import UNREADABLE, Scored


def lead_over_passages(verdict: bool | None) -> Scored:
    """lead over passages = 1 when the retrieved passages support the answer's first statement,
    else 0; left out when the verdict is unreadable."""
    if verdict is None:
        return Scored(None, UNREADABLE, 1)
    return Scored(1.0 if verdict else 0.0, None, 1)


def first_statement(given: MetricInput) -> list[str]:
    return [statement.text for statement in given.answer.statements[:1]]


def score(given: MetricInput) -> Scored:
    """The first statement's verdict over the passages, from the pass faithfulness reads too."""
    if not given.answer.statements:
        return Scored(None, "the answer has no statements")
    return lead_over_passages(given.supported_over_passages(given.answer.statements[0].text, 0))


METRICS = [
    AnswerMetric(
        "lead_over_passages",
        "lead over passages",
        "the share of answers whose first statement the retrieved passages support",
        needs_context=True,
        score=score,
        formula=lead_over_passages,
        passage_statements=first_statement,
        judge_calls=JudgeCalls("answer", "support over passages"),
        label_prompt=LabelPrompt("Is the answer's first statement supported by the context below?"),
    )
]
