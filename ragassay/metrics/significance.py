"""Paired comparison of two configurations on the same questions: is the difference real?

Both tests are seeded, so the same scores always give the same interval and p-value. Retrieval
and answer metrics are compared the same way (`compare_all_pairs`): over the questions both
configurations scored, which is how a judged metric that left a question out, or a system under
test whose call failed, stays out of the pair's difference.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl
from pydantic import BaseModel, ConfigDict

from ragassay.metrics.averaging import IntervalRow
from ragassay.metrics.conversations import drawn_ratio, group_index, question_groups
from ragassay.metrics.names import LOWER_IS_BETTER
from ragassay.progress import ProgressReporter

RESAMPLES = 10_000
# A difference is called significant when its randomization p is below this (reports, the CLI's
# tables and the regression gate's default).
ALPHA = 0.05


@dataclass(frozen=True)
class PairedComparison:
    """Mean of (b - a) over questions, its bootstrap 95% interval, and a randomization p-value."""

    questions: int
    mean_difference: float
    ci_low: float
    ci_high: float
    p_value: float


def compare_paired(
    a: np.ndarray, b: np.ndarray, seed: int = 0, resamples: int = RESAMPLES, groups: Sequence[str] | None = None
) -> PairedComparison:
    """Compare per-question scores b against a (same questions, same order).

    - Bootstrap: resample the questions with replacement `resamples` times; the interval is the
      2.5th and 97.5th percentile of the resampled mean differences.
    - Randomization (sign-flip) test: under the null hypothesis the two labels are exchangeable
      per question, so each difference keeps or flips its sign at random;
      p = (1 + #{|mean of flipped differences| >= |observed mean|}) / (1 + resamples),
      two-sided, never 0.

    groups: each question's group (its dialogue's key; metrics/conversations.py). Where a group
    holds several questions, both resample whole groups instead: the bootstrap draws groups (a
    replicate's mean is the drawn groups' summed differences over their count), and the sign flips
    a group's differences together, since the turns of one dialogue are not independent.
    """
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"paired scores need equal 1-d shapes, got {a.shape} and {b.shape}")
    differences = b - a
    count = len(differences)
    if count == 0:
        return PairedComparison(0, 0.0, 0.0, 0.0, 1.0)
    observed = differences.mean()
    if groups is not None:
        index, group_count = group_index(groups)
        if group_count < count:
            return _compare_grouped(differences, index, group_count, seed, resamples)
    rng = np.random.default_rng(seed)
    bootstrap = np.empty(resamples)
    signed_means = np.empty(resamples)
    # In blocks, so memory stays bounded for large question sets.
    block = max(1, 2_000_000 // count)
    for start in range(0, resamples, block):
        size = min(block, resamples - start)
        picks = rng.integers(0, count, size=(size, count))
        bootstrap[start : start + size] = differences[picks].mean(axis=1)
        signs = rng.choice(np.array([-1.0, 1.0]), size=(size, count))
        signed_means[start : start + size] = (signs * differences).mean(axis=1)
    low, high = np.percentile(bootstrap, [2.5, 97.5])
    # A tolerance, so that flips giving the observed mean up to rounding count as extreme.
    extreme = np.abs(signed_means) >= abs(observed) - 1e-12
    p_value = (1 + int(extreme.sum())) / (1 + resamples)
    return PairedComparison(count, float(observed), float(low), float(high), float(p_value))


def _compare_grouped(
    differences: np.ndarray, index: np.ndarray, group_count: int, seed: int, resamples: int
) -> PairedComparison:
    """compare_paired over groups of questions (its docstring): bootstrap and sign flips by group."""
    observed = differences.mean()
    sums = np.bincount(index, weights=differences, minlength=group_count)
    sizes = np.bincount(index, minlength=group_count).astype(np.float64)
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, group_count, size=(resamples, group_count))
    bootstrap = drawn_ratio(sums, sizes, picks)
    signs = rng.choice(np.array([-1.0, 1.0]), size=(resamples, group_count))
    signed_means = (signs * sums).sum(axis=1) / len(differences)
    low, high = np.percentile(bootstrap, [2.5, 97.5])
    extreme = np.abs(signed_means) >= abs(observed) - 1e-12
    p_value = (1 + int(extreme.sum())) / (1 + resamples)
    return PairedComparison(len(differences), float(observed), float(low), float(high), float(p_value))


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
KEYS = ["query_collection", "query_id"]


class ComparisonRow(BaseModel):
    """One row of compare_all_pairs (COMPARISON_SCHEMA, the same names): b - a for one metric over
    the questions both configurations scored, its bootstrap 95% interval and randomization p."""

    model_config = ConfigDict(frozen=True)

    configuration_a: str
    configuration_b: str
    metric: str
    questions: int
    mean_difference: float
    ci_low: float
    ci_high: float
    p_value: float


def comparison_rows(table: pl.DataFrame) -> list[ComparisonRow]:
    """A comparison table's rows, typed."""
    return [ComparisonRow.model_validate(row) for row in table.to_dicts()]


