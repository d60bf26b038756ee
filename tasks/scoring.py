"""Scoring search runs against golden questions: per-question tables, means, comparisons, gates.

Pure. Averaging happens in exactly one place (`mean_scores`): the mean over every scored question,
an empty result list counting as 0. Questions without expected documents never reach this module.
"""

from __future__ import annotations

import hashlib
import itertools
import operator
import re
from dataclasses import dataclass

import numpy as np
import polars as pl

from tasks.metrics import MetricName, judge_run, parse_metric
from tasks.schemas import per_question_spec
from tasks.significance import compare_paired

DocKey = tuple[str, str]  # (collection, doc_id)


@dataclass(frozen=True)
class EvalQuestion:
    """A golden question with its graded expected documents."""

    query_collection: str
    query_id: str
    question: str
    judgements: dict[DocKey, int]
    reference_answer: str | None = None


def sample_questions(questions: list[EvalQuestion], max_questions: int | None, seed: int) -> list[EvalQuestion]:
    """At most max_questions, chosen by a seeded hash of each question's id (same seed, same sample),
    kept in their original order."""
    if max_questions is None or len(questions) <= max_questions:
        return questions

    def draw(question: EvalQuestion) -> str:
        return hashlib.sha256(f"{seed}:{question.query_collection}/{question.query_id}".encode()).hexdigest()

    chosen = {id(q) for q in sorted(questions, key=draw)[:max_questions]}
    return [q for q in questions if id(q) in chosen]


def score_rankings(
    questions: list[EvalQuestion], rankings: list[list[DocKey]], metrics: list[MetricName], depth: int
) -> dict[str, np.ndarray]:
    """Per-question values of each metric, keyed by metric name (`ndcg@10`)."""
    judged = judge_run(rankings, [q.judgements for q in questions], depth)
    return {str(metric): metric.compute(judged) for metric in metrics}


def per_question_frame(
    label: str, questions: list[EvalQuestion], rankings: list[list[DocKey]], scores: dict[str, np.ndarray]
) -> pl.DataFrame:
    """One row per question of one configuration, one column per metric."""
    spec = per_question_spec(list(scores))
    return pl.DataFrame(
        {
            "configuration": [label] * len(questions),
            "query_collection": [q.query_collection for q in questions],
            "query_id": [q.query_id for q in questions],
            "question": [q.question for q in questions],
            "relevant_count": [sum(1 for g in q.judgements.values() if g > 0) for q in questions],
            "retrieved": [len(r) for r in rankings],
            **{name: values for name, values in scores.items()},
        },
        schema=spec.schema,
    )


def mean_scores(per_question: pl.DataFrame, metrics: list[MetricName]) -> dict[str, float]:
    """Mean of each metric over all scored questions (the only place scores are averaged)."""
    if per_question.height == 0:
        return {str(metric): 0.0 for metric in metrics}
    return {str(metric): float(per_question[str(metric)].mean()) for metric in metrics}


def compare_configurations(
    per_question: dict[str, pl.DataFrame], metrics: list[MetricName], seed: int
) -> pl.DataFrame:
    """Every pair (a, b) of configurations: mean of b - a per metric, bootstrap 95% CI, p-value."""
    rows = []
    for label_a, label_b in itertools.combinations(per_question, 2):
        a, b = per_question[label_a], per_question[label_b]
        aligned = a.join(b, on=["query_collection", "query_id"], suffix="__b", maintain_order="left")
        for metric in metrics:
            name = str(metric)
            result = compare_paired(aligned[name].to_numpy(), aligned[f"{name}__b"].to_numpy(), seed=seed)
            rows.append(
                {
                    "configuration_a": label_a,
                    "configuration_b": label_b,
                    "metric": name,
                    "questions": result.questions,
                    "mean_difference": result.mean_difference,
                    "ci_low": result.ci_low,
                    "ci_high": result.ci_high,
                    "p_value": result.p_value,
                }
            )
    return pl.DataFrame(rows, schema=COMPARISON_SCHEMA)


COMPARISON_SCHEMA = pl.Schema(
    {
        "configuration_a": pl.String,
        "configuration_b": pl.String,
        "metric": pl.String,
        "questions": pl.Int64,
        "mean_difference": pl.Float64,
        "ci_low": pl.Float64,
        "ci_high": pl.Float64,
        "p_value": pl.Float64,
    }
)

_OPERATORS = {">=": operator.ge, ">": operator.gt, "<=": operator.le, "<": operator.lt, "==": operator.eq}
_ASSERTION = re.compile(r"^\s*(?P<label>[^:\s]+)\s*:\s*(?P<metric>[\w@]+)\s*(?P<op>>=|<=|==|>|<)\s*(?P<bound>[-+]?\d*\.?\d+)\s*$")


@dataclass(frozen=True)
class Assertion:
    """A quality gate such as `hybrid:recall@5>=0.8`."""

    label: str
    metric: MetricName
    op: str
    bound: float

    def __str__(self) -> str:
        return f"{self.label}:{self.metric}{self.op}{self.bound:g}"


def parse_assertion(text: str) -> Assertion:
    """Parse LABEL:METRIC OP NUMBER; ValueError says what form is expected."""
    match = _ASSERTION.match(text)
    if match is None:
        raise ValueError(f"assertion {text!r} must look like 'LABEL:METRIC>=NUMBER' (operators: >= > <= < ==)")
    return Assertion(match["label"], parse_metric(match["metric"]), match["op"], float(match["bound"]))


def check_assertions(assertions: list[Assertion], means: dict[str, dict[str, float]]) -> list[dict]:
    """Each assertion with the measured value and whether it holds."""
    results = []
    for assertion in assertions:
        value = means[assertion.label][str(assertion.metric)]
        results.append(
            {"assertion": str(assertion), "value": value, "passed": bool(_OPERATORS[assertion.op](value, assertion.bound))}
        )
    return results
