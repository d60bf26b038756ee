"""Every answer metric, declared once: the built-in ones (metrics/answer_metrics/, a module
each) and any a module named in RAGASSAY_PLUGINS adds (its METRICS list). The schemas, tables,
MLflow keys, assertions, gate bounds, reports, traces, labelling screens, the estimate and the
pictures take their metric lists from here (metrics/names.py derives them), so a metric declared
once is in every one of them (docs/how-to/add-a-metric.md). A declaration is an
metrics/answer_metric.AnswerMetric; its `score` takes a MetricInput and returns a Scored.
"""

from __future__ import annotations

from ragassay.metrics.answer_metric import AnswerMetric
from ragassay.metrics.answer_metrics import BUILT_IN_METRICS
from ragassay.plugins import plugin_modules

__all__ = [
    "BUILT_IN_METRICS",
    "BY_NAME",
    "DECLARED_METRICS",
    "LABELLED_METRICS",
    "LABEL_BUDGET_METRIC",
    "LEAST_FAITHFUL",
    "NEEDING_CONTEXT",
    "NEEDING_REFERENCE",
    "TURN_METRIC",
    "AnswerMetric",
]


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
# The metrics that can list an answer among the least faithful, the one to use first first.
LEAST_FAITHFUL = tuple(
    sorted((metric for metric in DECLARED_METRICS if metric.least_faithful), key=lambda m: m.least_faithful.rank)
)
# The metric a label budget narrows the corrected interval of, and the one that decides whether
# a dialogue turn was handled (each declared so by exactly one metric).
LABEL_BUDGET_METRIC = next(metric.name for metric in DECLARED_METRICS if metric.budgets_labels)
TURN_METRIC = next(metric.name for metric in DECLARED_METRICS if metric.decides_turns)
# The metrics whose verdicts are support verdicts people can label (`ragassay judge label`).
LABELLED_METRICS = tuple(metric.name for metric in DECLARED_METRICS if metric.label_prompt is not None)
