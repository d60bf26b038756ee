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
from ragassay.metrics.levels import ALPHA, MIN_BOOTSTRAP_QUESTIONS
from ragassay.metrics.names import LOWER_IS_BETTER
from ragassay.progress import ProgressReporter

RESAMPLES = 10_000
# Up to this many sign-flip units (questions, or dialogues) every flip is enumerated: the p-value
# is exact, not drawn.
EXACT_FLIPS_UP_TO = 14
# Every paired metric is a mean of per-question values in [0, 1], so a difference lies in [-1, 1]:
# where too few questions can reject no difference at all, the interval is this whole range.
DIFFERENCE_RANGE = (-1.0, 1.0)


@dataclass(frozen=True)
class PairedComparison:
    """Mean of (b - a) over questions, its 95% interval, and a randomization p-value; `interval`
    says how the interval was made ("bootstrap", or "sign-flip" below MIN_BOOTSTRAP_QUESTIONS)."""

    questions: int
    mean_difference: float
    ci_low: float
    ci_high: float
    p_value: float
    interval: str = "bootstrap"


def compare_paired(
    a: np.ndarray,
    b: np.ndarray,
    seed: int = 0,
    resamples: int = RESAMPLES,
    groups: Sequence[str] | None = None,
    bootstrap_always: bool = False,
) -> PairedComparison:
    """Compare per-question scores b against a (same questions, same order).

    - Randomization (sign-flip) test: under the null hypothesis the two labels are exchangeable
      per question, so each difference keeps or flips its sign at random;
      p = #{|mean of flipped differences| >= |observed mean|} / 2^n over every flip where n <=
      EXACT_FLIPS_UP_TO, else (1 + #{...}) / (1 + resamples) over `resamples` drawn flips;
      two-sided, never 0.
    - Interval: from MIN_BOOTSTRAP_QUESTIONS questions on, the percentile bootstrap (resample the
      questions with replacement `resamples` times; the 2.5th and 97.5th percentile of the
      resampled mean differences). Below it, the test inverted (randomization_interval): every
      shift delta whose differences d - delta the test does not reject, so it excludes 0 exactly
      when p < ALPHA (bootstrap_always: the bootstrap at every size, for the benchmark).

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
    index, units = group_index(groups) if groups is not None else (np.arange(count), count)
    if units >= count:
        index, units = np.arange(count), count
    if units < MIN_BOOTSTRAP_QUESTIONS and not bootstrap_always:
        return _sign_flip_comparison(differences, index, seed, resamples)
    bootstrapped = (
        _compare_grouped(differences, index, units, seed, resamples)
        if units < count
        else _compare_bootstrap(differences, seed, resamples)
    )
    excludes_zero = bootstrapped.ci_low > 0 or bootstrapped.ci_high < 0
    if excludes_zero != (bootstrapped.p_value < ALPHA) and not bootstrap_always:
        # The interval and the test disagree (a skewed sample near the edge): the test's own interval.
        return _sign_flip_comparison(differences, index, seed, resamples)
    return bootstrapped


def _sign_flip_comparison(differences: np.ndarray, index: np.ndarray, seed: int, resamples: int) -> PairedComparison:
    """compare_paired with the randomization test's p and its inverted interval (they agree)."""
    low, high = randomization_interval(differences, index, seed, resamples)
    p_value = randomization_p(differences, index, seed, resamples)
    return PairedComparison(len(differences), float(differences.mean()), low, high, p_value, "sign-flip")


def _compare_bootstrap(differences: np.ndarray, seed: int, resamples: int) -> PairedComparison:
    """compare_paired's bootstrap interval and drawn sign-flip p, questions one by one."""
    count = len(differences)
    observed = differences.mean()
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


