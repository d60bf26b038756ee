"""The regression gate: a candidate batch against a baseline batch, metric by metric, with the
paired tests of metrics/significance.py. A metric fails its gate when it dropped by more than its
bound *and* the drop is significant (randomization p < alpha): a bound alone would fail on noise
in a small golden set, a test alone on drops too small to matter.

drop = mean(baseline) - mean(candidate) over the questions both batches scored, for metrics where
higher is better; candidate - baseline for false_refusal_rate, where lower is better.

Coverage is a metric like the others (1 for each question a configuration answered, 0 for each
whose call failed, over the questions both batches asked), so `--max-drop prod:coverage=0.02`
bounds it; and any drop of a configuration's coverage is a warning even when no bound names it,
since every other metric is compared over the questions both batches answered only.

A metric prefixed `first.` or `followup.` (`followup.recall@5=0.05`) bounds its drop over the golden
dialogues' first turns or their follow-ups only (a dialogue's turns resampled together, as in
every paired test): whether the follow-ups got worse.

A judged metric's `.corrected` (`faithfulness.corrected=0.05`) bounds the judge-corrected drop
(metrics/judge_error.corrected_difference: the raw drop over Youden's index of the judge on the
candidate's labels, with an interval over questions and labels); its p is the raw drop's, since
the judge's offset cancels in a difference and the scale does not change its sign.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import polars as pl
from pydantic import BaseModel, ConfigDict

from ragassay.errors import ConfigError
from ragassay.metrics.averaging import answer_scores
from ragassay.metrics.conversations import question_groups
from ragassay.metrics.judge_error import LabelStratum, corrected_difference, corrected_mean
from ragassay.metrics.names import (
    FIRST,
    JUDGED_METRICS,
    LOWER_IS_BETTER,
    REPORTED_ANSWER_METRICS,
    TURN_SUBSETS,
    parse_metric_or_none,
)
from ragassay.metrics.significance import ALPHA, KEYS, compare_paired

_BOUND = re.compile(r"^\s*(?:(?P<label>[A-Za-z0-9][A-Za-z0-9_.-]*):)?(?P<metric>[\w@.]+)\s*=\s*(?P<drop>\d*\.?\d+)\s*$")
_NEGATIVE_BOUND = re.compile(r"^[^=]+=\s*-\s*\d*\.?\d+\s*$")
CORRECTED = ".corrected"


@dataclass(frozen=True)
class DropBound:
    """`--max-drop [LABEL:]METRIC=NUMBER`: the largest drop tolerated (for one configuration, or
    for every configuration both batches have)."""

    metric: str
    max_drop: float
    label: str | None = None
    subset: str | None = None  # first or followup: the drop over those turns of the dialogues only

    @property
    def bounded(self) -> str:
        """The bound's metric as written (`followup.recall@5`)."""
        return f"{self.subset}.{self.metric}" if self.subset else self.metric


def parse_drop_bound(text: str) -> DropBound:
    match = _BOUND.match(text)
    if match is None and _NEGATIVE_BOUND.match(text):
        raise ConfigError(f"--max-drop {text!r}: the largest drop tolerated must be >= 0 (0 tolerates no drop)")
    if match is None:
        raise ConfigError(
            f"--max-drop {text!r} must look like 'METRIC=NUMBER' or 'LABEL:METRIC=NUMBER', e.g. recall@5=0.02"
        )
    metric = match["metric"].lower().replace("_at_", "@")
    subset, dot, rest = metric.partition(".")
    subset = subset if dot and subset in TURN_SUBSETS else None
    metric = rest if subset else metric
    if "." in metric and (not metric.endswith(CORRECTED) or metric.removesuffix(CORRECTED) not in JUDGED_METRICS):
        raise ConfigError(
            f"--max-drop {text!r}: only a judged metric has a judge-corrected drop "
            f"({', '.join(m + CORRECTED for m in JUDGED_METRICS)})"
        )
    if subset and (metric == COVERAGE or metric.endswith(CORRECTED)):
        raise ConfigError(f"--max-drop {text!r}: {subset} turns bound a plain metric's drop, not {metric}")
    return DropBound(metric, float(match["drop"]), match["label"], subset)


COVERAGE = "coverage"


def is_answer_bound(bound: DropBound) -> bool:
    return bound.metric.removesuffix(CORRECTED) in REPORTED_ANSWER_METRICS


def bounds_of_kind(bounds: list[DropBound], kind: str) -> list[DropBound]:
    """The bounds a kind of results answers: its own metrics', and coverage (both kinds have it)."""
    return [b for b in bounds if b.metric == COVERAGE or is_answer_bound(b) == (kind == "answers")]


