"""The regression gate: a candidate batch against a baseline batch, metric by metric, with the
paired tests of metrics/significance.py. A metric fails its gate when it dropped by more than its
bound *and* the drop is significant (randomization p < alpha): a bound alone would fail on noise
in a small golden set, a test alone on drops too small to matter.

drop = mean(baseline) - mean(candidate) over the questions both batches scored, for metrics where
higher is better; candidate - baseline for false_refusal_rate, where lower is better.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import polars as pl

from ragassay.errors import ConfigError
from ragassay.metrics.averaging import answer_scores
from ragassay.metrics.names import LOWER_IS_BETTER
from ragassay.metrics.significance import ALPHA, KEYS, compare_paired

_BOUND = re.compile(r"^\s*(?:(?P<label>[A-Za-z0-9][A-Za-z0-9_.-]*):)?(?P<metric>[\w@]+)\s*=\s*(?P<drop>\d*\.?\d+)\s*$")


@dataclass(frozen=True)
class DropBound:
    """`--max-drop [LABEL:]METRIC=NUMBER`: the largest drop tolerated (for one configuration, or
    for every configuration both batches have)."""

    metric: str
    max_drop: float
    label: str | None = None


def parse_drop_bound(text: str) -> DropBound:
    match = _BOUND.match(text)
    if match is None:
        raise ConfigError(
            f"--max-drop {text!r} must look like 'METRIC=NUMBER' or 'LABEL:METRIC=NUMBER', e.g. recall@5=0.02"
        )
    return DropBound(match["metric"].lower().replace("_at_", "@"), float(match["drop"]), match["label"])


def per_question_scores(kind: str, table: pl.DataFrame) -> pl.DataFrame:
    """A configuration's per-question table as (query_collection, query_id, metric columns): a
    retrieval per_question table as it is; an answers table with refusal both ways as 0/1 columns
    (refusal_recall on unanswerable questions, false_refusal_rate on answerable ones)."""
    return answer_scores(table) if kind == "answers" else table


REGRESSION_SCHEMA = pl.Schema(
    {
        "configuration": pl.String,
        "metric": pl.String,
        "questions": pl.Int64,
        "baseline": pl.Float64,
        "candidate": pl.Float64,
        "drop": pl.Float64,
        "ci_low": pl.Float64,
        "ci_high": pl.Float64,
        "p_value": pl.Float64,
        "max_drop": pl.Float64,
        "failed": pl.Boolean,
    }
)


def compare_batches(
    baseline: dict[str, pl.DataFrame],
    candidate: dict[str, pl.DataFrame],
    bounds: list[DropBound],
    alpha: float = ALPHA,
    seed: int = 0,
) -> pl.DataFrame:
    """One row per (configuration, bounded metric): the paired drop over the questions both
    batches scored, its bootstrap 95% interval (of the drop), p-value, and whether it fails.
    ConfigError when a bound names a configuration or metric neither batch has, or no question is
    shared: the gate cannot judge, and must not pass silently."""
    shared = [label for label in baseline if label in candidate]
    if not shared:
        raise ConfigError(
            f"the batches share no configuration (baseline: {', '.join(baseline)}; candidate: {', '.join(candidate)})"
        )
    rows = []
    for bound in bounds:
        labels = (
            [bound.label] if bound.label else [label for label in shared if bound.metric in baseline[label].columns]
        )
        if not labels or any(label not in shared for label in labels):
            raise ConfigError(
                f"--max-drop {bound.metric}: no configuration of both batches has it (shared: {', '.join(shared)})"
            )
        for label in labels:
            a, b = baseline[label], candidate[label]
            if bound.metric not in a.columns or bound.metric not in b.columns:
                raise ConfigError(
                    f"--max-drop {label}:{bound.metric}: not a metric of configuration {label!r} in both batches"
                )
            joined = a.select(*KEYS, pl.col(bound.metric).alias("a")).join(
                b.select(*KEYS, pl.col(bound.metric).alias("b")), on=KEYS, how="inner"
            )
            # In question order: the bootstrap and randomization draw rows by position, so the
            # verdict must not depend on the order the tables were stored in.
            joined = joined.drop_nulls(["a", "b"]).sort(KEYS)
            if joined.height == 0:
                raise ConfigError(f"{label}:{bound.metric}: the batches scored no question in common")
            result = compare_paired(joined["a"].to_numpy(), joined["b"].to_numpy(), seed=seed)
            sign = 1.0 if bound.metric in LOWER_IS_BETTER else -1.0
            # + 0.0 turns a negative zero (no change) into 0.0, so it never prints as "-0.0000".
            drop = sign * result.mean_difference + 0.0
            low, high = sorted((sign * result.ci_low + 0.0, sign * result.ci_high + 0.0))
            rows.append(
                {
                    "configuration": label,
                    "metric": bound.metric,
                    "questions": result.questions,
                    "baseline": float(joined["a"].mean()),
                    "candidate": float(joined["b"].mean()),
                    "drop": drop,
                    "ci_low": low,
                    "ci_high": high,
                    "p_value": result.p_value,
                    "max_drop": bound.max_drop,
                    "failed": bool(drop > bound.max_drop and result.p_value < alpha),
                }
            )
    return pl.DataFrame(rows, schema=REGRESSION_SCHEMA)
