"""Where a plugin module has imported MetricInput from since metrics could be added
(tests/plugins/toy_metrics.py): the class is declared with the other parts of a metric, in
metrics/answer_metric.py, and is the same class here."""

from __future__ import annotations

from ragassay.metrics.answer_metric import MetricInput

__all__ = ["MetricInput"]
