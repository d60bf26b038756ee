"""Judging one answer for every answer metric it is asked for: its statements' support verdicts,
the citations', the implied question and the correctness grade, read into each metric's score
(metrics/answers.py, metrics/declared.py) with what judging it cost."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TypedDict

import numpy as np

from ragassay.answer.grounding import GroundedAnswer
from ragassay.judge.alignment import AlignedJudge
from ragassay.judge.judge import Judge, context_text, judging_cost, verdict_of
from ragassay.judge.metric_input import MetricInput
from ragassay.llm.structured import Structured, Usage
from ragassay.metrics.answers import (
    NO_CONTEXTS,
    NOT_ASKED,
    AnswerJudgement,
    Scored,
    Verdict,
    answer_correctness,
    answer_relevancy,
    citation_precision,
    context_recall,
    faithfulness,
    mean_support,
    split_statements,
)
from ragassay.metrics.declared import ADDED_METRICS, BUILT_IN_METRICS

# P(correct) at or above which an answer counts as correct (answer_correctness). Not calibrated
# against people's labels: the judge's own odds, read as they are.
CORRECT_THRESHOLD = 0.5

REFUSED = "refused"


@dataclass(frozen=True)
class JudgedAnswer:
    """Every answer metric of one answer, what judging it cost, and how many judgements were
    remembered from identical earlier ones."""

    judgement: AnswerJudgement
    usage: Usage
    reused: int


class VerdictRow(TypedDict):
    """One verdict of an answer's judgement, as the judgments table, the traces and the labelling
    sample read it (store/schemas JUDGMENTS holds the same columns but `seconds`)."""

    metric: str
    statement_index: int  # -1: the whole answer (answer correctness, a citation of the prose)
    statement: str
    source_number: int | None
    verdict: str  # supported, unsupported, correct, incorrect or unreadable
    p_supported: float | None  # P(supported) of a support verdict (None for answer correctness)
    # The judge model's own P(supported) beside a learned verdict's, where it was asked (None otherwise).
    judge_p_supported: float | None
    p_correct: float | None  # P(correct) of the answer-correctness verdict (None for the others)
    error: str | None
    context: str
    cited_sources: list[int]
    # The model seconds this verdict took (over every passage asked; 0 when the completion cache
    # remembered it): its span's length in the answer's trace. Not a column of the judgments table.
    seconds: float


class _Verdicts:
    """The verdicts of one answer's judgement and the judge calls they cost, recorded as they are
    read (an aligned judge, when given, reads each support verdict's P with its statement and
    context)."""

    def __init__(self, judge: Judge, question: str, aligned: AlignedJudge | None) -> None:
        self.judge, self.question, self.aligned = judge, question, aligned
        self.rows: list[VerdictRow] = []
        self.asked: list[Structured] = []

    def support(
        self, metric: str, index: int, statement: str, source: int | None, context: str, cited: list[int], result=None
    ) -> Verdict:
        """Record one support verdict: `result` when it was asked already (over several
        passages), else asked here against `context` alone."""
        result = result if result is not None else self.judge.support(context, statement, self.question)
        self.asked.append(result)
        verdict = verdict_of(result)
        if self.aligned is not None and verdict is not None:
            verdict = self.aligned.supported(statement, context, result.value.p_supported)
        word = "unreadable" if verdict is None else ("supported" if verdict else "unsupported")
        p = result.value.p_supported if result.value else None
        self.rows.append(
            VerdictRow(
                metric=metric,
                statement_index=index,
                statement=statement,
                source_number=source,
                verdict=word,
                p_supported=p,
                judge_p_supported=result.value.judge_p_supported if result.value else None,
                p_correct=None,
                error=result.error,
                context=context,
                cited_sources=cited,
                seconds=result.usage.seconds,
            )
        )
        return verdict


def judge_answer(
    judge: Judge,
    answer: GroundedAnswer,
    reference_answer: str | None,
    embed: Callable[[str], np.ndarray],
    aligned: AlignedJudge | None = None,
    metrics: frozenset[str] | None = None,
) -> JudgedAnswer:
    """The answer metrics of one answer (metrics/declared.py): faithfulness, context recall,
    answer relevancy, citation precision and answer correctness each from its own function
    below, an added metric from its declaration's `score`; those `metrics` leaves out (None: all)
    are not asked (metrics.answers.NOT_ASKED), and cost nothing.

    embed: the question collection's embedding model (normalized vectors), for answer relevancy.
    Answer correctness asks the grading pairwise comparison asks (judge.correctness of the
    answer's prose), so with pairwise comparison on it costs no extra judge call.
    aligned: the question collection's aligned judge (judge/alignment.py), when it has one in use:
    it reads each support verdict's P(supported) with its statement and context into the
    verdict; P(supported) is recorded as the judge gave it.
    A dialogue's follow-up is judged as asked in its conversation (answer.question_in_context:
    "And the autumn one?" with the questions before it), for every prompt that shows a question.
    """
    asks = (lambda name: True) if metrics is None else metrics.__contains__
    verdicts = _Verdicts(judge, answer.question_in_context, aligned)
    context = context_text(answer.sources)
    reference_statements = split_statements(reference_answer)
    judged_statements = (
        answer.outcome != "refused" and answer.contexts_returned and (asks("faithfulness") or asks("mean_support"))
    )
    answer_statements = answer.statements if judged_statements else []
    # Every statement judged against the sources passage by passage, in one pass (prompts that
    # share a passage share their prefix): the reference's statements, then the answer's.
    asked_references = reference_statements if answer.sources and asks("context_recall") else []
    over_passages = (
        judge.support_by_passage(
            context.splitlines(), asked_references + [s.text for s in answer_statements], answer.question_in_context
        )
        if answer.contexts_returned
        else []
    )
    reference_results, answer_results = over_passages[: len(asked_references)], over_passages[len(asked_references) :]
    if not asks("context_recall"):
        recall = NOT_ASKED
    elif reference_statements or not (reference_answer or "").strip():
        recall = _context_recall(verdicts, answer, context, reference_statements, reference_results)
    else:
        recall = Scored(None, "the reference answer states nothing to look for (a bare answer such as 'Yes.')")
    given = MetricInput(
        "",
        answer,
        answer.question_in_context,
        context,
        reference_answer,
        embed,
        lambda name, index, statement, against: verdicts.support(name, index, statement, None, against, []),
    )
    added = _added_metrics(given, asks)
    if answer.outcome == "refused":
        not_scored = Scored(None, REFUSED)
        refused = {name: not_scored if asks(name) else NOT_ASKED for name in _SCORED_ONLY_WHEN_ANSWERED}
        judgement = AnswerJudgement(**refused, context_recall=recall, verdicts=verdicts.rows, added=added)
        return JudgedAnswer(judgement, *judging_cost(verdicts.asked))
    faithful = _faithfulness(verdicts, answer, context, answer_results) if asks("faithfulness") else NOT_ASKED
    # The citations' support verdicts next, before the implied question: their prompts begin with
    # the instruction of the support verdicts just asked, which an in-process model then keeps
    # instead of reading it again (BENCHMARKS.md, issue 62).
    cited = _citation_precision(verdicts, answer) if asks("citation_precision") else NOT_ASKED
    relevancy, implied_question = (
        _answer_relevancy(verdicts, answer, embed) if asks("answer_relevancy") else (NOT_ASKED, None)
    )
    judgement = AnswerJudgement(
        faithfulness=faithful,
        context_recall=recall,
        answer_relevancy=relevancy,
        citation_precision=cited,
        mean_support=_mean_support(answer, answer_results) if asks("mean_support") else NOT_ASKED,
        answer_correctness=(
            _answer_correctness(verdicts, answer, reference_answer) if asks("answer_correctness") else NOT_ASKED
        ),
        implied_question=implied_question,
        verdicts=verdicts.rows,
        added=added,
    )
    return JudgedAnswer(judgement, *judging_cost(verdicts.asked))


# The built-in metrics a refused answer does not have (context recall is retrieval's).
_SCORED_ONLY_WHEN_ANSWERED = tuple(metric.name for metric in BUILT_IN_METRICS if not metric.scored_when_refused)


def _added_metrics(given: MetricInput, asks: Callable[[str], bool]) -> dict[str, Scored]:
    """The declared metrics beyond the built-in ones (metrics/declared.ADDED_METRICS) that are
    asked for, each from its own score function given the answer (`given`, named for it); a
    refused answer has only those scored whatever the answer was."""
    scored = {}
    for metric in ADDED_METRICS:
        if not asks(metric.name):
            scored[metric.name] = NOT_ASKED
        elif given.answer.outcome == "refused" and not metric.scored_when_refused:
            scored[metric.name] = Scored(None, REFUSED)
        elif metric.needs_context and not given.answer.contexts_returned:
            scored[metric.name] = Scored(None, NO_CONTEXTS)
        elif metric.needs_reference and not (given.reference_answer or "").strip():
            scored[metric.name] = Scored(None, "no reference answer")
        else:
            scored[metric.name] = metric.score(replace(given, metric=metric.name))
    return scored


def _context_recall(
    verdicts: _Verdicts, answer: GroundedAnswer, context: str, statements: list[str], results: list[Structured]
) -> Scored:
    """Context recall: each reference statement's verdict over the retrieved passages (`results`,
    asked with the answer's statements)."""
    if not answer.contexts_returned:
        # A system under test that returns no context text: nothing to hold the reference
        # against, so the metric is not applicable (never 0).
        return Scored(None, NO_CONTEXTS)
    if statements and not answer.sources:
        # Nothing was retrieved, so no reference statement can be in the context: 0, no judge call.
        return context_recall([False] * len(statements))
    return context_recall(
        [
            verdicts.support("context_recall", i, statement, None, context, [], result)
            for i, (statement, result) in enumerate(zip(statements, results, strict=True))
        ]
    )


