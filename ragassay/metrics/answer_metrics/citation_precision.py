"""Citation precision: the share of citations whose cited passage supports their statement."""

from __future__ import annotations

from collections.abc import Sequence

from ragassay.metrics.answer_metric import AnswerMetric, JudgeCalls, LabelPrompt, MetricInput
from ragassay.metrics.answers import Scored, Verdict, supported_fraction


def citation_precision(citation_verdicts: Sequence[Verdict]) -> Scored:
    """citation precision = citations whose cited span supports their statement / citations made."""
    return supported_fraction(citation_verdicts, "the answer makes no citations")


def score(given: MetricInput) -> Scored:
    """Each citation's verdict against the passage it cites alone: a statement's citations, then
    the prose's own (statement index -1)."""
    answer = given.answer
    statements = [(index, statement.text, statement.citations) for index, statement in enumerate(answer.statements)]
    statements.append((-1, answer.prose, answer.answer_citations))
    return citation_precision(
        [
            given.supported(text, index, citation.quote, citation.number, [citation.number])
            for index, text, citations in statements
            for citation in citations
        ]
    )


METRIC = AnswerMetric(
    "citation_precision",
    "citation precision",
    "the share of citations whose cited passage supports their statement",
    corrected_by_labels=True,
    headline=True,
    decides_turns=True,
    needs_context=True,
    score=score,
    formula=citation_precision,
    judge_calls=JudgeCalls("citation", "support against one passage"),
    label_prompt=LabelPrompt("Is the cited statement supported by its cited source below?", one_cited_passage=True),
)
