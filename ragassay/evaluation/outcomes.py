"""An evaluation's outcome, computed before anything is logged: the shared params, the record of
what MLflow holds for it (tracking.BatchRecord: child runs, the parent's summary, tables and
pictures), and the typed report a stage returns. Pure: data in, data out; the tasks log the
record (tracking.log_batch_record) and return the report."""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl
from pydantic import Field

from ragassay import plots
from ragassay.answer.grounding import ANSWER_PROMPT_VERSION, CONVERSATION_PROMPT_VERSION
from ragassay.config import AnswerEvalConfig, AnyAnswerConfiguration, RetrievalEvalConfig
from ragassay.evaluation.answer_judging import PairComparison, PairwiseTally, batch_warnings
from ragassay.evaluation.answer_summary import (
    ConfigurationSummary,
    answer_differences,
    answer_intervals,
    judgments_preview,
    question_set_warnings,
)
from ragassay.evaluation.answer_traces import TraceSettings, answer_traces
from ragassay.evaluation.interval_text import configuration_markdown, judge_error_lines
from ragassay.evaluation.judge_correction import (
    CalibrationSummary,
    calibration_summary,
    calibration_warnings,
    clip_reason,
    clipped_corrections,
    corrected_comparisons,
    corrected_intervals,
    corrected_metrics,
    correction_fit_warnings,
)
from ragassay.evaluation.questions import EvalQuestion, GoldenContext, whole_dialogue_parts
from ragassay.evaluation.retrieval_scoring import SearchedConfiguration
from ragassay.evaluation.system_runs import records_table
from ragassay.gates.assertions import (
    AssertionResult,
    assertion_rows,
    batch_verdict,
    check_assertions,
    configuration_verdicts,
    parse_answer_assertion,
    parse_assertion,
)
from ragassay.judge.judge import support_threshold_for
from ragassay.judge.learned_verdict import learned_verdict_label
from ragassay.judge.prompts import PROMPT_VERSIONS
from ragassay.llm.registry import model_verification
from ragassay.llm.settings import model_id_of
from ragassay.metrics.averaging import (
    IntervalRow,
    answer_scores,
    interval_metrics,
    interval_rows,
    interval_table,
    mean_scores,
    scored_questions,
    subset_interval_table,
)
from ragassay.metrics.conversations import (
    CONVERSATION_SUCCESS,
    FollowupGapRow,
    conversation_success,
    followup_gap_rows,
    gap_table,
    subset_means,
)
from ragassay.metrics.corrected_rows import (
    AnswerComparisonRow,
    AnswerIntervalRow,
    answer_comparison_rows,
    answer_interval_rows,
)
from ragassay.metrics.declared import LEAST_FAITHFUL
from ragassay.metrics.judge_error import JudgeCalibration
from ragassay.metrics.names import (
    CORRECTED_METRICS,
    QUESTIONS_SCORED,
    REPORTED_ANSWER_METRICS,
    headline_retrieval_metrics,
    metric_key,
)
from ragassay.metrics.significance import ComparisonRow, compare_all_pairs, comparison_rows
from ragassay.run_warnings import RunWarning, warnings_table
from ragassay.search.followups import REWRITE_PROMPT_VERSION
from ragassay.store.schemas import JUDGE_CALIBRATION, PAIRWISE
from ragassay.tracking import BatchRecord, ConfigurationRecord, LoggedBatch, flatten_params, traces_below_url
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


@dataclass(frozen=True)
class AnswerQuestions:
    """The questions of one answer evaluation (golden: the golden set's questions and its
    dialogues' turns; unanswerable: the unanswerable file's), and when it started (for its duration)."""

    golden: list[EvalQuestion]
    unanswerable: list[EvalQuestion]
    context: GoldenContext
    started: float

    @property
    def all(self) -> list[tuple[EvalQuestion, bool]]:
        """(question, answerable): the golden questions and turns, then the unanswerable file's."""
        return [(q, q.answerable) for q in self.golden] + [(q, False) for q in self.unanswerable]

    def parts(self, size: int | None) -> list[list[tuple[EvalQuestion, bool]]]:
        """`all` in parts of at most size to answer apart, a dialogue never split (its turns are
        answered in order, each with the answers before it)."""
        return whole_dialogue_parts(self.all, size, lambda item: item[0])

    @property
    def answerable_count(self) -> int:
        return sum(q.answerable for q in self.golden)

    @property
    def unanswerable_count(self) -> int:
        """The unanswerable file's questions and the dialogues' unanswerable turns."""
        return len(self.unanswerable) + sum(not q.answerable for q in self.golden)


