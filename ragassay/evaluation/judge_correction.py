"""The judge's error in an answer batch's numbers: each judged metric's judge-corrected estimate
beside the raw one (in the intervals, the paired differences and the run metrics), the warnings of
what the corrections rest on, and the labels behind them (metrics/judge_error.py does the
arithmetic; this shapes it into the batch's tables and rows)."""

from __future__ import annotations

import polars as pl

from ragassay.judge.calibration.measured_rates import no_labels_reason
from ragassay.judge.learned_verdict import verdict_version
from ragassay.judge.support_rules import support_threshold_for
from ragassay.metrics.conversations import question_groups
from ragassay.metrics.corrected_rows import (
    ANSWER_COMPARISON_SCHEMA,
    ANSWER_INTERVAL_SCHEMA,
    CORRECTED_COLUMNS,
    AnswerIntervalRow,
    answer_interval_rows,
)
from ragassay.metrics.judge_calibration import JudgeCalibration
from ragassay.metrics.judge_error import ErrorRates, corrected_difference, corrected_mean
from ragassay.metrics.names import JUDGED_METRICS
from ragassay.metrics.significance import paired_scores
from ragassay.run_warnings import RunWarning
from ragassay.store.judge_schemas import JUDGE_CALIBRATION


def corrected_intervals(
    intervals: pl.DataFrame, per_question: dict[str, pl.DataFrame], calibration: JudgeCalibration | None, seed: int = 0
) -> pl.DataFrame:
    """The answer intervals with each judged metric's judge-corrected estimate and its 95%
    interval over questions and labels (metrics/judge_error.corrected_mean)."""
    rows = []
    for label, table in per_question.items():
        for metric in JUDGED_METRICS if calibration is not None else ():
            corrected = corrected_mean(table[metric].to_list(), calibration.strata, seed, groups=question_groups(table))
            if corrected is not None:
                rows.append(
                    {
                        "configuration": label,
                        "metric": metric,
                        "corrected": corrected.estimate,
                        "corrected_low": corrected.low,
                        "corrected_high": corrected.high,
                    }
                )
    found = pl.DataFrame(rows, schema={"configuration": pl.String, "metric": pl.String, **CORRECTED_COLUMNS})
    joined = intervals.join(found, on=["configuration", "metric"], how="left", maintain_order="left")
    return joined.select(list(ANSWER_INTERVAL_SCHEMA))


def corrected_comparisons(
    comparisons: pl.DataFrame,
    per_question: dict[str, pl.DataFrame],
    calibration: JudgeCalibration | None,
    seed: int = 0,
) -> pl.DataFrame:
    """The paired differences with each judged metric's judge-corrected difference and interval
    (metrics/judge_error.corrected_difference): the judge's offset cancels in a difference, its
    randomization p is the raw one, and only the scale changes."""
    rows = []
    scores = paired_scores(per_question, JUDGED_METRICS, with_groups=True) if calibration else ()
    for label_a, label_b, metric, a, b, groups in scores:
        corrected = corrected_difference(a, b, calibration.strata, seed, groups=groups)
        if corrected is not None:
            rows.append(
                {
                    "configuration_a": label_a,
                    "configuration_b": label_b,
                    "metric": metric,
                    "corrected": corrected.estimate,
                    "corrected_low": corrected.low,
                    "corrected_high": corrected.high,
                }
            )
    keys = ["configuration_a", "configuration_b", "metric"]
    found = pl.DataFrame(rows, schema={**dict.fromkeys(keys, pl.String), **CORRECTED_COLUMNS})
    joined = comparisons.join(found, on=keys, how="left", maintain_order="left")
    return joined.select(list(ANSWER_COMPARISON_SCHEMA))


def corrected_metrics(intervals: pl.DataFrame) -> dict[str, dict[str, float]]:
    """Each judged metric's judge-corrected estimate with its interval as run metrics beside its
    mean and raw interval (METRIC_corrected, _corrected_low, _corrected_high; no estimate, only the
    interval, where the labels do not show the judge separating the classes)."""
    metrics: dict[str, dict[str, float]] = {}
    for row in intervals.filter(pl.col("corrected_low").is_not_null()).iter_rows(named=True):
        values = metrics.setdefault(row["configuration"], {})
        for part in CORRECTED_COLUMNS:
            if row[part] is not None:
                values[f"{row['metric']}_{part}"] = row[part]
    return metrics


def calibration_warnings(calibration: JudgeCalibration | None, judge_model: str) -> list[RunWarning]:
    """What the corrected numbers rest on, as warnings: no labels of these documents for this judge
    (and why no other collection's can stand in), too few labels, a judge the labels do not show
    separating the classes."""
    metric = ", ".join(JUDGED_METRICS)
    if calibration is None:
        return [
            RunWarning(
                metric=metric,
                reason=no_labels_reason(judge_model, verdict_version(judge_model), support_threshold_for(judge_model)),
            )
        ]
    return [RunWarning(metric=metric, reason=note) for note in calibration.warnings()]


