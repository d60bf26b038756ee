"""Averaging per-question values into run values: one rule, used by retrieval and answer metrics.

mean = sum of the scored questions' values / number of scored questions. A question is scored
when it has a value; for retrieval every question has one (an empty result list scores 0 and
still counts), for answer metrics a question can be excluded with a reason (metrics/answers.py)
and is then left out of both sums. The count of scored questions is always reported beside the
mean.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl
from pydantic import BaseModel, ConfigDict

from ragassay.metrics.answers import Scored
from ragassay.metrics.conversations import drawn_ratio, group_index, has_turns, question_groups
from ragassay.metrics.levels import MIN_BOOTSTRAP_QUESTIONS
from ragassay.metrics.names import FIRST, FOLLOWUP, MetricName, metric_key


def mean_of_scored(values: Sequence[float | None]) -> tuple[float | None, int]:
    """(mean over the values that are not None, how many there are); (None, 0) when none are."""
    counted = [value for value in values if value is not None]
    return (float(np.mean(counted)) if counted else None, len(counted))


def mean_scored(values: Sequence[Scored]) -> tuple[float | None, int]:
    """The mean of answer-metric scores over the questions that were scored, and their number."""
    return mean_of_scored([value.value for value in values])


def mean_scores(per_question: pl.DataFrame, metrics: list[MetricName]) -> dict[str, float | None]:
    """Each retrieval metric's mean over the questions of a per-question table that have a value;
    None where no question has one (nothing was scored: no value, never a 0.0)."""
    return {
        str(metric): mean_of_scored(per_question[str(metric)].to_list() if per_question.height else [])[0]
        for metric in metrics
    }


def scored_questions(per_question: pl.DataFrame, metrics: list[MetricName]) -> int:
    """The questions of a per-question table with a value for the first metric (a question is
    scored on every metric or on none)."""
    return per_question.height and int(per_question[str(metrics[0])].is_not_null().sum())


def on_common_questions(per_question: dict[str, pl.DataFrame], metrics: list[str]) -> dict[str, pl.DataFrame]:
    """Each configuration's per-question table with every question that some configuration did
    not score set to null, so every mean is over the same questions: those all of them scored."""
    # A question is its collection and its id: two collections' golden sets may share ids.
    key = pl.concat_str("query_collection", "query_id", separator="\x1f")
    scored = [
        set(table.filter(pl.col(metrics[0]).is_not_null()).select(key)["query_collection"].to_list())
        for table in per_question.values()
    ]
    common = list(set.intersection(*scored)) if scored else []
    return {
        label: table.with_columns(
            pl.when(key.is_in(common)).then(pl.col(metric)).otherwise(None).alias(metric) for metric in metrics
        )
        for label, table in per_question.items()
    }


INTERVAL_RESAMPLES = 2_000
INTERVAL_SCHEMA = pl.Schema(
    {
        "configuration": pl.String,
        "metric": pl.String,
        "scored": pl.Int64,
        "mean": pl.Float64,
        "ci_low": pl.Float64,
        "ci_high": pl.Float64,
    }
)


class IntervalRow(BaseModel):
    """One row of an interval table (INTERVAL_SCHEMA, the same names): a configuration's mean of
    one metric over the questions it scored, with its 95% interval (None where none was scored)."""

    model_config = ConfigDict(frozen=True)

    configuration: str
    metric: str
    scored: int
    mean: float | None
    ci_low: float | None
    ci_high: float | None


def interval_rows(table: pl.DataFrame) -> list[IntervalRow]:
    """An interval table's rows, typed."""
    return [IntervalRow.model_validate(row) for row in table.to_dicts()]


def mean_interval(
    values: Sequence[float | None],
    seed: int = 0,
    resamples: int = INTERVAL_RESAMPLES,
    groups: Sequence[str] | None = None,
) -> tuple[float, float] | None:
    """The seeded percentile-bootstrap 95% interval of the mean over the scored values: resample
    the scored questions with replacement `resamples` times; the interval is the 2.5th and 97.5th
    percentile of the resampled means. Below MIN_BOOTSTRAP_QUESTIONS values in [0, 1], the
    Clopper-Pearson interval instead (bounded_mean_interval). None when nothing was scored.
    groups: each value's group (its dialogue; metrics/conversations.py): where a group holds several
    scored values, whole groups are resampled instead (and below that size, the groups' means are
    what the exact interval reads)."""
    counted = np.array([value for value in values if value is not None], dtype=np.float64)
    if counted.size == 0:
        return None
    if groups is not None:
        index, count = group_index([group for group, value in zip(groups, values) if value is not None])
        if count < MIN_BOOTSTRAP_QUESTIONS and _bounded(counted):
            sums, sizes = np.bincount(index, counted, count), np.bincount(index, minlength=count)
            return bounded_mean_interval(sums / sizes)
        if count < counted.size:
            picks = np.random.default_rng(seed).integers(0, count, size=(resamples, count))
            sums, sizes = np.bincount(index, counted, count), np.bincount(index, minlength=count).astype(np.float64)
            low, high = np.percentile(drawn_ratio(sums, sizes, picks), [2.5, 97.5])
            return float(low), float(high)
    if counted.size < MIN_BOOTSTRAP_QUESTIONS and _bounded(counted):
        return bounded_mean_interval(counted)
    picks = np.random.default_rng(seed).integers(0, counted.size, size=(resamples, counted.size))
    low, high = np.percentile(counted[picks].mean(axis=1), [2.5, 97.5])
    return float(low), float(high)


