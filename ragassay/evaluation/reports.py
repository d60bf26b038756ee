"""An evaluation's outcome as Markdown, for the Prefect UI's artifact view (and anywhere else
Markdown renders): the significance of every paired difference, warnings, discards, and the link
to the MLflow run. Pure: numbers in, text out."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ragassay.evaluation.interval_text import (
    GAP_INTERVAL_NOTE,
    corrected_text,
    counted,
    gap_estimate,
    interval_lines,
    judge_error_lines,
    signed,
    signed_estimate,
    signed_interval,
)
from ragassay.gates.assertions import AssertionResult, measured
from ragassay.metrics.averaging import IntervalRow
from ragassay.metrics.conversations import FollowupGapRow
from ragassay.metrics.corrected_rows import has_correction
from ragassay.metrics.declared import LEAST_FAITHFUL
from ragassay.metrics.names import CONVERSATION_SUCCESS, LOWER_IS_BETTER, QUESTIONS_SCORED, REPORTED_ANSWER_METRICS
from ragassay.metrics.significance import (
    ALPHA,
    ComparisonRow,
    DirectedComparison,
    comparison_of,
    interval_source,
    ranked_by_mean,
)
from ragassay.run_warnings import RunWarning

if TYPE_CHECKING:  # (outcomes imports matplotlib; the CLI's tables need only this module's text)
    from ragassay.evaluation.outcomes import AnswerEvalReport, RetrievalEvalReport
    from ragassay.tracking.records import LoggedBatch


# The mark on a mean over fewer questions than another configuration's of the same table.
FEWER_QUESTIONS = "†"
FEWER_QUESTIONS_NOTE = (
    f"{FEWER_QUESTIONS} over fewer questions than another configuration (n; a system's failed calls are in no mean): "
    "the paired differences compare the questions both scored, and --common-questions scores every configuration "
    "on the questions all of them answered"
)


def means_rows(means: dict[str, dict[str, float | None]], columns: list[str]) -> tuple[list[list[str]], bool]:
    """Each configuration's means as cells [label, n, value...]: `not scored` where no question
    was, `-` where the metric is not one of the configuration's, a mark on a mean over fewer
    questions than another configuration's; and whether any is marked."""
    counts = [values.get(QUESTIONS_SCORED) for values in means.values()]
    most = max((n for n in counts if n is not None), default=None)
    rows, marked = [], False
    for label, values in means.items():
        n = values.get(QUESTIONS_SCORED)
        fewer = n is not None and most is not None and n < most
        cells = []
        for column in columns:
            if column not in values:
                cells.append("-")
            elif values[column] is None:
                cells.append("not scored")
            else:
                cells.append(f"{values[column]:.4f}" + (FEWER_QUESTIONS if fewer else ""))
                marked = marked or fewer
        rows.append([label, "-" if n is None else f"{n:.0f}", *cells])
    return rows, marked


def batch_link(report: LoggedBatch) -> str:
    """Where a batch is in MLflow: a link on a tracking server, the command that opens a local
    store; or, when its server did not answer, the workspace folder that keeps it."""
    if report.kept_in:
        return (
            f"Batch `{report.batch_id}` is **not in MLflow** (its tracking server did not answer): "
            f"kept in `{report.kept_in}`; run the same command again once the server is back to log it."
        )
    if report.mlflow_url:
        return f"MLflow batch [`{report.batch_id}`]({report.mlflow_url})"
    return f"MLflow batch `{report.batch_id}` (open it with `{report.ui_command}`)"


def runs_view_lines(runs_view_url: str | None, mlflow_url: str | None) -> list[str]:
    """Where MLflow's runs list shows this batch with its headline metrics as columns (its default
    columns hold none): a link on a tracking server, the address `mlflow ui` serves it at for a
    local store."""
    if not runs_view_url:
        return []
    where = "" if mlflow_url else " (once `mlflow ui` serves the store)"
    return ["", f"Its configurations side by side: [the batch's runs list]({runs_view_url}){where}."]


