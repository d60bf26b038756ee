"""Means with their 95% intervals as Markdown text, a judged metric's judge-corrected estimate
beside its raw one, what the corrected numbers rest on, and a configuration's child run
description built from them. Pure: numbers in, text out; nothing here knows a report type, so
both evaluation/outcomes (descriptions) and evaluation/reports (reports) use it."""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel

from ragassay.evaluation.judge_correction import CalibrationSummary
from ragassay.metrics.averaging import IntervalRow
from ragassay.metrics.conversations import FollowupGap
from ragassay.metrics.corrected_rows import has_correction
from ragassay.metrics.levels import MIN_BOOTSTRAP_QUESTIONS


def signed(value: float, places: int = 3) -> str:
    """A difference with its sign, rounded to `places`: float noise and a negative zero (a tie)
    print as +0.000, never -0.000."""
    return f"{round(value, places) + 0.0:+.{places}f}"


def signed_interval(low: float, high: float, places: int = 3) -> str:
    """`[low, high]` of a difference, each end as signed() writes it."""
    return f"[{signed(low, places)}, {signed(high, places)}]"


def signed_estimate(value: float, low: float, high: float) -> str:
    """`+0.120 [-0.050, +0.300]`: a difference and its interval, as signed() writes them."""
    return f"{signed(value)} {signed_interval(low, high)}"


def gap_estimate(gap: FollowupGap) -> str:
    """A follow-up gap as its tables show it: `-0.067 [-0.158, +0.000]`, the gap alone with why
    where it has no interval (`-0.067 (no CI: 2 dialogues)`), `-` where it is not defined."""
    if gap.gap is None:
        return "-"
    if not gap.has_interval:
        return f"{signed(gap.gap)} (no CI: {counted(gap.dialogues, 'dialogue')})"
    return signed_estimate(gap.gap, gap.ci_low, gap.ci_high)


GAP_INTERVAL_NOTE = (
    f"its 95% CI resampling whole dialogues, none from fewer than {MIN_BOOTSTRAP_QUESTIONS} (a bootstrap over so "
    "few is narrower than the truth)"
)


def counted(count: int, noun: str) -> str:
    """`1 question`, `2 questions`: a count with its noun (plural by an s)."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def interval_lines(intervals: Sequence[IntervalRow], metrics: list[str] | tuple[str, ...]) -> list[str]:
    """A Markdown table of configurations × metrics, each cell `mean [ci_low, ci_high], N scored`,
    rounded to 3 places (the logged values stay exact)."""
    labels = list(dict.fromkeys(row.configuration for row in intervals))
    shown = [m for m in metrics if any(row.metric == m and row.mean is not None for row in intervals)]
    if not labels or not shown:
        return []
    cells = {(row.configuration, row.metric): row for row in intervals}

    def cell(label: str, metric: str) -> str:
        row = cells.get((label, metric))
        if row is None or row.mean is None:
            return "-"
        # Never "] (": MLflow's Markdown reads `[0.781, 1.000] (32)` as a link and shows neither bracket.
        text = f"{row.mean:.3f} [{row.ci_low:.3f}, {row.ci_high:.3f}], {row.scored} scored"
        return text + corrected_text(row, "; ")

    lines = ["| metric | " + " | ".join(labels) + " |", "|---|" + "---:|" * len(labels)]
    lines += [f"| {metric} | " + " | ".join(cell(label, metric) for label in labels) + " |" for metric in shown]
    return lines


# What a child run's description says its two numbers are.
RAW_AND_CORRECTED = (
    "Raw: the judge's own mean over the questions scored, with its 95% interval over questions. Corrected: what "
    "people would have said, the judge's error (its sensitivity and specificity on labelled statements) taken "
    "out; its interval covers the sampling of the labels as well."
)


def configuration_markdown(
    title: str,
    intervals: Sequence[IntervalRow],
    metrics: list[str] | tuple[str, ...],
    judge_error: str = "",
    clipped: str = "",
) -> str:
    """A configuration's child run description: what it is (title), its means with their 95%
    intervals (a judged metric's raw and judge-corrected side by side), and where a corrected value
    is shown, what corrected means, what it rests on (judge_error) and why one sits at 0 or 1
    (clipped). intervals: that configuration's interval rows."""
    lines = [f"**{title}**", "", *interval_lines(intervals, metrics)]
    if any(has_correction(row) for row in intervals):
        lines += ["", RAW_AND_CORRECTED]
        lines += ["", judge_error] if judge_error else []
        lines += ["", clipped] if clipped else []
    return "\n".join(lines) + "\n"


def corrected_text(row: BaseModel, lead: str = "", difference: bool = False) -> str:
    """A row's judge-corrected estimate and interval as text (`corrected 0.741 [0.520, 0.930]`), or
    why there is none; empty for a row without one (a metric that is not judged)."""
    if not has_correction(row):
        return ""
    number = signed if difference else "{:.3f}".format
    interval = f"[{number(row.corrected_low)}, {number(row.corrected_high)}]"
    if row.corrected is None:
        return f"{lead}corrected: none, {interval}"
    return f"{lead}corrected {number(row.corrected)} {interval}"


def judge_error_lines(calibration: CalibrationSummary | None) -> list[str]:
    """What the judged metrics' corrected numbers rest on, and what their intervals cover."""
    if calibration is None:
        return [
            "No labels of these documents for this judge: faithfulness, context recall and citation precision are "
            "the judge's own numbers, and their intervals leave its error out. A judge's error rates differ between "
            "collections (the warnings give the default judge's on two), so no other collection's labels stand in. "
            "Label some of its verdicts with `ragassay judge label --batch BATCH_ID`."
        ]
    return [
        f"Corrected with {calibration.source_words}: {calibration.description}. Judge `{calibration.judge_model}` "
        f"({calibration.prompt_version}, supported when P >= {calibration.support_threshold}): "
        f"sensitivity {_rate(calibration, 'sensitivity')}, specificity {_rate(calibration, 'specificity')}; "
        f"{calibration.summary}.",
        "",
        "A corrected interval covers the sampling of questions and of the labels, under the assumption that the "
        "judge errs at rates that depend only on whether a statement is supported; it does not cover judge errors "
        "that differ between configurations or documents. In a paired difference the judge's offset cancels: the "
        "corrected difference has the raw one's sign and p, rescaled to what people would have said.",
    ]


def _rate(calibration: CalibrationSummary, name: str) -> str:
    value, low, high = (getattr(calibration, f"{name}{part}") for part in ("", "_low", "_high"))
    shown = "undefined" if value is None else f"{value:.2f}"
    return f"{shown} [{low:.2f}, {high:.2f}]"
