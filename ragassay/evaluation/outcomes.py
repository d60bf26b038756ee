"""An evaluation's outcome, computed before anything is logged: the shared params, the record of
what MLflow holds for it (tracking.BatchRecord: child runs, the parent's summary, tables and
pictures), and the typed report a stage returns. Pure: data in, data out; the tasks log the
record (tracking.log_batch_record) and return the report."""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl
from pydantic import Field

from ragassay import plots
from ragassay.config import RetrievalEvalConfig
from ragassay.evaluation.answer_judging import PairwiseTally
from ragassay.evaluation.interval_text import configuration_markdown
from ragassay.evaluation.judge_correction import (
    CalibrationSummary,
)
from ragassay.evaluation.questions import GoldenContext
from ragassay.evaluation.retrieval_scoring import SearchedConfiguration
from ragassay.evaluation.system_runs import records_table
from ragassay.gates.assertions import (
    AssertionResult,
    assertion_rows,
    batch_verdict,
    check_assertions,
    configuration_verdicts,
    parse_assertion,
)
from ragassay.metrics.averaging import (
    IntervalRow,
    interval_metrics,
    interval_rows,
    interval_table,
    mean_scores,
    scored_questions,
    subset_interval_table,
)
from ragassay.metrics.conversations import (
    FollowupGapRow,
    followup_gap_rows,
    gap_table,
    subset_means,
)
from ragassay.metrics.corrected_rows import (
    AnswerComparisonRow,
    AnswerIntervalRow,
)
from ragassay.metrics.names import (
    QUESTIONS_SCORED,
    headline_retrieval_metrics,
)
from ragassay.metrics.significance import ComparisonRow, compare_all_pairs, comparison_rows
from ragassay.run_warnings import RunWarning
from ragassay.tracking import BatchRecord, ConfigurationRecord, LoggedBatch, flatten_params
from ragassay.work_span import WorkSpan


class RetrievalEvalReport(LoggedBatch):
    """Means per configuration (None where no question was scored), each with the questions it is
    over (`questions_scored`), pairwise comparisons, assertion results, and where the runs are."""

    questions: int
    metrics: list[str]
    means: dict[str, dict[str, float | None]]
    comparisons: list[ComparisonRow]
    assertions: list[AssertionResult]
    warnings: list[RunWarning]
    intervals: list[IntervalRow]
    seconds_searching: dict[str, float]
    model_costs: dict[str, dict[str, float]]
    # Golden dialogues' first turns against their follow-ups, per configuration and metric (none
    # without dialogues).
    followup_gaps: list[FollowupGapRow] = Field(default_factory=list)
    dialogues: int = 0


class AnswerEvalReport(LoggedBatch):
    """Metrics per configuration, paired differences with their significance (as retrieval's
    `comparisons`), the judge's pairwise tallies, warnings, cost, and where the runs are."""

    questions: int
    unanswerable: int
    metrics: dict[str, dict[str, float]]
    comparisons: list[AnswerComparisonRow]
    pairwise: list[PairwiseTally]
    warnings: list[RunWarning]
    assertions: list[AssertionResult]
    judge_model: str
    prompt_versions: dict[str, str]
    intervals: list[AnswerIntervalRow]
    seconds: float
    # Who wrote each configuration's answers: its answer model's id, or the system under test.
    answered_by: dict[str, str] = Field(default_factory=dict)
    # The labels the judged metrics were corrected with (judge_correction.calibration_summary);
    # None when there were none for this judge.
    judge_calibration: CalibrationSummary | None = None
    # Each configuration's Traces tab in MLflow, showing only its least faithful answers
    # (least_faithful_below; none when traces were switched off).
    unfaithful_traces_urls: dict[str, str] = Field(default_factory=dict)
    # Golden dialogues' first turns against their follow-ups (none without dialogues).
    followup_gaps: list[FollowupGapRow] = Field(default_factory=list)
    dialogues: int = 0