@dataclass(frozen=True)
class DirectedComparison:
    """A comparison row turned to say first - second (comparison_of)."""

    first: str
    second: str
    metric: str
    questions: int
    difference: float
    ci_low: float
    ci_high: float
    p_value: float


def compare_all_pairs(per_question: dict[str, pl.DataFrame], metrics: Sequence[str], seed: int) -> pl.DataFrame:
    """Every pair (a, b) of configurations, in label order: compare_paired of b against a per
    metric, over the questions both scored (a null is a question left out of that metric).

    per_question: each configuration's table of (query_collection, query_id, one column per
    metric). Shows progress: a bootstrap per pair and metric takes seconds over thousands of
    questions.
    """
    rows = []
    pairs = len(per_question) * (len(per_question) - 1) // 2
    total = pairs * len(metrics)
    with ProgressReporter(f"comparing {pairs} pairs of configurations", total=total) as progress:
        for label_a, label_b, name, a, b, groups in paired_scores(per_question, metrics, with_groups=True):
            result = compare_paired(a, b, seed=seed, groups=groups)
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
            progress(len(rows), total)
    return pl.DataFrame(rows, schema=COMPARISON_SCHEMA)


def paired_scores(
    per_question: dict[str, pl.DataFrame], metrics: Sequence[str], with_groups: bool = False
) -> Iterator[tuple]:
    """(label a, label b, metric, a's scores, b's scores) for every pair of configurations in label
    order and every metric, over the questions both scored, in a's question order; with_groups:
    each question's group as a sixth item (metrics/conversations.question_groups: its dialogue's
    key, or its own)."""
    for label_a, label_b in itertools.combinations(per_question, 2):
        aligned = per_question[label_a].join(per_question[label_b], on=KEYS, suffix="__b", maintain_order="left")
        aligned = aligned.with_columns(pl.Series("__group", question_groups(aligned), dtype=pl.String))
        for name in metrics:
            both = aligned.select(name, f"{name}__b", "__group").drop_nulls()
            scores = (label_a, label_b, name, both[name].to_numpy(), both[f"{name}__b"].to_numpy())
            yield (*scores, both["__group"].to_list()) if with_groups else scores


def ranked_by_mean(intervals: Sequence[IntervalRow], metric: str) -> list[IntervalRow]:
    """The interval rows of one metric that have a mean, best first: highest mean, or lowest for a
    metric in LOWER_IS_BETTER. Ties keep the rows' order."""
    scored = [row for row in intervals if row.metric == metric and row.mean is not None]
    return sorted(scored, key=lambda row: row.mean, reverse=metric not in LOWER_IS_BETTER)


def comparison_of(
    comparisons: Sequence[ComparisonRow], metric: str, first: str, second: str
) -> DirectedComparison | None:
    """The compare_all_pairs row of two configurations (in either order) for one metric, turned to
    say first - second; None without one."""
    for row in comparisons:
        if row.metric == metric and {row.configuration_a, row.configuration_b} == {first, second}:
            sign = 1 if row.configuration_a == second else -1  # the row holds b - a
            low, high = sorted((sign * row.ci_low, sign * row.ci_high))
            return DirectedComparison(
                first, second, metric, row.questions, sign * row.mean_difference, low, high, row.p_value
            )
    return None