def _flips(units: int, seed: int, resamples: int) -> np.ndarray:
    """The sign vectors a randomization test reads: all 2^units where units <= EXACT_FLIPS_UP_TO,
    else `resamples` drawn with the seed."""
    if units <= EXACT_FLIPS_UP_TO:
        codes = np.arange(2**units)[:, None] >> np.arange(units)[None, :] & 1
        return np.where(codes == 1, 1.0, -1.0)
    return np.random.default_rng(seed).choice(np.array([-1.0, 1.0]), size=(resamples, units))


def randomization_p(
    differences: np.ndarray, index: np.ndarray | None = None, seed: int = 0, resamples: int = RESAMPLES
) -> float:
    """The two-sided sign-flip p of the mean difference, each unit's (question's, or dialogue's)
    differences flipped together: exact over every flip up to EXACT_FLIPS_UP_TO units, else
    (1 + #extreme) / (1 + resamples) (compare_paired's docstring)."""
    index = np.arange(len(differences)) if index is None else index
    units = int(index.max()) + 1
    sums = np.bincount(index, weights=differences, minlength=units)
    flips = _flips(units, seed, resamples)
    observed = abs(sums.sum())
    extreme = int((np.abs(flips @ sums) >= observed - 1e-12).sum())
    if units <= EXACT_FLIPS_UP_TO:
        return extreme / len(flips)
    return (1 + extreme) / (1 + resamples)


def randomization_interval(
    differences: np.ndarray,
    index: np.ndarray | None = None,
    seed: int = 0,
    resamples: int = RESAMPLES,
    iterations: int = 40,
) -> tuple[float, float]:
    """The 95% interval of a mean difference the sign-flip test gives, inverted: the shifts delta
    at which the differences d - delta are not rejected (randomization_p >= ALPHA), found by
    bisection on each side of the mean. Where no shift is rejected on a side (too few questions
    for any p below ALPHA: 2 / 2^n >= ALPHA up to 5 questions), that side is DIFFERENCE_RANGE's."""
    index = np.arange(len(differences)) if index is None else index
    mean = float(differences.mean())

    def kept(delta: float) -> bool:
        return randomization_p(differences - delta, index, seed, resamples) >= ALPHA

    def bound(far: float) -> float:
        if kept(far):
            return far
        inside, outside = mean, far
        for _ in range(iterations):
            middle = (inside + outside) / 2
            inside, outside = (middle, outside) if kept(middle) else (inside, middle)
        return inside

    low, high = bound(DIFFERENCE_RANGE[0]), bound(DIFFERENCE_RANGE[1])
    # The bisection stops a hair inside a bound; where that bound is 0 (the test keeps no
    # difference at all, p >= ALPHA), the interval holds 0 itself, as the test says.
    if (low > 0 or high < 0) and kept(0.0):
        low, high = min(low, 0.0), max(high, 0.0)
    return round(low, 12) + 0.0, round(high, 12) + 0.0


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
        # How the interval was made: "bootstrap", or "sign-flip" below MIN_BOOTSTRAP_QUESTIONS.
        "interval": pl.String,
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
    interval: str = "bootstrap"


def interval_source(rows: Sequence[ComparisonRow]) -> str:
    """How the rows' intervals were made, in words for a table's caption or footnote."""
    flipped = [row for row in rows if row.interval == "sign-flip"]
    if not flipped:
        return "bootstrap"
    fewest = min(row.questions for row in flipped)
    return (
        f"the sign-flip test inverted where fewer than {MIN_BOOTSTRAP_QUESTIONS} questions (or dialogues) were "
        "compared, or where a bootstrap interval disagreed with the test (a percentile bootstrap over a handful of "
        "questions claims more than they know; this interval excludes 0 exactly when p < "
        f"{ALPHA})"
        + (
            f"; over {fewest} questions no difference can be significant, so its interval is every possible one"
            if any(row.ci_low <= DIFFERENCE_RANGE[0] and row.ci_high >= DIFFERENCE_RANGE[1] for row in flipped)
            else ""
        )
        + ("; else bootstrap" if len(flipped) < len(rows) else "")
    )


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
                    "interval": result.interval,
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
