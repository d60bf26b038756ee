"""What evaluation commands print: tables of means, comparisons, answer metrics, costs, pairwise
tallies, warnings and estimates (rendering only; the numbers come from the flows)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.table import Table

from ragassay.cli.common import out, styled
from ragassay.metrics.names import (
    CONVERSATION_SUCCESS,
    JUDGED_METRICS,
    METRIC_TITLES,
    REPORTED_ANSWER_METRICS,  # noqa: F401 (commands import it from here)
)
from ragassay.metrics.names import headline_retrieval_metrics as headline_metrics  # noqa: F401 (commands import it from here)

if TYPE_CHECKING:  # the evaluation's modules load polars and numpy: named here, imported where a table is drawn
    from ragassay.evaluation.answer_judging import PairwiseTally
    from ragassay.evaluation.estimate import AnswerEstimate
    from ragassay.evaluation.judge_correction import CalibrationSummary
    from ragassay.gates.assertions import AssertionResult
    from ragassay.metrics.conversations import FollowupGapRow
    from ragassay.metrics.significance import ComparisonRow
    from ragassay.run_warnings import RunWarning


def render_means(title: str, means: dict[str, dict[str, float | None]], columns: list[str]) -> None:
    """Metrics × configurations, the first row the questions each configuration's means are over
    (n): `not scored` where none was, and a mark on means over fewer questions than another
    configuration's. Metrics are rows, as in the answer metrics' table: four recall@k, nDCG and
    MRR as columns were cut to "recall…" four times over on an 80-column terminal."""
    from ragassay.evaluation.reports import FEWER_QUESTIONS_NOTE, means_rows

    rows, marked = means_rows(means, columns)
    table = Table(title=title)
    table.add_column("metric", no_wrap=True)
    for label, *_ in rows:
        table.add_column(label, justify="right", overflow="fold")
    for index, name in enumerate(["n", *columns], start=1):
        table.add_row(name, *(row[index] for row in rows))
    out.print(table)
    if marked:
        # Below the table, not its caption: a caption wraps to the table's width, here narrow.
        out.print(FEWER_QUESTIONS_NOTE)


def render_systems(costs: dict[str, dict[str, float]]) -> None:
    """Each system under test's calls: answered of asked, errors by kind, retries, latency of the
    answering attempt and of the whole call with its retries and waits, unknown ids (nothing for
    built-in configurations)."""
    systems = {label: values for label, values in costs.items() if "coverage" in values}
    if not systems:
        return
    table = Table(
        title="systems under test: metrics are over the questions each answered",
        caption="p50/p95: the answering attempt; call p95: the whole call, its retries and waits included",
    )
    for column in ("configuration", "answered", "errors", "retries", "p50 ms", "p95 ms", "call p95 ms", "unknown ids"):
        table.add_column(column, justify="left" if column in ("configuration", "errors") else "right")
    for label, values in systems.items():
        errors = ", ".join(
            f"{int(count)} {name.removeprefix('errors/')}"
            for name, count in values.items()
            if name.startswith("errors/")
        )
        latency = [
            f"{values[key]:.0f}" if key in values else "-"
            for key in ("latency_p50_ms", "latency_p95_ms", "call_latency_p95_ms")
        ]
        table.add_row(
            label,
            f"{int(values['answered'])}/{int(values['asked'])} ({values['coverage']:.1%})",
            errors or "none",
            f"{values.get('retries', 0):.0f}",
            *latency,
            str(int(values["unknown_doc_ids"])),
        )
    out.print(table)


def render_followups(gaps: Sequence[FollowupGapRow], metrics: Sequence[str], title: str = "") -> None:
    """The golden dialogues' first turns against their follow-ups, a table per metric with a row
    per configuration, the gap with its dialogue-resampled 95% interval where there are enough
    dialogues for one (nothing without dialogues)."""
    from ragassay.evaluation.interval_text import GAP_INTERVAL_NOTE, counted, gap_estimate

    for metric in metrics:
        shown = [row for row in gaps if row.metric == metric and row.first_scored]
        if not shown:
            continue
        table = Table(
            title=f"{title}{metric} on the first turns and follow-ups of {counted(shown[0].dialogues, 'dialogue')}",
            caption=f"(n): turns scored; gap: follow-ups - first turns, {GAP_INTERVAL_NOTE}",
        )
        for column in ("configuration", "first turns", "follow-ups", "gap [95% CI]"):
            table.add_column(
                column, justify="left" if column == "configuration" else "right", no_wrap=column != "configuration"
            )
        for row in shown:
            later = "not scored" if row.followup_mean is None else f"{row.followup_mean:.3f} ({row.followup_scored})"
            table.add_row(row.configuration, f"{row.first_mean:.3f} ({row.first_scored})", later, gap_estimate(row))
        out.print(table)


def render_comparisons(
    comparisons: Sequence[ComparisonRow], metrics: list[str] | tuple[str, ...], title: str = ""
) -> None:
    """The paired differences of the given metrics; a pair that scored no question in common for a
    metric has nothing to compare and is not shown."""
    from ragassay.evaluation.interval_text import signed, signed_interval
    from ragassay.metrics.corrected_rows import has_correction
    from ragassay.metrics.significance import ALPHA, interval_source

    shown = [c for c in comparisons if c.metric in metrics and c.questions]
    if not shown:
        return
    table = Table(title=f"{title}paired differences")
    corrected = any(has_correction(c) for c in shown)
    # A row names each pair (b - a) above its metrics: two columns of names folded "fulltext" at
    # 80 columns. On a narrow terminal a long pair's name folds, never a metric name or a number.
    table.add_column("b - a", overflow="fold", min_width=2 + max(len(c.metric) for c in shown))
    for column in ("n", "mean", "95% CI", "p"):
        table.add_column(column, justify="left" if column == "95% CI" else "right", no_wrap=True)
    pairs = list(dict.fromkeys((c.configuration_a, c.configuration_b) for c in shown))
    for a, b in pairs:
        table.add_row(f"{b} - {a}", "", "", "", "", style="bold")
        rows = [c for c in shown if (c.configuration_a, c.configuration_b) == (a, b)]
        for c in rows:
            table.add_row(
                f"  {c.metric}",
                str(c.questions),
                signed(c.mean_difference),
                signed_interval(c.ci_low, c.ci_high),
                f"{c.p_value:.3f}" + ("*" if c.p_value < ALPHA else ""),
                end_section=c is rows[-1] and not has_correction(c),
            )
            # The corrected difference on a row of its own, as in the metric table: a column more
            # would squeeze the table out of an 80-column terminal.
            if has_correction(c):
                estimate = "none" if c.corrected is None else signed(c.corrected)
                table.add_row(
                    "    corrected",
                    "",
                    estimate,
                    signed_interval(c.corrected_low, c.corrected_high),
                    "",
                    end_section=c is rows[-1],
                )
    table.caption = (
        f"mean of b - a over the n questions both scored; 95% CI: {interval_source(shown)}; "
        f"p: randomization, * p < {ALPHA}"
    ) + (
        "; corrected: in people's terms (the judge's offset cancels in a difference; same sign and p)"
        if corrected
        else ""
    )
    out.print(table)


def render_answer_metrics(title: str, metrics: dict[str, dict[str, float]]) -> None:
    """Each answer metric with the number of questions behind it; '-' where none could be scored.
    Metrics are rows and configurations columns, so long metric names fit a narrow terminal."""
    corrected = any(f"{name}_corrected_low" in values for values in metrics.values() for name in JUDGED_METRICS)
    caption = "value (questions scored)" + (
        "; corrected: the judge-corrected estimate [95% interval over questions and labels]" if corrected else ""
    )
    table = Table(title=title, caption=caption)
    table.add_column("metric", no_wrap=True)
    for label in metrics:
        table.add_column(label, justify="right", no_wrap=True)
    rows = dict(ANSWER_COLUMNS)
    if any(CONVERSATION_SUCCESS in values for values in metrics.values()):
        rows["dialogues handled"] = (CONVERSATION_SUCCESS, f"{CONVERSATION_SUCCESS}_scored")
    for title_, (name, count) in rows.items():
        cells = []
        for values in metrics.values():
            scored = int(values.get(count, 0))
            cells.append(f"{values[name]:.3f} ({scored})" if name in values else f"- ({scored})")
        table.add_row(title_, *cells)
        if name in JUDGED_METRICS and corrected:
            table.add_row("  corrected", *(_corrected_cell(values, name) for values in metrics.values()))
    out.print(table)


def _corrected_cell(values: dict[str, float], name: str) -> str:
    if f"{name}_corrected_low" not in values:
        return "-"
    interval = f"[{values[f'{name}_corrected_low']:.3f}, {values[f'{name}_corrected_high']:.3f}]"
    estimate = values.get(f"{name}_corrected")
    return f"{'none' if estimate is None else f'{estimate:.3f}'} {interval}"


def render_answer_models(answered_by: dict[str, str], judge_model: str) -> None:
    """One line naming who wrote the answers (per configuration, grouped) and who judged them; a
    toy answer model says so, since every judged number describes its answers."""
    by_model: dict[str, list[str]] = {}
    for label, model in answered_by.items():
        by_model.setdefault(model, []).append(label)
    answered = "; ".join(f"{', '.join(labels)}: {model}" for model, labels in by_model.items())
    out.print(f"answered by {answered} · judged by {judge_model}", highlight=False)
    if any(model.startswith("smollm2:") for model in by_model):
        out.print(
            "SmolLM2-135M writes fast answers too weak to read as a RAG system's: use "
            "`model: {backend: qwen2.5-1.5b}` or your own model for numbers worth comparing",
            style="yellow",
            highlight=False,
        )


def render_judge_calibration(calibration: CalibrationSummary | None) -> None:
    """One line on the labels behind the corrected numbers (or that there are none)."""
    if calibration is None:
        out.print(
            "judged metrics are the judge's own numbers: no labels of these documents for this judge "
            "(`ragassay judge label`)",
            style="yellow",
            highlight=False,
        )
        return
    out.print(
        f"corrected with {calibration.source_words} ({calibration.description}): {calibration.summary}",
        style="dim",
        highlight=False,
    )
    for aligned in calibration.aligned_judges:
        out.print(f"support verdicts read by the {aligned}", style="dim", highlight=False)


def render_answer_costs(metrics: dict[str, dict[str, float]]) -> None:
    table = Table(title="model calls and time")
    table.add_column("cost", no_wrap=True)
    for label in metrics:
        table.add_column(label, justify="right", no_wrap=True)
    for name, cell in COST_ROWS.items():
        table.add_row(name, *(cell(values) for values in metrics.values()))
    out.print(table)


def render_pairwise(pairwise: Sequence[PairwiseTally]) -> None:
    """One line per pair: the judge's preference, asked in both orders."""
    for p in pairwise:
        a, b = p.configuration_a, p.configuration_b
        out.print(
            f"pairwise {a} vs {b} on {p.questions} questions: {a} wins {p.wins_a}, ties {p.ties}, {b} wins {p.wins_b}, "
            f"inconsistent {p.inconsistent} (share {p.inconsistent_share:.2f}), unreadable {p.unreadable}",
            highlight=False,
        )