def per_question_scores(kind: str, table: pl.DataFrame) -> pl.DataFrame:
    """A configuration's per-question table as (query_collection, query_id, metric columns): a
    retrieval per_question table as it is; an answers table with refusal both ways as 0/1 columns
    (refusal_recall on unanswerable questions, false_refusal_rate on answerable ones); both with
    `coverage`, 1 where the question was answered and 0 where a system's call failed (a retrieval
    question whose every metric is null)."""
    if kind == "answers":
        return answer_scores(table).with_columns((pl.col("outcome") != "error").cast(pl.Float64).alias(COVERAGE))
    metrics = [column for column in table.columns if parse_metric_or_none(column) is not None]
    answered = pl.any_horizontal(pl.col(metrics).is_not_null()) if metrics else pl.lit(True)
    return table.with_columns(answered.cast(pl.Float64).alias(COVERAGE))


def coverage_drops(baseline: dict[str, pl.DataFrame], candidate: dict[str, pl.DataFrame]) -> list[str]:
    """A line for each configuration of both batches that answered fewer of the questions both
    asked in the candidate than in the baseline (per_question_scores tables)."""
    lines = []
    for label in (label for label in baseline if label in candidate):
        joined = (
            baseline[label]
            .select(*KEYS, pl.col(COVERAGE).alias("a"))
            .join(candidate[label].select(*KEYS, pl.col(COVERAGE).alias("b")), on=KEYS, how="inner")
        )
        before, after = int(joined["a"].sum()), int(joined["b"].sum())
        if after < before:
            lines.append(
                f"{label} answered {after} of {joined.height} questions in the candidate, {before} in the baseline: "
                f"its other metrics are compared over the {int((joined['a'] * joined['b']).sum())} both answered; "
                f"bound it with --max-drop {label}:coverage=0"
            )
    return lines