def _comparison_lines(comparisons: Sequence[ComparisonRow], metrics: list[str]) -> list[str]:
    shown = [c for c in comparisons if c.metric in metrics]
    if not shown:
        return []
    corrected = any(has_correction(c) for c in shown)
    lines = [
        "| a | b | metric | b - a | 95% CI | p | |" + (" judge-corrected b - a |" if corrected else ""),
        "|---|---|---|---:|---|---:|---|" + ("---|" if corrected else ""),
    ]
    for c in shown:
        if not c.questions:
            # One side scored nothing (or nothing the other scored): there is no difference to show.
            lines.append(
                f"| {c.configuration_a} | {c.configuration_b} | {c.metric} | - | - | - | "
                "no comparison: no question scored by both |" + (" - |" if corrected else "")
            )
            continue
        verdict = "significant" if c.p_value < ALPHA else "not significant"
        if c.interval == "sign-flip":
            verdict += " †"
        lines.append(
            f"| {c.configuration_a} | {c.configuration_b} | {c.metric} | {signed(c.mean_difference, 4)} "
            f"| {signed_interval(c.ci_low, c.ci_high, 4)} | {c.p_value:.4f} | {verdict} |"
            + (f" {corrected_text(c, difference=True).removeprefix('corrected ') or '-'} |" if corrected else "")
        )
    if any(c.interval == "sign-flip" for c in shown if c.questions):
        lines += ["", f"† 95% CI: {interval_source([c for c in shown if c.questions])}."]
    return lines


def ahead_lines(
    intervals: Sequence[IntervalRow], comparisons: Sequence[ComparisonRow], metrics: list[str] | tuple[str, ...]
) -> list[str]:
    """One line per metric saying which configuration is ahead and whether that is significant:
    the best mean (the lowest for a metric where lower is better) against the runner-up's, with their paired
    difference over the questions both scored (best - runner-up, bootstrap 95% CI, randomization
    p; significant when p < ALPHA). Where the two scored different questions, their means are not
    comparable, so the line says who is ahead on the questions both scored (the paired difference's
    sign), and that the means are over different questions."""
    lines = []
    for metric in metrics:
        ranked = ranked_by_mean(intervals, metric)
        if not ranked:
            continue
        best = ranked[0]
        if len(ranked) == 1:
            lines.append(f"- {metric}: {best.configuration} only ({best.mean:.3f})")
            continue
        second = ranked[1]
        row = comparison_of(comparisons, metric, best.configuration, second.configuration)
        if row is not None and row.questions and {best.scored, second.scored} != {row.questions}:
            lines.append(_ahead_on_common_questions(metric, best, second, row))
            continue
        if best.mean == second.mean:
            tied = [r.configuration for r in ranked if r.mean == best.mean]
            lines.append(f"- {metric}: {', '.join(tied[:-1])} and {tied[-1]} tie at {best.mean:.3f}")
            continue
        lead = f"- {metric}: **{best.configuration}** is ahead ({best.mean:.3f} against {second.configuration}'s {second.mean:.3f}"
        if row is None or not row.questions:
            lines.append(lead + "; no question scored by both, so no paired test)")
            continue
        lines.append(
            lead + f"; paired difference {_difference(row)} over {counted(row.questions, 'question')}, {_p(row)})"
        )
    return lines


def _difference(row: DirectedComparison) -> str:
    return signed_estimate(row.difference, row.ci_low, row.ci_high)


def _p(row: DirectedComparison) -> str:
    return f"p = {row.p_value:.3f}: {'significant' if row.p_value < ALPHA else 'not significant'}"


def _ahead_on_common_questions(metric: str, best: IntervalRow, second: IntervalRow, row: DirectedComparison) -> str:
    """The ahead line of two configurations that scored different questions: who leads on the
    questions both scored (by the paired difference, best - second in `row`), the means beside."""
    means = (
        f"their means, {best.configuration}'s {best.mean:.3f} over {counted(best.scored, 'question')} and "
        f"{second.configuration}'s {second.mean:.3f} over {second.scored}, are over different questions"
    )
    both = "on the question both scored" if row.questions == 1 else f"on the {row.questions} questions both scored"
    if row.difference == 0:
        return (
            f"- {metric}: {best.configuration} and {second.configuration} tie {both} (paired difference "
            f"{_difference(row)}, {_p(row)}); {means}"
        )
    best_leads = (row.difference < 0) if metric in LOWER_IS_BETTER else (row.difference > 0)
    leader, other = (best, second) if best_leads else (second, best)
    if not best_leads:  # the difference said as leader - other
        row = dataclasses.replace(row, difference=-row.difference, ci_low=-row.ci_high, ci_high=-row.ci_low)
    return (
        f"- {metric}: {both}, **{leader.configuration}** is ahead of {other.configuration} (paired "
        f"difference {_difference(row)}, {_p(row)}); {means}"
    )


