"""Faithfulness: the share of the answer's statements its retrieved passages support."""

from __future__ import annotations

from collections.abc import Sequence

from ragassay.metrics.answer_metric import AnswerMetric, JudgeCalls, LabelPrompt, LeastFaithful, MetricInput
from ragassay.metrics.answers import Scored, Verdict, supported_fraction


def faithfulness(statement_verdicts: Sequence[Verdict]) -> Scored:
    """faithfulness = answer statements supported by the retrieved context / answer statements.

    The hallucination measure: 1 - faithfulness is the share of claims the sources do not back.
    """
    return supported_fraction(statement_verdicts, "the answer has no statements")


def score(given: MetricInput) -> Scored:
    """Each answer statement's verdict over the retrieved passages (the support prompt of
    judge/prompts.py, shared with context recall and citation precision)."""
    return faithfulness(
        [
            given.supported_over_passages(statement.text, index, [c.number for c in statement.citations])
            for index, statement in enumerate(given.answer.statements)
        ]
    )


METRIC = AnswerMetric(
    "faithfulness",
    "faithfulness",
    "the share of the answer's statements its retrieved passages support",
    corrected_by_labels=True,
    headline=True,
    budgets_labels=True,
    needs_context=True,
    score=score,
    formula=faithfulness,
    passage_statements=MetricInput.statement_texts,
    judge_calls=JudgeCalls("statement", "support over passages"),
    label_prompt=LabelPrompt("Is the answer's statement supported by the context below?"),
    # Any statement unsupported: where mean support was not scored.
    least_faithful=LeastFaithful(1.0, rank=1),
)