def render_warnings(warnings: list[RunWarning]) -> None:
    out.print(f"{len(warnings)} warnings" + (":" if warnings else ""), highlight=False)
    for w in warnings:
        out.print(styled(("warning", "yellow"), f" {w.text()}"), highlight=False)


def render_mlflow_location(report, prefix: str = "") -> None:
    """Where an evaluation's batch is in MLflow, and its view of the runs list (the headline
    metrics as columns) when one was saved; where it is kept when MLflow did not take it."""
    if report.kept_in:
        out.print(f"{prefix}batch {report.batch_id} is not in MLflow: kept in {report.kept_in}", highlight=False)
        return
    out.print(f"{prefix}MLflow experiment {report.experiment!r}; open it with:\n  {report.ui_command}", highlight=False)
    if report.runs_view_url:
        out.print(f"its configurations side by side in the runs list: {report.runs_view_url}", highlight=False)


def render_estimate(estimate: AnswerEstimate) -> None:
    out.print(
        f"{estimate.questions} answerable and {estimate.unanswerable} unanswerable questions "
        f"({estimate.reference_sentences} reference-answer sentences)",
        highlight=False,
    )
    table = Table(title="estimate before running: expected model calls (at most), tokens, seconds")
    for column in ("configuration", "answer calls", "judge calls", "tokens", "seconds"):
        table.add_column(column, justify="left" if column == "configuration" else "right")

    def number(value) -> str:
        return "unknown" if value is None else f"{value:,}"

    for row in estimate.configurations:
        answer, judge = row.answer, row.judge
        tokens = None if None in (answer.tokens, judge.tokens) else answer.tokens + judge.tokens
        seconds = None if None in (answer.seconds, judge.seconds) else round(answer.seconds + judge.seconds, 1)
        table.add_row(
            row.configuration,
            f"{answer.calls} ({answer.at_most})",
            f"{judge.calls} ({judge.at_most})",
            number(tokens),
            number(seconds),
        )
    pairwise = estimate.pairwise
    if pairwise.calls:
        table.add_row(
            "pairwise",
            "",
            f"{pairwise.calls} ({pairwise.at_most})",
            number(pairwise.tokens),
            number(pairwise.seconds),
        )
    out.print(table)
    for row in estimate.configurations:
        out.print(f"answer model rates ({row.configuration}): {row.answer_rate_basis}", style="dim", highlight=False)
    out.print(f"judge rates: {estimate.judge_rate_basis}", style="dim", highlight=False)
    out.print(f"assumes: {estimate.assumes}", style="dim", highlight=False)
    total = estimate.total_seconds
    out.print(
        f"total: {estimate.total_calls:,} model calls, about {'an unknown time' if total is None else f'{total / 60:.1f} minutes'}",
        highlight=False,
    )