def _faithfulness(verdicts: _Verdicts, answer: GroundedAnswer, context: str, results: list[Structured]) -> Scored:
    """Faithfulness: each answer statement's verdict over the retrieved passages (`results`)."""
    if not answer.contexts_returned:
        return Scored(None, NO_CONTEXTS)
    return faithfulness(
        [
            verdicts.support("faithfulness", i, s.text, None, context, [c.number for c in s.citations], result)
            for i, (s, result) in enumerate(zip(answer.statements, results, strict=True))
        ]
    )


def _citation_precision(verdicts: _Verdicts, answer: GroundedAnswer) -> Scored:
    """Citation precision: each citation's verdict against the passage it cites alone (a
    statement's citations, then the prose's own)."""
    if not answer.contexts_returned:
        return Scored(None, NO_CONTEXTS)
    return citation_precision(
        [
            verdicts.support(
                "citation_precision", i, statement.text, citation.number, citation.quote, [citation.number]
            )
            for i, statement in enumerate(answer.statements)
            for citation in statement.citations
        ]
        + [
            verdicts.support("citation_precision", -1, answer.prose, citation.number, citation.quote, [citation.number])
            for citation in answer.answer_citations
        ]
    )


def _mean_support(answer: GroundedAnswer, results: list[Structured]) -> Scored:
    """Mean support: the mean P(supported) of the answer's statements over the retrieved
    passages (`results`: the verdicts faithfulness counts, no further judge call)."""
    if not answer.contexts_returned:
        return Scored(None, NO_CONTEXTS)
    return mean_support([None if result.value is None else result.value.p_supported for result in results])