def clipped_corrections(
    intervals: list[AnswerIntervalRow], calibration: JudgeCalibration | None
) -> list[tuple[AnswerIntervalRow, str]]:
    """The interval rows (with a corrected estimate) whose judged mean the calibration's error
    rates cannot produce, each with its side: under them a judged mean lies between 1 - Sp (no
    statement supported) and Se (every one), and a mean outside is clipped to 0 or 1 when corrected."""
    rates = calibration.rates if calibration is not None else None
    if rates is None or not rates.separable:
        return []
    return [
        (row, "above Se" if row.mean > rates.sensitivity else "below 1 - Sp")
        for row in intervals
        if row.corrected is not None and (row.mean > rates.sensitivity or row.mean < 1 - rates.specificity)
    ]


def clip_reason(calibration: JudgeCalibration) -> str:
    """Why a corrected estimate sits at 0 or 1 (clipped_corrections), in words."""
    rates = calibration.rates
    return (
        f"judged means outside what the judge's error rates allow (between 1 - Sp = {1 - rates.specificity:.2f} "
        f"and Se = {rates.sensitivity:.2f}), so their corrected estimates are clipped to 0 or 1"
    )


def correction_fit_warnings(intervals: pl.DataFrame, calibration: JudgeCalibration | None) -> list[RunWarning]:
    """Judged means the calibration's error rates cannot produce (clipped_corrections), as one
    warning: their corrected interval narrows at that bound for the wrong reason: the true rate may
    be near the bound, or the labels' rates may not hold here."""
    clipped = clipped_corrections(answer_interval_rows(intervals), calibration)
    if not clipped:
        return []
    outside = [f"{row.configuration} {row.metric} {row.mean:.3f} ({side})" for row, side in clipped]
    metrics = {row.metric for row, _ in clipped}
    return [
        RunWarning(
            metric=", ".join(metric for metric in JUDGED_METRICS if metric in metrics),
            reason=f"{clip_reason(calibration)}: {'; '.join(outside)}. Either the true rate is near that bound or "
            "these error rates do not hold for these answers: label some of them with `ragassay judge label`",
        )
    ]


class CalibrationSummary(ErrorRates):
    """The labels behind a batch's corrected numbers, for reports and --json: where they come from
    (source: `labels`, or `prior` in a batch logged before 2026-12-05, and in words), the judge
    they measured, the aligned judges its verdicts were read by, and the judge's error rates with
    their intervals (ErrorRates)."""

    source: str
    description: str
    judge_model: str
    prompt_version: str
    support_threshold: float
    aligned_judges: list[str]

    @property
    def source_words(self) -> str:
        """Where the labels come from, in words; an old batch's prior says what became of it."""
        if self.source == "prior":
            return "a general prior from other documents (before 2026-12-05; no longer used: it did not carry over)"
        return "this collection's labels"


def calibration_summary(calibration: JudgeCalibration | None) -> CalibrationSummary | None:
    """The CalibrationSummary of a calibration (None without one)."""
    if calibration is None:
        return None
    return CalibrationSummary(
        **calibration.rates.model_dump(exclude={"separable", "summary"}),
        source=calibration.source,
        description=calibration.description,
        judge_model=calibration.judge_model,
        prompt_version=calibration.prompt_version,
        support_threshold=calibration.support_threshold,
        aligned_judges=list(calibration.aligned_judges),
    )


def calibration_record(calibration: JudgeCalibration | None) -> tuple[dict[str, float], pl.DataFrame]:
    """The parent run's view of the labels behind the corrected numbers: the judge's sensitivity,
    specificity and balanced accuracy with their intervals as metrics (judge_…), and the strata
    as the `judge_calibration` table (`ragassay gate` reads it back)."""
    if calibration is None:
        return {}, JUDGE_CALIBRATION.empty()
    rates = calibration.rates
    metrics = {
        f"judge_{key}": value
        for key, value in rates.model_dump(exclude={"separable", "summary"}).items()
        if value is not None
    }
    table = pl.DataFrame(
        [
            {
                "source": calibration.source,
                "stratum": stratum.name,
                "population": stratum.population,
                "supported_judged_supported": stratum.supported_judged_supported,
                "supported_judged_unsupported": stratum.supported_judged_unsupported,
                "unsupported_judged_supported": stratum.unsupported_judged_supported,
                "unsupported_judged_unsupported": stratum.unsupported_judged_unsupported,
            }
            for stratum in calibration.strata
        ],
        schema=JUDGE_CALIBRATION.schema,
    )
    return {**metrics, "judge_separable": float(rates.separable)}, table
