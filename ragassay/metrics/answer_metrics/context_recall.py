"""Context recall: the share of the reference answer's statements the retrieved passages hold."""

from __future__ import annotations

from collections.abc import Sequence

from ragassay.metrics.answer_metric import AnswerMetric, JudgeCalls, LabelPrompt, MetricInput
from ragassay.metrics.answers import Scored, Verdict, split_statements, supported_fraction


def context_recall(reference_verdicts: Sequence[Verdict]) -> Scored:
    """context recall = reference-answer statements found in the retrieved context / reference statements.

    Low context recall with high faithfulness means retrieval, not generation, is the bottleneck.
    """
    return supported_fraction(reference_verdicts, "no reference answer")


def reference_statements(given: MetricInput) -> list[str]:
    """The reference answer's statements, judged over the retrieved passages when any were
    retrieved (with none, no statement can be in them: see score)."""
    return split_statements(given.reference_answer) if given.answer.sources else []


def score(given: MetricInput) -> Scored:
    """Each reference statement's verdict over the retrieved passages. Scored whatever the answer
    was: a property of retrieval."""
    statements = split_statements(given.reference_answer)
    if not statements:
        return Scored(None, "the reference answer states nothing to look for (a bare answer such as 'Yes.')")
    if not given.answer.sources:
        # Nothing was retrieved, so no reference statement can be in the context: 0, no judge call.
        return context_recall([False] * len(statements))
    return context_recall(
        [given.supported_over_passages(statement, index) for index, statement in enumerate(statements)]
    )


METRIC = AnswerMetric(
    "context_recall",
    "context recall",
    "the share of the reference answer's statements the retrieved passages hold",
    corrected_by_labels=True,
    headline=True,
    scored_when_refused=True,
    needs_context=True,
    needs_reference=True,
    score=score,
    formula=context_recall,
    passage_statements=reference_statements,
    judge_calls=JudgeCalls("reference statement", "support over passages"),
    label_prompt=LabelPrompt("Is the reference answer's statement supported by the context below?", shows_answer=False),
)
