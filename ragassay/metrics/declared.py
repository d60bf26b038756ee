"""Every answer metric, declared once: its name, what it means, which way is better, whether
people's labels can correct it, whether a refused answer has it, and (for a metric added from
outside) the function that scores one answer. The schemas, tables, MLflow keys, assertions, gate
bounds, reports, traces and pictures take their metric lists from here (metrics/names.py derives
them), so a metric added here, or in a module RAGASSAY_PLUGINS names (its METRICS list), is in
every one of them (ARCHITECTURE.md, "How to add a metric").

The six built-in metrics are scored in shared passes (judge/judge.judge_answer:
one pass over the passages for the reference's and the answer's statements); their formulas are
the docstrings of metrics/answers.py's functions, named in `formula`. An added metric's `score`
takes judge/metric_input.MetricInput (the answer, its context and reference, and the judge to ask)
and returns a metrics.answers.Scored.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ragassay.metrics import answers
from ragassay.metrics.answers import Scored
from ragassay.plugins import plugin_modules


@dataclass(frozen=True)
class AnswerMetric:
    """One answer metric's declaration."""

    name: str  # snake_case: the column, the MLflow key, the assertion's and the gate's name
    title: str  # how tables and reports write it
    meaning: str  # one line: what a value says
    higher_is_better: bool = True
    # Made of support verdicts, so people's labels of the judge can correct its mean
    # (metrics/judge_error.py): reported with METRIC.corrected and its interval.
    corrected_by_labels: bool = False
    # Scored for a refused answer too (context recall is retrieval's, whatever the answer was).
    scored_when_refused: bool = False
    # Asks the judge model (a trace's feedback then comes from an LLM judge; else from code).
    asks_judge: bool = True
    # Reads the retrieved context text (not applicable to a system that returns none), or the
    # golden reference answer (not scored for a question without one).
    needs_context: bool = False
    needs_reference: bool = False
    # How a trace names what failed it: a statement "not supported", an answer "judged incorrect".
    failed_as: str = "not supported"
    # The pure function whose docstring is its formula (built-in metrics).
    formula: Callable[..., Scored] | None = None
    # An added metric's scoring of one answer: MetricInput -> Scored (built-in ones: None).
    score: Callable[..., Scored] | None = None

    def __post_init__(self) -> None:
        if not self.name.isidentifier() or self.name != self.name.lower():
            raise ValueError(f"answer metric name {self.name!r} must be a snake_case identifier")


BUILT_IN_METRICS: tuple[AnswerMetric, ...] = (
    AnswerMetric(
        "faithfulness",
        "faithfulness",
        "the share of the answer's statements its retrieved passages support",
        corrected_by_labels=True,
        needs_context=True,
        formula=answers.faithfulness,
    ),
    AnswerMetric(
        "context_recall",
        "context recall",
        "the share of the reference answer's statements the retrieved passages hold",
        corrected_by_labels=True,
        scored_when_refused=True,
        needs_context=True,
        needs_reference=True,
        formula=answers.context_recall,
    ),
    AnswerMetric(
        "answer_relevancy",
        "answer relevancy",
        "how close the question the answer responds to is to the question asked",
        formula=answers.answer_relevancy,
    ),
    AnswerMetric(
        "citation_precision",
        "citation precision",
        "the share of citations whose cited passage supports their statement",
        corrected_by_labels=True,
        needs_context=True,
        formula=answers.citation_precision,
    ),
    AnswerMetric(
        "mean_support",
        "mean support",
        "the mean of the answer's statements' P(supported): the answer-level number people's ranking agrees with",
        needs_context=True,
        failed_as="judged unsupported",
        formula=answers.mean_support,
    ),
    AnswerMetric(
        "answer_correctness",
        "answer correctness",
        "the share of answers the judge grades correct against the reference answer",
        needs_reference=True,
        failed_as="judged incorrect",
        formula=answers.answer_correctness,
    ),
)


def _declared() -> tuple[AnswerMetric, ...]:
    metrics = list(BUILT_IN_METRICS)
    for module in plugin_modules():
        for metric in getattr(module, "METRICS", ()):
            if metric.score is None:
                raise ValueError(f"answer metric {metric.name!r} of {module.__name__} has no score function")
            if any(known.name == metric.name for known in metrics):
                raise ValueError(f"answer metric {metric.name!r} of {module.__name__} is declared twice")
            metrics.append(metric)
    return tuple(metrics)


DECLARED_METRICS = _declared()
BY_NAME = {metric.name: metric for metric in DECLARED_METRICS}
# The metrics a system without context text, or a question without a reference answer, lacks.
NEEDING_CONTEXT = tuple(metric.name for metric in DECLARED_METRICS if metric.needs_context)
NEEDING_REFERENCE = tuple(metric.name for metric in DECLARED_METRICS if metric.needs_reference)
# Metrics added from outside the judge's own passes: each scored by its `score`.
ADDED_METRICS = tuple(metric for metric in DECLARED_METRICS if metric.score is not None)