def assertion_lines(assertions: list[AssertionResult]) -> list[str]:
    """Each --assert bound, passed or failed, with the value it was checked against."""
    if not assertions:
        return []
    return ["", "## Assertions", ""] + [
        f"- `{a.assertion}`: {'passed' if a.passed else '**FAILED**'} ({measured(a)})" for a in assertions
    ]


def retrieval_markdown(report: RetrievalEvalReport, headline: list[str]) -> str:
    """Means of the headline metrics, paired differences with their significance, gates, warnings."""
    lines = [
        f"# Retrieval evaluation, {report.questions} golden questions",
        "",
        batch_link(report),
        *runs_view_lines(report.runs_view_url, report.mlflow_url),
        "",
        *retrieval_sections(report, headline),
    ]
    lines += assertion_lines(report.assertions)
    lines += warning_lines(report.warnings)
    return "\n".join(lines) + "\n"


RETRIEVAL_CELLS = (
    "Each cell: mean [95% CI], the questions scored (a system's failed calls are in no mean: where the counts "
    "differ, the paired differences compare the questions both scored)."
)


def retrieval_sections(report: RetrievalEvalReport, headline: list[str]) -> list[str]:
    """What a retrieval report says of its numbers (means, who is ahead, paired differences), the
    same in its own report and in a pipeline's."""
    comparisons = report.comparisons
    lines = [*interval_lines(report.intervals, headline), "", RETRIEVAL_CELLS]
    ahead = ahead_lines(report.intervals, comparisons, headline)
    if ahead:
        lines += ["", "## Who is ahead", "", *ahead]
    comparison_lines = _comparison_lines(comparisons, headline)
    if comparison_lines:
        lines += [
            "",
            f"## Paired differences (bootstrap 95% CI, randomization p; significant when p < {ALPHA})",
            "",
            *comparison_lines,
        ]
    followups = followup_lines(report.followup_gaps, headline, report.dialogues)
    return lines + (["", *followups] if followups else [])


FOLLOWUP_CELLS = (
    "First turns and follow-ups of the golden dialogues: each side's mean and the turns it is over; the gap is "
    f"follow-ups minus first turns, {GAP_INTERVAL_NOTE} (the turns of one dialogue are not independent questions)."
)


def followup_lines(gaps: Sequence[FollowupGapRow], metrics: Sequence[str], dialogues: int) -> list[str]:
    """The follow-up gap of each shown metric and configuration as a Markdown table (nothing
    without dialogues)."""
    shown = [row for metric in metrics for row in gaps if row.metric == metric and row.first_scored]
    if not shown:
        return []
    lines = [
        f"## First turns and follow-ups ({counted(dialogues, 'dialogue')})",
        "",
        "| metric | configuration | first turns | follow-ups | gap [95% CI] |",
        "|---|---|---|---|---|",
    ]
    for row in shown:
        later = (
            "not scored"
            if row.followup_mean is None
            else f"{row.followup_mean:.3f}, {counted(row.followup_scored, 'turn')}"
        )
        gap = gap_estimate(row)
        lines.append(
            f"| {row.metric} | {row.configuration} | {row.first_mean:.3f}, {counted(row.first_scored, 'turn')} | {later} "
            f"| {gap} |"
        )
    return [*lines, "", FOLLOWUP_CELLS]


# What Markdown reads as markup in running text: links and images ([ ] ( ) !), HTML (< >),
# emphasis and code (* _ ` ~), table cells (|), and the backslash that escapes them all.
_MARKDOWN_MARKUP = re.compile(r"([\\`*_\[\]()<>|!~])")


def markdown_text(text: str) -> str:
    """Text from outside (a system's document ids, answers and error messages, file names) as
    Markdown shows it word for word: every markup character escaped, line breaks as spaces, so
    `[click](javascript:…)` is no link, `<img onerror=…>` no HTML and a `|` no new table cell, in
    report.md, MLflow's descriptions and Prefect's artifacts alike."""
    return _MARKDOWN_MARKUP.sub(r"\\\1", " ".join(text.splitlines()))


