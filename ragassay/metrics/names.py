"""Metric names, parsed in this one place: retrieval names such as `ndcg@10`, `recall@5`, `mrr`,
`mrr@10` (`parse_metric`), the answer metric names, and the MLflow-safe form of every name
(`recall@5` is logged as `recall_at_5`, since MLflow metric names cannot hold `@`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ragassay.metrics.declared import DECLARED_METRICS

if TYPE_CHECKING:
    import numpy as np

    from ragassay.metrics.retrieval import Judged

# The answer metrics scored per question, in the order tables show them, as declared
# (metrics/declared.py: the built-in ones, then any a plugin adds).
ANSWER_METRICS = tuple(metric.name for metric in DECLARED_METRICS)
# The few answer metrics `runs list` and the follow-up tables show.
HEADLINE_ANSWER_METRICS = tuple(metric.name for metric in DECLARED_METRICS if metric.headline)
# Turns of the golden dialogues reported apart: first turns, and the follow-ups after them.
FIRST, FOLLOWUP = "first", "followup"
TURN_SUBSETS = (FIRST, FOLLOWUP)
# The share of golden dialogues every turn of which was cited or declined as it should be.
CONVERSATION_SUCCESS = "conversation_success"
# The refusal metrics, counted from outcomes (no judge), in both directions.
REFUSAL_METRICS = ("refusal_recall", "false_refusal_rate")
# Every answer metric a report shows, bounds and compares: the judged ones, then refusal.
REPORTED_ANSWER_METRICS = (*ANSWER_METRICS, *REFUSAL_METRICS)
# Beside a retrieval configuration's means: the questions they are over (a system's failed calls
# are in none), so means over different question sets say so.
QUESTIONS_SCORED = "questions_scored"
# Metrics where the lower value is the better one (every other metric: higher is better).
LOWER_IS_BETTER = ("false_refusal_rate", *(metric.name for metric in DECLARED_METRICS if not metric.higher_is_better))
# The answer metrics made of support verdicts, which people's labels can correct for the judge's
# error (metrics/judge_error.py); each is also reported as METRIC.corrected with its interval,
# METRIC.corrected_low and METRIC.corrected_high (logged as METRIC_corrected... in MLflow).
JUDGED_METRICS = tuple(metric.name for metric in DECLARED_METRICS if metric.corrected_by_labels)
# How tables and reports write each answer metric.
METRIC_TITLES = {metric.name: metric.title for metric in DECLARED_METRICS}
CORRECTED_PARTS = ("corrected", "corrected_low", "corrected_high")
CORRECTED_METRICS = tuple(f"{metric}.{part}" for metric in JUDGED_METRICS for part in CORRECTED_PARTS)


def metric_key(name: str) -> str:
    """The key a metric has in a run's metrics: `faithfulness.corrected_low` is
    `faithfulness_corrected_low`; any other name is itself."""
    return name.replace(".", "_")


# The retrieval metric families, each computed by its function of metrics/retrieval.py (loaded,
# with numpy, when a metric is computed: a command that only parses a name does not pay for it).
_METRICS = ("recall", "precision", "hit_rate", "ndcg", "mrr")


def _compute(family: str) -> Callable[..., np.ndarray]:
    from ragassay.metrics import retrieval

    return {
        "recall": retrieval.recall_at_k,
        "precision": retrieval.precision_at_k,
        "hit_rate": retrieval.hit_rate_at_k,
        "ndcg": retrieval.ndcg_at_k,
        "mrr": retrieval.reciprocal_rank,
    }[family]


_NAME = re.compile(r"^(?P<family>[a-z_]+?)(?:@(?P<k>\d+))?$")


@dataclass(frozen=True)
class MetricName:
    """A parsed metric name: family and cut-off (None only for whole-run MRR)."""

    family: str
    k: int | None

    def __str__(self) -> str:
        return self.family if self.k is None else f"{self.family}@{self.k}"

    @property
    def mlflow_key(self) -> str:
        return mlflow_key(str(self))

    def compute(self, judged: Judged) -> np.ndarray:
        return _compute(self.family)(judged, self.k)


def parse_metric(name: str) -> MetricName:
    """Parse `ndcg@10`, `mrr` or the MLflow form `ndcg_at_10`; ValueError lists the valid names."""
    normalized = name.strip().lower().replace("_at_", "@")
    match = _NAME.match(normalized)
    family = match.group("family") if match else None
    k = int(match.group("k")) if match and match.group("k") else None
    if family not in _METRICS or (k is None and family != "mrr") or k == 0:
        raise ValueError(
            f"unknown metric {name!r}; valid: recall@k, precision@k, hit_rate@k, ndcg@k, mrr, mrr@k (k >= 1)"
        )
    return MetricName(family, k)


def parse_metric_or_none(name: str) -> MetricName | None:
    """The parsed retrieval metric, or None for any other name (an answer metric, a cost)."""
    try:
        return parse_metric(name)
    except ValueError:
        return None


def standard_metrics(ks: list[int]) -> list[MetricName]:
    """The metrics every retrieval evaluation reports for the given cut-offs."""
    names = [MetricName(family, k) for k in ks for family in ("recall", "precision", "hit_rate", "ndcg")]
    return [*names, MetricName("mrr", None)]


def mlflow_key(name: str) -> str:
    """MLflow metric names cannot hold '@': `recall@5` is logged as `recall_at_5`."""
    return name.replace("@", "_at_")


def display_name(key: str) -> str:
    return key.replace("_at_", "@")


def headline_retrieval_metrics(ks) -> list[str]:
    """The retrieval metrics a summary, a picture or a batch's parent run shows: recall at every
    cut-off, nDCG at the deepest, and MRR."""
    ks = sorted(ks)
    return [f"recall@{k}" for k in ks] + [f"ndcg@{max(ks)}", "mrr"]