# Each answer metric's row: its mean, and the questions it is over.
ANSWER_COLUMNS = {
    **{title: (name, f"{name}_scored") for name, title in METRIC_TITLES.items()},
    "refusal recall": ("refusal_recall", "unanswerable_questions"),
    "false refusals": ("false_refusal_rate", "answerable_questions"),
}


COST_ROWS = {
    "answer model calls": lambda v: f"{v['answer_model_calls']:.0f}",
    "answer model tokens": lambda v: f"{v['answer_model_prompt_tokens'] + v['answer_model_completion_tokens']:,.0f}",
    "answer model seconds": lambda v: f"{v['answer_model_seconds']:.1f}",
    "judge calls": lambda v: f"{v['judge_calls']:.0f}",
    "judge tokens": lambda v: f"{v['judge_prompt_tokens'] + v['judge_completion_tokens']:,.0f}",
    "judge seconds": lambda v: f"{v['judge_seconds']:.1f}",
    "verdicts reused": lambda v: f"{v.get('judge_reused_verdicts', 0):.0f}",
    "calls from cache": lambda v: f"{v.get('answer_model_cached_calls', 0) + v.get('judge_cached_calls', 0):.0f}",
}


def render_assertions(assertions: list[AssertionResult]) -> None:
    from ragassay.gates.assertions import measured

    for result in assertions:
        status = ("passed", "green") if result.passed else ("FAILED", "red")
        out.print(styled(f"assert {result.assertion}: ", status, f" ({measured(result)})"), highlight=False)
