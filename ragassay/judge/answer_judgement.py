"""Judging one answer for every answer metric it is asked for: each metric's `score` in the
declared order (metrics/answer_metrics/), given the answer and the means to ask the judge
(metrics/answer_metric.MetricInput), with what judging it cost."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ragassay.answer.grounding import GroundedAnswer
from ragassay.judge.calibration.alignment import AlignedJudge
from ragassay.judge.judge import Judge, context_text, judging_cost, verdict_of
from ragassay.llm.structured import Structured, Usage
from ragassay.metrics.answer_metric import AnswerJudgement, AnswerMetric, MetricInput, VerdictRow
from ragassay.metrics.answers import NO_CONTEXTS, NOT_ASKED, Scored, Verdict
from ragassay.metrics.declared import DECLARED_METRICS

REFUSED = "refused"


@dataclass(frozen=True)
class JudgedAnswer:
    """Every answer metric of one answer, what judging it cost, and how many judgements were
    remembered from identical earlier ones."""

    judgement: AnswerJudgement
    usage: Usage
    reused: int


class _Judging:
    """The judging of one answer (metrics/answer_metric.Judging): every verdict recorded as a
    VerdictRow as it is read, every judge call's cost counted once. An aligned judge, when given,
    reads each support verdict's P with its statement and context."""

    def __init__(self, judge: Judge, question: str, context: str, aligned: AlignedJudge | None) -> None:
        self.judge, self.question, self.context, self.aligned = judge, question, context, aligned
        self.rows: list[VerdictRow] = []
        self.asked: list[Structured] = []
        self.passage_results: dict[str, Structured] = {}

    def judge_over_passages(self, statements: list[str]) -> None:
        """Every statement's verdict over the retrieved passages in one pass: prompts that share a
        passage share their prefix (Judge.support_by_passage)."""
        distinct = list(dict.fromkeys(statements))
        if not distinct:
            return
        results = self.judge.support_by_passage(self.context.splitlines(), distinct, self.question)
        self.asked.extend(results)
        self.passage_results = dict(zip(distinct, results, strict=True))

    def support(
        self, metric: str, index: int, statement: str, context: str, source: int | None, cited: Sequence[int]
    ) -> Verdict:
        result = self.judge.support(context, statement, self.question)
        self.asked.append(result)
        return self._recorded(metric, index, statement, source, context, cited, result)

    def over_passages(self, metric: str, index: int, statement: str, cited: Sequence[int]) -> Verdict:
        result = self.passage_results[statement]
        return self._recorded(metric, index, statement, None, self.context, cited, result)

    def p_over_passages(self, statement: str) -> float | None:
        result = self.passage_results[statement]
        return None if result.value is None else result.value.p_supported

    def ask(self, call: Callable[[Judge], Structured]) -> Structured:
        result = call(self.judge)
        self.asked.append(result)
        return result

    def record(self, row: VerdictRow) -> None:
        self.rows.append(row)

    def _recorded(
        self,
        metric: str,
        index: int,
        statement: str,
        source: int | None,
        context: str,
        cited: Sequence[int],
        result: Structured,
    ) -> Verdict:
        verdict = verdict_of(result)
        three_way = result.value.three_way if result.value else None
        if self.aligned is not None and verdict is not None:
            verdict = self.aligned.supported(statement, context, result.value.p_supported)
        self.rows.append(
            VerdictRow(
                metric=metric,
                statement_index=index,
                statement=statement,
                source_number=source,
                verdict="unreadable" if verdict is None else ("supported" if verdict else "unsupported"),
                p_supported=result.value.p_supported if result.value else None,
                judge_p_supported=result.value.judge_p_supported if result.value else None,
                three_way_p_supported=three_way.p_supported if three_way else None,
                three_way_p_contradicted=three_way.p_contradicted if three_way else None,
                p_correct=None,
                error=result.error,
                context=context,
                cited_sources=list(cited),
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
    """Every declared answer metric of one answer, each by its own `score`, in the declared
    order; those `metrics` leaves out (None: all) are not asked (NOT_ASKED) and cost nothing, and
    a metric the answer cannot have (not_scored) is left out with its reason, no judge call.

    Every statement a scored metric reads over the passages (its `passage_statements`) is judged
    first, in one pass; a statement two metrics read is one verdict.
    embed: the question collection's embedding model (normalized vectors).
    aligned: the question collection's aligned judge (judge/calibration/alignment.py), when it has one in use:
    it reads each support verdict's P(supported) with its statement and context into the
    verdict; P(supported) is recorded as the judge gave it.
    A dialogue's follow-up is judged as asked in its conversation (answer.question_in_context:
    "And the autumn one?" with the questions before it), for every prompt that shows a question.
    """
    context = context_text(answer.sources)
    judging = _Judging(judge, answer.question_in_context, context, aligned)

    def given(metric: AnswerMetric) -> MetricInput:
        return MetricInput(
            metric.name, answer, answer.question_in_context, context, reference_answer, embed, judging, judge.model_id
        )

    not_scored = {
        metric.name: NOT_ASKED
        if metrics is not None and metric.name not in metrics
        else _not_scored(metric, answer, reference_answer)
        for metric in DECLARED_METRICS
    }
    scored = [metric for metric in DECLARED_METRICS if not_scored[metric.name] is None]
    judging.judge_over_passages(
        [
            statement
            for metric in scored
            if metric.passage_statements
            for statement in metric.passage_statements(given(metric))
        ]
    )
    by_metric = {metric.name: not_scored[metric.name] or metric.score(given(metric)) for metric in DECLARED_METRICS}
    return JudgedAnswer(AnswerJudgement(by_metric, judging.rows), *judging_cost(judging.asked))


def _not_scored(metric: AnswerMetric, answer: GroundedAnswer, reference_answer: str | None) -> Scored | None:
    """Why the answer cannot have the metric, or None when it can: a refused answer (unless the
    metric is scored whatever the answer was), a system that returned no context text, a question
    without a reference answer."""
    if answer.outcome == "refused" and not metric.scored_when_refused:
        return Scored(None, REFUSED)
    if metric.needs_context and not answer.contexts_returned:
        # Nothing to hold the statements against: not applicable (never 0).
        return Scored(None, NO_CONTEXTS)
    if metric.needs_reference and not (reference_answer or "").strip():
        return Scored(None, "no reference answer")
    return None