def answer_params(
    config: AnswerEvalConfig, questions: AnswerQuestions, judge_model_id: str, calibration: JudgeCalibration | None
) -> dict[str, str]:
    """The settings every configuration of an answer evaluation shares, as MLflow params (the
    labels the judged metrics were corrected with among them)."""
    context = questions.context
    return flatten_params(
        {
            "judge_calibration": f"{calibration.source}: {calibration.description}" if calibration else "none",
            # Whose verdicts the judged metrics are: the plain threshold's, or collections' aligned judges.
            "aligned_judge": "; ".join(calibration.aligned_judges)
            if calibration and calibration.aligned_judges
            else "none",
            "collections": list(config.collections),
            "max_questions": config.max_questions,
            "seed": config.seed,
            "questions": len(context.questions),
            "unanswerable_questions": questions.unanswerable_count,
            "unanswerable_file": str(config.unanswerable) if config.unanswerable else None,
            "judge": config.judge.model_dump(exclude_none=True),
            "judge_model_id": judge_model_id,
            "judge_model_verified": model_verification(config.judge),
            "judge_support_threshold": support_threshold_for(judge_model_id),
            # Which verdict read the judge: the learned one (its version and fit date) or its own P.
            "judge_verdict": learned_verdict_label(judge_model_id),
            "prompt_version": {
                "answer": ANSWER_PROMPT_VERSION,
                "answer_in_conversation": CONVERSATION_PROMPT_VERSION,
                "rewrite": REWRITE_PROMPT_VERSION,
                **PROMPT_VERSIONS,
            },
            "index_digest": context.index_digests,
            "golden_digest": context.golden_digests,
            "embedding_model": context.embedding_models,
        }
    )


@dataclass(frozen=True)
class AnswerBatchSummary:
    """What an answer evaluation concludes across configurations: each one's summary, the paired
    differences of every metric (comparisons), the judge's pairwise preferences and their tallies,
    the 95% intervals, every warning, the bounds' results."""

    summaries: dict[str, ConfigurationSummary]
    comparisons: pl.DataFrame
    preferences: list[PairComparison]
    pairwise: list[PairwiseTally]
    intervals: pl.DataFrame
    warnings: list[RunWarning]
    assertions: list[AssertionResult]
    calibration: JudgeCalibration | None = None
    followup_gaps: list[FollowupGapRow] = field(default_factory=list)
    # The first-turn or follow-up intervals of the metrics an assertion bounds (bounded_subsets).
    bounded_subsets: pl.DataFrame | None = None


def bounded_subsets(subsets: pl.DataFrame, assertions: list[AssertionResult]) -> pl.DataFrame:
    """The interval rows over first turns or follow-ups (`followup.recall@5`) of the metrics an
    assertion bounds: the metrics table shows a row for everything an assertion checks."""
    return subsets.filter(pl.col("metric").is_in([a.metric for a in assertions]))


def bounded_metrics(assertions: list[AssertionResult]) -> list[str]:
    """What the assertions bound, as the metrics table names them (`followup.recall@5`, `mrr`)."""
    return list(dict.fromkeys(a.metric for a in assertions))


