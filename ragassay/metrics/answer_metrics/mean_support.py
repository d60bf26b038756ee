"""Mean support: an answer's mean P(supported) over its statements, the answer-level number."""

from __future__ import annotations

from collections.abc import Sequence

from ragassay.metrics.answer_metric import AnswerMetric, JudgeCalls, LeastFaithful, MetricInput
from ragassay.metrics.answers import UNREADABLE, Scored

# Mean support below which an answer is listed among the least faithful: the bound of the best
# balanced accuracy over MEMERAG's answers and WiCE's claims as one-sentence answers, each
# collection and class weighed the same (benchmarks/fit_learned_verdict.py, `answer_level`; the
# shipped learned_verdict.json names it as answer_level.threshold).
MEAN_SUPPORT_FAITHFUL_AT = 0.424


def mean_support(statement_ps: Sequence[float | None]) -> Scored:
    """mean support = (1/n) Σ_i P_i: the mean of the answer's n statements' P(supported) over
    the retrieved passages (the verdicts faithfulness counts, read as probabilities).

    The answer-level number: where people rate whole answers faithful or not (MEMERAG's answers,
    WiCE's claims as one-sentence answers), it ranks them as people do better than the share of
    supported statements, and its worst collection better than the answer's MiniLM K-precision
    or its lowest P (benchmarks/fit_learned_verdict.py, `answer_level`; BENCHMARKS.md). Left out
    when any statement's verdict is unreadable, as faithfulness is.
    """
    if not statement_ps:
        return Scored(None, "the answer has no statements")
    unreadable = sum(1 for p in statement_ps if p is None)
    if unreadable:
        return Scored(None, f"{UNREADABLE} ({unreadable} of {len(statement_ps)} verdicts)", len(statement_ps))
    return Scored(sum(statement_ps) / len(statement_ps), None, len(statement_ps))


def score(given: MetricInput) -> Scored:
    """The statements' P(supported) from the pass over the passages that faithfulness reads: asked
    together, the two cost the calls of one."""
    return mean_support([given.p_over_passages(statement) for statement in given.statement_texts()])


METRIC = AnswerMetric(
    "mean_support",
    "mean support",
    "the mean of the answer's statements' P(supported): the answer-level number people's ranking agrees with",
    needs_context=True,
    failed_as="judged unsupported",
    score=score,
    formula=mean_support,
    passage_statements=MetricInput.statement_texts,
    judge_calls=JudgeCalls("statement", "support over passages"),
    # Before faithfulness: the answer-level number that ranks answers as people do.
    least_faithful=LeastFaithful(MEAN_SUPPORT_FAITHFUL_AT, rank=0),
)