def warning_lines(warnings: list[RunWarning]) -> list[str]:
    """A report's warnings, counted ("none" when there are none); their text comes from outside
    (systems' ids and errors, files), so it is shown as text (markdown_text)."""
    return ["", f"## Warnings ({len(warnings)})", ""] + ([f"- {markdown_text(w.text())}" for w in warnings] or ["none"])


def answers_markdown(report: AnswerEvalReport) -> str:
    """Answer metrics with their counts, refusal both ways, pairwise tallies, gates, warnings."""
    lines = [
        f"# Answer evaluation, {report.questions} answerable + {report.unanswerable} unanswerable questions",
        "",
        f"Judge: `{report.judge_model}`. " + batch_link(report),
        *runs_view_lines(report.runs_view_url, report.mlflow_url),
        *unfaithful_lines(report.unfaithful_traces_urls),
        "",
        *answer_sections(report),
    ]
    lines += assertion_lines(report.assertions)
    lines += warning_lines(report.warnings)
    return "\n".join(lines) + "\n"


def answer_sections(report: AnswerEvalReport) -> list[str]:
    """What an answer report says of its numbers (intervals, the judge's error, who is ahead,
    paired differences, pairwise tallies), the same in its own report and in a pipeline's."""
    lines = [
        *interval_lines(report.intervals, REPORTED_ANSWER_METRICS),
        "",
        "Each cell: mean [95% CI], the questions it scored"
        + (
            ", and for a judged metric its judge-corrected estimate with a 95% interval that includes the judge's error"
            if report.judge_calibration is not None
            else ""
        )
        + "; `-`: no question could be scored.",
        "",
        "## The judge's error",
        "",
        *judge_error_lines(report.judge_calibration),
    ]
    ahead = ahead_lines(report.intervals, report.comparisons, REPORTED_ANSWER_METRICS)
    if ahead:
        lines += ["", "## Who is ahead", "", *ahead]
    comparison_lines = _comparison_lines([c for c in report.comparisons if c.questions], list(REPORTED_ANSWER_METRICS))
    if comparison_lines:
        lines += [
            "",
            f"## Paired differences (over the questions both scored; bootstrap 95% CI, randomization p; "
            f"significant when p < {ALPHA})",
            "",
            *comparison_lines,
        ]
    if report.pairwise:
        lines += ["", "## Pairwise (the judge's preference, asked in both orders)", ""]
        lines += [
            f"- {p.configuration_a} vs {p.configuration_b} on {p.questions} questions: "
            f"{p.configuration_a} won {p.wins_a}, {p.configuration_b} won {p.wins_b}, {p.ties} ties; "
            f"inconsistent {p.inconsistent}, unreadable {p.unreadable}"
            for p in report.pairwise
        ]
    followups = followup_lines(report.followup_gaps, REPORTED_ANSWER_METRICS, report.dialogues)
    if followups:
        lines += ["", *followups, "", *conversation_lines(report.metrics)]
    return lines


def conversation_lines(metrics: dict[str, dict[str, float]]) -> list[str]:
    """Each configuration's share of golden dialogues handled turn after turn."""
    return [
        f"- {label}: {values[CONVERSATION_SUCCESS]:.3f} of {values[f'{CONVERSATION_SUCCESS}_scored']:.0f} dialogues "
        "had every turn cited (each citation supported) or declined as it should be"
        for label, values in metrics.items()
        if CONVERSATION_SUCCESS in values
    ]


def unfaithful_lines(urls: dict[str, str]) -> list[str]:
    """One link per configuration to its least faithful answers (MLflow's Traces tab, filtered on
    the first metric of declared.LEAST_FAITHFUL that was scored: answer_outcomes.least_faithful_below):
    open one, and each statement judged unsupported sits beside its passage. Near a report's top,
    so the first screen of MLflow's description shows it."""
    if not urls:
        return []
    links = ", ".join(f"[{label}]({url})" for label, url in urls.items())
    bounds = [f"{metric.title} below {metric.least_faithful.below:g}" for metric in LEAST_FAITHFUL]
    where = f", or {bounds[1]} where {LEAST_FAITHFUL[0].title} was not scored" if len(bounds) > 1 else ""
    return ["", f"Least faithful answers ({bounds[0]}{where}), by configuration: {links}."]


def subsections(lines: list[str]) -> list[str]:
    """A report's sections one heading level down, to sit under a pipeline's stage heading."""
    return [f"#{line}" if line.startswith("#") else line for line in lines]
