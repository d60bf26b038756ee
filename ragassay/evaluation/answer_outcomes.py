"""An answer batch's outcome: its questions and params, the summary of every configuration, what is
logged to MLflow for each (metrics, tables, traces, the judge's calibration) and the batch's report."""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl

from ragassay import plots
from ragassay.answer.grounding import ANSWER_PROMPT_VERSION, CONVERSATION_PROMPT_VERSION
from ragassay.config import AnswerEvalConfig, AnyAnswerConfiguration
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
    calibration_record,
    calibration_summary,
    calibration_warnings,
    clip_reason,
    clipped_corrections,
    corrected_comparisons,
    corrected_intervals,
    corrected_metrics,
    correction_fit_warnings,
)
from ragassay.evaluation.outcomes import AnswerEvalReport, answered_nothing, bounded_subsets
from ragassay.evaluation.questions import EvalQuestion, GoldenContext, whole_dialogue_parts
from ragassay.gates.assertions import (
    AssertionResult,
    assertion_rows,
    batch_verdict,
    check_assertions,
    configuration_verdicts,
    parse_answer_assertion,
)
from ragassay.judge.learned_verdict import learned_verdict_label, verdict_version
from ragassay.judge.prompts import PROMPT_VERSIONS
from ragassay.judge.support_rules import support_threshold_for
from ragassay.llm.registry import model_verification
from ragassay.llm.settings import model_id_of
from ragassay.metrics.averaging import (
    answer_scores,
    interval_metrics,
    subset_interval_table,
)
from ragassay.metrics.conversations import (
    FollowupGapRow,
    conversation_success,
    followup_gap_rows,
    gap_table,
    subset_means,
)
from ragassay.metrics.corrected_rows import (
    answer_comparison_rows,
    answer_interval_rows,
)
from ragassay.metrics.declared import LEAST_FAITHFUL
from ragassay.metrics.judge_calibration import JudgeCalibration
from ragassay.metrics.names import (
    CONVERSATION_SUCCESS,
    CORRECTED_METRICS,
    REPORTED_ANSWER_METRICS,
    metric_key,
)
from ragassay.run_warnings import RunWarning, warnings_table
from ragassay.search.followups import REWRITE_PROMPT_VERSION
from ragassay.store.judge_schemas import PAIRWISE
from ragassay.tracking import BatchRecord, ConfigurationRecord, LoggedBatch, flatten_params, traces_below_url
from ragassay.work_span import WorkSpan


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
            # What its P(supported) is, as labels and calibrations compare it (learned_verdict.verdict_version).
            "judge_verdict_version": verdict_version(judge_model_id),
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