def published_intervals(intervals: list[IntervalRow], metrics: list[str] | None = None) -> list[dict]:
    """Interval rows as the Prefect UI's table shows them: rounded to 4 places, scored ones only
    (of `metrics`, when given)."""
    return [
        {key: round(value, 4) if isinstance(value, float) else value for key, value in row.model_dump().items()}
        for row in intervals
        if row.mean is not None and (metrics is None or row.metric in metrics)
    ]


@dataclass(frozen=True)
class RetrievalSummary:
    """Means per configuration with their 95% intervals, every pairwise comparison, and the
    `--assert` bounds' results."""

    means: dict[str, dict[str, float | None]]
    intervals: pl.DataFrame
    comparisons: pl.DataFrame
    assertions: list[AssertionResult]
    followup_gaps: list[FollowupGapRow]


def summarize_retrieval(
    config: RetrievalEvalConfig, per_question: dict[str, pl.DataFrame], coverage: dict[str, float] | None = None
) -> RetrievalSummary:
    """Each configuration's means (over the questions it answered; over golden dialogues' first
    turns and follow-ups too, `first_…`/`followup_…`) and intervals, paired comparisons of every
    pair (a dialogue's turns resampled together), the follow-up gaps, the bounds checked.
    coverage: answered / asked of each configuration under test, which `LABEL:coverage>=…` bounds."""
    metrics = config.metrics()
    names = [str(m) for m in metrics]
    means = {
        label: {
            **mean_scores(table, metrics),
            QUESTIONS_SCORED: float(scored_questions(table, metrics)),
            **subset_means(table, names),
        }
        for label, table in per_question.items()
    }
    for label, share in (coverage or {}).items():
        means[label]["coverage"] = share
    comparisons = compare_all_pairs(per_question, names, seed=config.seed)
    assertions = check_assertions([parse_assertion(a) for a in config.assertions], means)
    subsets = bounded_subsets(subset_interval_table(per_question, names, config.seed), assertions)
    intervals = pl.concat([interval_table(per_question, names, seed=config.seed), subsets])
    gaps = followup_gap_rows(per_question, names, config.seed)
    return RetrievalSummary(means, intervals, comparisons, assertions + answered_nothing(coverage or {}), gaps)


def answered_nothing(coverage: dict[str, float]) -> list[AssertionResult]:
    """A failed check for each system under test that answered no question: a configuration with
    nothing measured fails its evaluation (exit 1), as a failed assertion does."""
    return [
        AssertionResult(
            assertion=f"{label}:coverage>0",
            value=share,
            passed=False,
            reason=f"{label} answered none of the questions, so nothing of it was measured",
            configuration=label,
            metric="coverage",
            operator=">",
            bound=0.0,
        )
        for label, share in coverage.items()
        if share == 0
    ]


def retrieval_params(config: RetrievalEvalConfig, context: GoldenContext) -> dict[str, str]:
    """The settings every configuration of a retrieval evaluation shares, as MLflow params."""
    return flatten_params(
        {
            "collections": list(config.collections),
            "ks": list(config.ks),
            "max_questions": config.max_questions,
            "seed": config.seed,
            "questions": len(context.questions),
            "index_digest": context.index_digests,
            "golden_digest": context.golden_digests,
            "golden_size": context.golden_sizes,
            "embedding_model": context.embedding_models,
        }
    )


