"""The built-in answer metrics, a module each: its declaration (METRIC), its formula (the
docstring of its pure function), the prompt it asks if no other metric shares it, and
`score(MetricInput) -> Scored`. To add one, write a module like these and list it below
(docs/how-to/add-a-metric.md).

- faithfulness: the share of the answer's statements the retrieved passages support.
- context_recall: the share of the reference answer's statements the passages hold.
- citation_precision: the share of citations whose cited passage supports their statement.
- answer_relevancy: how close the question the answer responds to is to the question asked.
- mean_support: the mean P(supported) of the answer's statements.
- answer_correctness: the share of answers graded correct against the reference.

BUILT_IN_METRICS is the order tables show them and the order one answer is judged in. Every
statement read over the passages is judged first, in one pass; then the metrics in this order:
context recall and faithfulness read that pass (their verdict rows in this order: a statement the
answer and the reference share is one judgement, which the labelling sample files under the first
metric that recorded it, context recall, as it always has); citation precision straight after,
its prompts beginning with the support instruction just asked, which an in-process model keeps
instead of reading it again (BENCHMARKS.md, issue 62); the implied question and the correctness
grade, each a prompt of its own, after.
"""

from __future__ import annotations

from ragassay.metrics.answer_metric import AnswerMetric
from ragassay.metrics.answer_metrics import (
    answer_correctness,
    answer_relevancy,
    citation_precision,
    context_recall,
    faithfulness,
    mean_support,
)

BUILT_IN_METRICS: tuple[AnswerMetric, ...] = (
    context_recall.METRIC,
    faithfulness.METRIC,
    citation_precision.METRIC,
    answer_relevancy.METRIC,
    mean_support.METRIC,
    answer_correctness.METRIC,
)