def _bounded(values: np.ndarray) -> bool:
    return bool(np.all((values >= 0) & (values <= 1)))


def bounded_mean_interval(values: Sequence[float]) -> tuple[float, float]:
    """The 95% Clopper-Pearson interval of the mean of n values in [0, 1], read with x = their sum
    (a real number where the values are not all 0 or 1):

        low = Beta⁻¹(0.025; x, n - x + 1) (0 when x = 0),  high = Beta⁻¹(0.975; x + 1, n - x) (1 when x = n)

    Exact for 0/1 values and conservative for any in [0, 1] (a bounded value's mean is no more
    spread than a Bernoulli's of the same mean: Hoeffding 1963), so it covers at least 95% at
    every n, where a percentile bootstrap over a handful of values is narrower than the truth
    (5 of 5 questions would print [1.000, 1.000]). mean_interval uses it below
    MIN_BOOTSTRAP_QUESTIONS."""
    # The inverse of the regularized incomplete beta function is Beta's quantile function, and
    # scipy.special loads in a third of scipy.stats' time (every evaluation command pays it).
    from scipy.special import betaincinv

    values = np.asarray(values, dtype=np.float64)
    n, x = values.size, float(values.sum())
    low = 0.0 if x <= 0 else float(betaincinv(x, n - x + 1, 0.025))
    high = 1.0 if x >= n else float(betaincinv(x + 1, n - x, 0.975))
    return low, high


def interval_table(per_question: dict[str, pl.DataFrame], metrics: list[str], seed: int = 0) -> pl.DataFrame:
    """One row per (configuration, metric): scored questions, mean and its 95% interval, from
    per-question tables that hold one column per metric (null where a question was not scored);
    a dialogue's turns are resampled together (mean_interval's groups)."""
    rows = []
    for label, table in per_question.items():
        for metric in metrics:
            if metric not in table.columns:
                continue
            values = table[metric].to_list()
            mean, scored = mean_of_scored(values)
            interval = mean_interval(values, seed, groups=question_groups(table))
            rows.append(
                {
                    "configuration": label,
                    "metric": metric,
                    "scored": scored,
                    "mean": mean,
                    "ci_low": interval[0] if interval else None,
                    "ci_high": interval[1] if interval else None,
                }
            )
    return pl.DataFrame(rows, schema=INTERVAL_SCHEMA)


def subset_interval_table(per_question: dict[str, pl.DataFrame], metrics: list[str], seed: int = 0) -> pl.DataFrame:
    """interval_table over the golden dialogues' first turns and over their follow-ups, each
    metric named `first.<metric>` / `followup.<metric>` (conversations.subset_means' means); no
    rows for a configuration without dialogues."""
    tables = []
    for subset, turns in ((FIRST, pl.col("turn") == 1), (FOLLOWUP, pl.col("turn") > 1)):
        chosen = {label: table.filter(turns) for label, table in per_question.items() if has_turns(table)}
        table = interval_table(chosen, metrics, seed).filter(pl.col("scored") > 0)
        tables.append(table.with_columns((pl.lit(f"{subset}.") + pl.col("metric")).alias("metric")))
    return pl.concat(tables)


# A mean's 95% interval bounds as run metrics: the bound first (`lo/recall@5`, `hi/recall@5`), so
# MLflow's columns, cut at about 16 characters, still tell the low bound from the high one
# (`recall_at_5_ci_low` and `_ci_high` both read `recall_at_5_ci_l`).
LOW_BOUND, HIGH_BOUND = "lo/", "hi/"


def interval_metrics(intervals: pl.DataFrame) -> dict[str, dict[str, float]]:
    """Each configuration's 95% interval bounds as run metrics beside its means, from an interval
    table: `lo/<metric key>` and `hi/<metric key>` (`lo/recall@5`, `hi/followup_faithfulness`);
    none for a metric nothing was scored on."""
    metrics: dict[str, dict[str, float]] = {}
    for row in intervals.filter(pl.col("ci_low").is_not_null()).iter_rows(named=True):
        values = metrics.setdefault(row["configuration"], {})
        key = metric_key(row["metric"])
        values[LOW_BOUND + key], values[HIGH_BOUND + key] = row["ci_low"], row["ci_high"]
    return metrics


def answer_scores(answers: pl.DataFrame) -> pl.DataFrame:
    """An answers table with refusal both ways as per-question values beside the judged metrics'
    columns, null where a question has no score: refusal_recall is 1 per unanswerable question
    declined (0 answered), false_refusal_rate 1 per answerable question declined (0 answered); a
    system under test's failed call (outcome `error`) is in neither."""
    refused = (pl.col("outcome") == "refused").cast(pl.Float64)
    failed = pl.col("outcome") == "error"
    return answers.with_columns(
        pl.when(failed).then(None).when(~pl.col("answerable")).then(refused).otherwise(None).alias("refusal_recall"),
        pl.when(failed).then(None).when(pl.col("answerable")).then(refused).otherwise(None).alias("false_refusal_rate"),
    )
