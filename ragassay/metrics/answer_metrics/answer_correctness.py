"""Answer correctness: the share of answers the judge grades correct against the reference.
It asks the grading prompt of pairwise comparison (judge/prompts.correctness_messages, kept there
because both ask it): with pairwise comparison on, the grading is asked once."""

from __future__ import annotations

from ragassay.metrics.answer_metric import AnswerMetric, JudgeCalls, MetricInput, VerdictRow
from ragassay.metrics.answers import UNREADABLE, Scored

# P(correct) at or above which an answer counts as correct, per judge model (its catalog name).
# The default judge's was chosen on people's labels (SciFact's development half: a claim graded
# against the evidence sentences annotators marked, benchmarks/bench_correctness.py; BENCHMARKS.md,
# "Answer correctness against people"): it ranks answers as people do (AUC 0.85) but puts a low
# P(correct) on most correct ones, so at 0.5 it graded 4% of correct answers correct. Any other
# judge's odds are read as they are, not calibrated.
CORRECT_THRESHOLDS = {"qwen2.5-1.5b": 0.073}
DEFAULT_CORRECT_THRESHOLD = 0.5


def correct_threshold_for(judge_model_id: str) -> float:
    """The threshold on a judge model's P(correct): a catalog model's measured one (its id starts
    with the catalog name), else 0.5."""
    return CORRECT_THRESHOLDS.get(judge_model_id.split(":", 1)[0], DEFAULT_CORRECT_THRESHOLD)


def answer_correctness(p_correct: float | None, threshold: float) -> Scored:
    """answer correctness = 1 when the judge's P(correct | question, reference answer, answer) >=
    threshold, else 0; its mean is the share of answers the judge grades correct.

    The one answer metric that needs no retrieved context, so a system under test that returns
    none still has it. p_correct None: the grade was unreadable, and the question is left out.
    """
    if p_correct is None:
        return Scored(None, UNREADABLE, 1)
    return Scored(1.0 if p_correct >= threshold else 0.0, None, 1)


def score(given: MetricInput) -> Scored:
    """The judge's P(correct) of the answer's prose against the reference answer, recorded as a
    verdict of the whole answer (statement index -1)."""
    reference, prose = given.reference_answer or "", given.answer.prose
    grade = given.ask(lambda judge: judge.correctness(given.question, reference, prose))
    p_correct = grade.value.p_correct if grade.value else None
    correct = answer_correctness(p_correct, correct_threshold_for(given.judge_model_id))
    given.record(
        VerdictRow(
            metric=given.metric,
            statement_index=-1,
            statement=prose,
            source_number=None,
            verdict="unreadable" if correct.value is None else ("correct" if correct.value else "incorrect"),
            p_supported=None,
            judge_p_supported=None,
            three_way_p_supported=None,
            three_way_p_contradicted=None,
            p_correct=p_correct,
            error=grade.error,
            context=reference,
            cited_sources=[],
            seconds=grade.usage.seconds,
        )
    )
    return correct


METRIC = AnswerMetric(
    "answer_correctness",
    "answer correctness",
    "the share of answers the judge grades correct against the reference answer",
    needs_reference=True,
    failed_as="judged incorrect",
    score=score,
    formula=answer_correctness,
    judge_calls=JudgeCalls("reference answer", "one"),
    grade_threshold=correct_threshold_for,
)