REGRESSION_SCHEMA = pl.Schema(
    {
        "configuration": pl.String,
        "metric": pl.String,
        "questions": pl.Int64,
        "asked": pl.Int64,
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


class DropRow(BaseModel):
    """One row of compare_batches (REGRESSION_SCHEMA, the same names): a configuration's drop in a
    bounded metric from baseline to candidate over the questions both scored (of those asked in
    both), its 95% interval and p, the bound, and whether it failed."""

    model_config = ConfigDict(frozen=True)

    configuration: str
    metric: str
    questions: int
    asked: int
    baseline: float
    candidate: float
    drop: float
    ci_low: float
    ci_high: float
    p_value: float
    max_drop: float
    failed: bool


def _metrics_of_both(
    baseline: dict[str, pl.DataFrame], candidate: dict[str, pl.DataFrame], shared: list[str]
) -> list[str]:
    """The metrics a bound can name: the score columns some shared configuration has in both."""
    return sorted(
        {
            column
            for label in shared
            for column in baseline[label].columns
            if column in candidate[label].columns and column not in KEYS and baseline[label][column].dtype.is_numeric()
        }
    )


def compare_batches(
    baseline: dict[str, pl.DataFrame],
    candidate: dict[str, pl.DataFrame],
    bounds: list[DropBound],
    alpha: float = ALPHA,
    seed: int = 0,
    calibration: list[LabelStratum] | None = None,
) -> pl.DataFrame:
    """One row per (configuration, bounded metric): the paired drop over the questions both
    batches scored, its bootstrap 95% interval (of the drop), p-value, and whether it fails.
    ConfigError when a bound names a configuration or metric neither batch has, or no question is
    shared, or a corrected bound has no labels that show the judge separating the classes: the
    gate cannot judge, and must not pass silently. calibration: the candidate's label strata, for
    `.corrected` bounds."""
    shared = [label for label in baseline if label in candidate]
    if not shared:
        raise ConfigError(
            f"the batches share no configuration (baseline: {', '.join(baseline)}; candidate: {', '.join(candidate)})"
        )
    rows = []
    for bound in bounds:
        column = bound.metric.removesuffix(CORRECTED)
        corrected = bound.metric.endswith(CORRECTED)
        if corrected and not calibration:
            raise ConfigError(
                f"--max-drop {bound.metric}: the candidate batch holds no labels of its judge to correct with "
                "(a batch logged before judge-corrected estimates, or no labels of its documents for its judge)"
            )
        labels = [bound.label] if bound.label else [label for label in shared if column in baseline[label].columns]
        if not labels or any(label not in shared for label in labels):
            raise ConfigError(
                f"--max-drop {bound.metric}: no configuration of both batches has it (shared: {', '.join(shared)}; "
                f"their metrics: {', '.join(_metrics_of_both(baseline, candidate, shared)) or 'none'})"
            )
        rows += [
            _configuration_drop(label, bound, baseline[label], candidate[label], alpha, seed, calibration)
            for label in labels
        ]
    return pl.DataFrame([row.model_dump() for row in rows], schema=REGRESSION_SCHEMA)


def _configuration_drop(
    label: str,
    bound: DropBound,
    a: pl.DataFrame,
    b: pl.DataFrame,
    alpha: float,
    seed: int,
    calibration: list[LabelStratum] | None,
) -> DropRow:
    """One configuration's row of compare_batches for one bound: baseline a against candidate b
    over the questions both scored, in question order, the drop judge-corrected for a
    `.corrected` bound."""
    column = bound.metric.removesuffix(CORRECTED)
    corrected = bound.metric.endswith(CORRECTED)
    if column not in a.columns or column not in b.columns:
        raise ConfigError(f"--max-drop {label}:{bound.metric}: not a metric of configuration {label!r} in both batches")
    if bound.subset:
        if "turn" not in b.columns or b["turn"].is_null().all():
            raise ConfigError(f"--max-drop {label}:{bound.bounded}: the candidate batch asked no golden dialogue")
        b = b.filter(pl.col("turn") == 1 if bound.subset == FIRST else pl.col("turn") > 1)
    dialogue = [pl.col("dialogue_id")] if "dialogue_id" in b.columns else []
    joined = a.select(*KEYS, pl.col(column).alias("a")).join(
        b.select(*KEYS, *dialogue, pl.col(column).alias("b")), on=KEYS, how="inner"
    )
    # In question order: the bootstrap and randomization draw rows by position, so the verdict
    # must not depend on the order the tables were stored in.
    asked = joined.height
    joined = joined.drop_nulls(["a", "b"]).sort(KEYS)
    if joined.height == 0:
        raise ConfigError(f"{label}:{bound.metric}: the batches scored no question in common")
    # A dialogue's turns are resampled together (metrics/conversations.py).
    result = compare_paired(joined["a"].to_numpy(), joined["b"].to_numpy(), seed=seed, groups=question_groups(joined))
    means = (float(joined["a"].mean()), float(joined["b"].mean()))
    difference, ci_low, ci_high = result.mean_difference, result.ci_low, result.ci_high
    if corrected:
        difference, ci_low, ci_high, means = _corrected_drop(joined, calibration, seed, f"{label}:{bound.metric}")
    sign = 1.0 if bound.metric in LOWER_IS_BETTER else -1.0
    # + 0.0 turns a negative zero (no change) into 0.0, so it never prints as "-0.0000".
    drop = sign * difference + 0.0
    low, high = sorted((sign * ci_low + 0.0, sign * ci_high + 0.0))
    return DropRow(
        configuration=label,
        metric=bound.bounded,
        questions=result.questions,
        asked=asked,
        baseline=means[0],
        candidate=means[1],
        drop=drop,
        ci_low=low,
        ci_high=high,
        p_value=result.p_value,
        max_drop=bound.max_drop,
        failed=bool(drop > bound.max_drop and result.p_value < alpha),
    )


def _corrected_drop(
    joined: pl.DataFrame, calibration: list[LabelStratum] | None, seed: int, bounded: str
) -> tuple[float, float, float, tuple]:
    """The judge-corrected difference b - a with its interval, and both sides' corrected means."""
    groups = question_groups(joined)
    scaled = corrected_difference(joined["a"].to_numpy(), joined["b"].to_numpy(), calibration, seed, groups=groups)
    if scaled.estimate is None:
        raise ConfigError(
            f"--max-drop {bounded}: the candidate's labels do not show its judge separating "
            "supported from unsupported, so no judge-corrected drop can be bounded"
        )
    means = tuple(corrected_mean(joined[side].to_list(), calibration, seed, groups=groups).estimate for side in "ab")
    return scaled.estimate, scaled.low, scaled.high, means


def calibration_strata(table: pl.DataFrame) -> list[LabelStratum]:
    """The label strata a batch logged (its `judge_calibration` table) as the correction reads them."""
    # The table's cell columns are named as LabelStratum's fields (evaluation/judge_correction.calibration_record).
    cells = [name for name in LabelStratum.__dataclass_fields__ if name not in ("name", "population")]
    return [
        LabelStratum(row["stratum"], row["population"], **{cell: row[cell] for cell in cells})
        for row in table.iter_rows(named=True)
    ]