def _answer_relevancy(
    verdicts: _Verdicts, answer: GroundedAnswer, embed: Callable[[str], np.ndarray]
) -> tuple[Scored, str | None]:
    """Answer relevancy from the question the judge reads the answer as answering, and that
    question (None when its output was unreadable)."""
    implied = verdicts.judge.implied_question(" ".join(s.text for s in answer.statements))
    verdicts.asked.append(implied)
    if implied.value is None:
        return answer_relevancy(None, None), None
    similarity = float(embed(answer.question_in_context) @ embed(implied.value.question))
    return answer_relevancy(similarity, implied.value.noncommittal), implied.value.question


def _answer_correctness(verdicts: _Verdicts, answer: GroundedAnswer, reference_answer: str | None) -> Scored:
    """Answer correctness: the judge's P(correct) of the answer's prose against the reference."""
    if not reference_answer or not reference_answer.strip():
        return Scored(None, "no reference answer")
    grade = verdicts.judge.correctness(answer.question_in_context, reference_answer, answer.prose)
    verdicts.asked.append(grade)
    p_correct = grade.value.p_correct if grade.value else None
    correct = answer_correctness(p_correct, CORRECT_THRESHOLD)
    word = "unreadable" if correct.value is None else ("correct" if correct.value else "incorrect")
    verdicts.rows.append(
        VerdictRow(
            metric="answer_correctness",
            statement_index=-1,
            statement=answer.prose,
            source_number=None,
            verdict=word,
            p_supported=None,
            judge_p_supported=None,
            p_correct=p_correct,
            error=grade.error,
            context=reference_answer,
            cited_sources=[],
            seconds=grade.usage.seconds,
        )
    )
    return correct