def retrieval_record(
    config: RetrievalEvalConfig,
    context: GoldenContext,
    searched: dict[str, SearchedConfiguration],
    per_question: dict[str, pl.DataFrame],
    summary: RetrievalSummary,
    shared: dict[str, str],
    batch_id: str,
    work_spans: dict[str, WorkSpan] | None = None,
) -> BatchRecord:
    """What a retrieval evaluation logs: per configuration its settings, means, cost, tables,
    description and the span of its work; on the parent the headline means, the comparisons,
    warnings and intervals, and two pictures."""
    headline = headline_retrieval_metrics(config.ks)
    names = [str(m) for m in config.metrics()]
    # summary.intervals holds the subsets an assertion bounds already: the same rows, the same keys.
    bounds = interval_metrics(pl.concat([summary.intervals, subset_interval_table(per_question, names, config.seed)]))
    verdicts = configuration_verdicts(summary.assertions)
    configurations = [
        ConfigurationRecord(
            label=c.label,
            params={**shared, **flatten_params({"config": c.applicable_settings()})},
            # A mean nothing was scored for is None, and not logged: MLflow shows no value, not 0.
            metrics={**summary.means[c.label], **bounds.get(c.label, {}), **searched[c.label].costs},
            tables=_retrieval_tables(searched[c.label], per_question[c.label]),
            description=configuration_markdown(
                f"retrieval/{c.label}: configuration {c.label} of retrieval batch {batch_id}, "
                f"{len(context.questions)} questions",
                interval_rows(summary.intervals.filter(pl.col("configuration") == c.label)),
                headline,
            ),
            work_span=(work_spans or {}).get(c.label),
            verdict=verdicts[c.label],
        )
        for c in config.configurations
    ]
    warnings = retrieval_warnings(context, searched)
    title = f"retrieval, batch {batch_id}: {len(context.questions)} questions"
    return BatchRecord(
        kind="retrieval",
        configurations=configurations,
        headline={label: {m: values[m] for m in headline} for label, values in summary.means.items()},
        parent_metrics={},
        tables={
            "comparisons": summary.comparisons,
            "warnings": pl.DataFrame({"warning": [w.text() for w in warnings]}, schema={"warning": pl.String}),
            "intervals": summary.intervals,
            **({"followup_gaps": gap_table(summary.followup_gaps)} if summary.followup_gaps else {}),
        },
        figures={
            "retrieval_metrics": plots.interval_figure(
                interval_rows(summary.intervals), headline, title, comparison_rows(summary.comparisons)
            ),
            "retrieval_recall_at_k": plots.recall_curve_figure(
                interval_rows(summary.intervals), list(config.ks), f"recall@k, batch {batch_id}"
            ),
        },
        verdict=batch_verdict(summary.assertions),
        assertions=assertion_rows(summary.assertions),
    )


def _retrieval_tables(searched: SearchedConfiguration, per_question: pl.DataFrame) -> dict[str, pl.DataFrame]:
    """A retrieval configuration's tables: its per-question scores, its run, and a system's records."""
    records = {"records": records_table(searched.records)} if searched.records is not None else {}
    return {"per_question": per_question, "run": searched.run, **records}


def retrieval_warnings(context: GoldenContext, searched: dict[str, SearchedConfiguration]) -> list[RunWarning]:
    """The golden set's warnings, then each system under test's (failed calls, unknown ids)."""
    return [*context.warnings, *(w for found in searched.values() for w in found.warnings)]


def retrieval_report(
    config: RetrievalEvalConfig,
    context: GoldenContext,
    searched: dict[str, SearchedConfiguration],
    summary: RetrievalSummary,
    logged: LoggedBatch,
) -> RetrievalEvalReport:
    return RetrievalEvalReport(
        **logged.model_dump(),
        questions=len(context.questions),
        metrics=[str(m) for m in config.metrics()],
        means=summary.means,
        comparisons=comparison_rows(summary.comparisons),
        assertions=summary.assertions,
        warnings=retrieval_warnings(context, searched),
        intervals=interval_rows(summary.intervals),
        seconds_searching={label: result.seconds for label, result in searched.items()},
        model_costs={label: result.costs for label, result in searched.items()},
        followup_gaps=summary.followup_gaps,
        dialogues=context.dialogues,
    )


def bounded_subsets(subsets: pl.DataFrame, assertions: list[AssertionResult]) -> pl.DataFrame:
    """The interval rows over first turns or follow-ups (`followup.recall@5`) of the metrics an
    assertion bounds: the metrics table shows a row for everything an assertion checks."""
    return subsets.filter(pl.col("metric").is_in([a.metric for a in assertions]))


def bounded_metrics(assertions: list[AssertionResult]) -> list[str]:
    """What the assertions bound, as the metrics table names them (`followup.recall@5`, `mrr`)."""
    return list(dict.fromkeys(a.metric for a in assertions))