def summarize_answer_batch(
    config: AnswerEvalConfig,
    questions: AnswerQuestions,
    summaries: dict[str, ConfigurationSummary],
    preferences: list[PairComparison],
    calibration: JudgeCalibration | None = None,
) -> AnswerBatchSummary:
    """Intervals and paired differences of every answer metric, with the judged metrics'
    judge-corrected estimates beside them (each mean's 95% interval added to its configuration's
    run metrics as lo/METRIC, hi/METRIC, and a corrected one as METRIC_corrected,
    _corrected_low, _corrected_high), warnings, and the bounds checked. With golden dialogues, each
    metric's mean over their first turns and over their follow-ups (run metrics `first_…`,
    `followup_…`), the gap between them, and the share of dialogues handled turn after turn
    (conversation_success)."""
    per_question = {label: answer_scores(s.answers) for label, s in summaries.items()}
    intervals = corrected_intervals(answer_intervals(per_question, config.seed), per_question, calibration, config.seed)
    subsets = subset_interval_table(per_question, list(REPORTED_ANSWER_METRICS), config.seed)
    for bounds in (interval_metrics(intervals), interval_metrics(subsets), corrected_metrics(intervals)):
        for label, values in bounds.items():
            summaries[label].metrics.update(values)
    for label, table in per_question.items():
        summaries[label].metrics.update(subset_means(table, REPORTED_ANSWER_METRICS))
        success, dialogues = conversation_success(table)
        if dialogues:
            summaries[label].metrics.update(
                {CONVERSATION_SUCCESS: success, f"{CONVERSATION_SUCCESS}_scored": dialogues}
            )
    metrics = {label: s.metrics for label, s in summaries.items()}
    assertions = check_assertions([parse_answer_assertion(a) for a in config.assertions], metrics)
    return AnswerBatchSummary(
        summaries=summaries,
        comparisons=corrected_comparisons(
            answer_differences(per_question, config.seed), per_question, calibration, config.seed
        ),
        preferences=preferences,
        pairwise=[preference.tally() for preference in preferences],
        intervals=intervals,
        warnings=batch_warnings([s.warnings for s in summaries.values()], questions.context)
        + question_set_warnings(per_question)
        + calibration_warnings(calibration, model_id_of(config.judge))
        + correction_fit_warnings(intervals, calibration),
        assertions=assertions
        + answered_nothing({label: values["coverage"] for label, values in metrics.items() if "coverage" in values}),
        calibration=calibration,
        followup_gaps=followup_gap_rows(per_question, REPORTED_ANSWER_METRICS, config.seed),
        bounded_subsets=bounded_subsets(subsets, assertions),
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


def _answer_configuration_record(
    config: AnswerEvalConfig,
    configuration: AnyAnswerConfiguration,
    judge_model_id: str,
    summary: AnswerBatchSummary,
    shared: dict[str, str],
    batch_id: str,
    work_spans: dict[str, WorkSpan] | None,
) -> ConfigurationRecord:
    """One answer configuration's child run: its settings (and answer model), metrics, answers and
    judgments (a person-ordered preview of the judgments), a trace per question, its description
    and the span of its work."""
    summarized = summary.summaries[configuration.label]
    return ConfigurationRecord(
        label=configuration.label,
        params={
            **shared,
            **flatten_params(configuration.run_params()),
        },
        metrics=summarized.metrics,
        tables={"answers": summarized.answers, "judgments": summarized.judgments},
        previews={"judgments": judgments_preview(summarized.judgments, summarized.answers)},
        traces=answer_traces(
            summarized.answered,
            summarized.judgements,
            summarized.judge_seconds,
            TraceSettings(
                label=configuration.label,
                batch_id=batch_id,
                answered_by=configuration.answered_by(),
                judge_model_id=judge_model_id,
                support_threshold=support_threshold_for(judge_model_id),
                judge_prompts=", ".join(PROMPT_VERSIONS.values()),
                system_under_test=configuration.system_under_test,
            ),
        )
        if config.traces
        else [],
        description=_answer_description(configuration, batch_id, judge_model_id, summary),
        work_span=(work_spans or {}).get(configuration.label),
        verdict=configuration_verdicts(summary.assertions)[configuration.label],
    )


def answer_record(
    config: AnswerEvalConfig,
    questions: AnswerQuestions,
    judge_model_id: str,
    summary: AnswerBatchSummary,
    shared: dict[str, str],
    batch_id: str,
    work_spans: dict[str, WorkSpan] | None = None,
) -> BatchRecord:
    """What an answer evaluation logs: per configuration its settings, answer model, metrics,
    tables, description and the span of its work; on the parent the headline metrics, the pairwise tallies and their cost as
    `pairwise/A/B/...` metrics, the pairwise, warnings and interval tables, and the picture."""
    configurations = [
        _answer_configuration_record(config, c, judge_model_id, summary, shared, batch_id, work_spans)
        for c in config.configurations
    ]
    tallies = {
        f"pairwise/{t.configuration_a}/{t.configuration_b}/{key}": value
        for t in summary.pairwise
        for key, value in t.model_dump(exclude={"configuration_a", "configuration_b"}).items()
    }
    calibration_metrics, calibration_table = calibration_record(summary.calibration)
    title = (
        f"answers, batch {batch_id}: {questions.answerable_count} answerable + {questions.unanswerable_count} "
        f"unanswerable, judge {judge_model_id}"
    )
    return BatchRecord(
        kind="answers",
        configurations=configurations,
        headline={
            label: {
                metric_key(m): s.metrics[metric_key(m)]
                for m in (*REPORTED_ANSWER_METRICS, *CORRECTED_METRICS)
                if metric_key(m) in s.metrics
            }
            for label, s in summary.summaries.items()
        },
        parent_metrics={**tallies, **calibration_metrics},
        tables={
            "comparisons": summary.comparisons,
            "pairwise": pl.concat([p.table for p in summary.preferences]) if summary.preferences else PAIRWISE.empty(),
            "warnings": warnings_table(summary.warnings),
            "intervals": summary.intervals,
            "judge_calibration": calibration_table,
            **({"followup_gaps": gap_table(summary.followup_gaps)} if summary.followup_gaps else {}),
        },
        figures={
            "answer_metrics": plots.interval_figure(
                answer_interval_rows(summary.intervals),
                list(REPORTED_ANSWER_METRICS),
                title,
                answer_comparison_rows(summary.comparisons),
            )
        },
        verdict=batch_verdict(summary.assertions),
        assertions=assertion_rows(summary.assertions),
    )


def _answer_description(
    configuration: AnyAnswerConfiguration, batch_id: str, judge_model_id: str, summary: AnswerBatchSummary
) -> str:
    """An answer configuration's child run description (reports.configuration_markdown)."""
    rows = answer_interval_rows(summary.intervals.filter(pl.col("configuration") == configuration.label))
    clipped = clipped_corrections(rows, summary.calibration)
    return configuration_markdown(
        f"answers/{configuration.label}: configuration {configuration.label} of answer batch {batch_id}, "
        f"answered by {configuration.answered_by()}, judged by {judge_model_id}",
        rows,
        REPORTED_ANSWER_METRICS,
        judge_error_lines(calibration_summary(summary.calibration))[0],
        f"{clip_reason(summary.calibration)}: "
        + "; ".join(f"{row.metric} {row.mean:.3f} ({side})" for row, side in clipped)
        if clipped
        else "",
    )


def answer_report(
    config: AnswerEvalConfig,
    questions: AnswerQuestions,
    judge_model_id: str,
    summary: AnswerBatchSummary,
    logged: LoggedBatch,
    seconds: float,
) -> AnswerEvalReport:
    return AnswerEvalReport(
        **logged.model_dump(),
        questions=questions.answerable_count,
        unanswerable=questions.unanswerable_count,
        metrics={label: s.metrics for label, s in summary.summaries.items()},
        comparisons=answer_comparison_rows(summary.comparisons),
        pairwise=summary.pairwise,
        warnings=summary.warnings,
        assertions=summary.assertions,
        judge_model=judge_model_id,
        prompt_versions={"answer": ANSWER_PROMPT_VERSION, **PROMPT_VERSIONS},
        intervals=answer_interval_rows(
            summary.intervals
            if summary.bounded_subsets is None
            else pl.concat([summary.intervals, summary.bounded_subsets], how="diagonal_relaxed")
        ),
        seconds=round(seconds, 3),
        judge_calibration=calibration_summary(summary.calibration),
        answered_by={c.label: c.answered_by() for c in config.configurations},
        followup_gaps=summary.followup_gaps,
        dialogues=questions.context.dialogues,
        # Only where some answer falls below: a link to none would open "No traces found".
        unfaithful_traces_urls={
            label: traces_below_url(config.home, logged.experiment_id, run_id, *below)
            for label, run_id in logged.run_ids.items()
            if (below := least_faithful_below(summary.summaries[label].answers)) is not None
        }
        if config.traces
        else {},
    )


def least_faithful_below(answers: pl.DataFrame) -> tuple[str, float] | None:
    """The answer-level score and bound the "least faithful answers" list filters on: the first
    metric of declared.LEAST_FAITHFUL that was scored, below its bound; None when no answer falls
    below."""
    for metric in LEAST_FAITHFUL:
        name, below = metric.name, metric.least_faithful.below
        if name in answers.columns and answers[name].drop_nulls().len():
            return (name, below) if (answers[name] < below).any() else None
    return None
