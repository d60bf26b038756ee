"""Averaging per-question values into run values: one rule, used by retrieval and answer metrics.

mean = sum of the scored questions' values / number of scored questions. A question is scored
when it has a value; for retrieval every question has one (an empty result list scores 0 and
still counts), for answer metrics a question can be excluded with a reason (metrics/answers.py)
and is then left out of both sums. The count of scored questions is always reported beside the
mean.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import polars as pl

from ragassay.metrics.answers import Scored
from ragassay.metrics.names import MetricName


def mean_of_scored(values: Sequence[float | None]) -> tuple[float | None, int]:
    """(mean over the values that are not None, how many there are); (None, 0) when none are."""
    counted = [value for value in values if value is not None]
    return (float(np.mean(counted)) if counted else None, len(counted))


def mean_scored(values: Sequence[Scored]) -> tuple[float | None, int]:
    """The mean of answer-metric scores over the questions that were scored, and their number."""
    return mean_of_scored([value.value for value in values])


def mean_scores(per_question: pl.DataFrame, metrics: list[MetricName]) -> dict[str, float]:
    """Each retrieval metric's mean over the questions of a per-question table (0.0 for a table
    without questions, as an evaluation that scored nothing found nothing)."""
    means = {}
    for metric in metrics:
        mean, _ = mean_of_scored(per_question[str(metric)].to_list() if per_question.height else [])
        means[str(metric)] = 0.0 if mean is None else mean
    return means
