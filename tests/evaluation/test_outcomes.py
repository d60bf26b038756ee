"""What an evaluation logs and reports, computed without Prefect or MLflow: small hand-made
rankings in, the record (child runs, the parent's summary) and the typed report out."""

from __future__ import annotations

import polars as pl
import pytest

from ragassay.config import RetrievalEvalConfig
from ragassay.evaluation import outcomes
from ragassay.evaluation.questions import EvalQuestion, GoldenContext
from ragassay.evaluation.retrieval_scoring import SearchedConfiguration, per_question_frame, score_rankings
from ragassay.metrics.averaging import IntervalRow, answer_scores
from ragassay.metrics.significance import ComparisonRow
from ragassay.run_warnings import RunWarning
from ragassay.tracking import LoggedBatch

QUESTIONS = [
    EvalQuestion("c", "q1", "one?", {("c", "a"): 1}),
    EvalQuestion("c", "q2", "two?", {("c", "b"): 1}),
    EvalQuestion("c", "q3", "three?", {("c", "c"): 1}),
]
# Configuration "good" finds every expected document first; "poor" finds one of three, second.
RANKINGS = {
    "good": [[("c", "a")], [("c", "b")], [("c", "c")]],
    "poor": [[("c", "x"), ("c", "a")], [("c", "x")], [("c", "y")]],
}
CONTEXT = GoldenContext(
    questions=[{"collection": "c", "id": q.query_id} for q in QUESTIONS],
    warnings=[RunWarning(metric="golden", question="c/q4", reason="no expected documents; excluded from every metric")],
    golden_digests={"c": "g"},
    golden_sizes={"c": 4},
    index_digests={"c": "i"},
    embedding_models={"c": "m"},
)


def _evaluated():
    config = RetrievalEvalConfig(
        collections=("c",),
        configurations=[{"label": label, "search_type": "fulltext"} for label in RANKINGS],
        ks=(1, 3),
        assertions=("good:recall@1>=0.9", "poor:recall@1>=0.9"),
        home="/nowhere",
    )
    per_question = {
        label: per_question_frame(
            label, QUESTIONS, ranking, score_rankings(QUESTIONS, ranking, config.metrics(), config.depth)
        )
        for label, ranking in RANKINGS.items()
    }
    searched = {label: SearchedConfiguration(ranking, pl.DataFrame(), {}, 0.5) for label, ranking in RANKINGS.items()}
    return config, per_question, searched, outcomes.summarize_retrieval(config, per_question)


def test_the_summary_holds_hand_computed_means_and_checks_the_bounds():
    _, _, _, summary = _evaluated()
    assert summary.means["good"]["recall@1"] == 1.0 and summary.means["poor"]["recall@1"] == 0.0
    assert summary.means["poor"]["recall@3"] == 1 / 3 and summary.means["poor"]["mrr"] == 0.5 / 3
    assert [a.passed for a in summary.assertions] == [True, False]
    assert set(summary.comparisons["metric"]) >= {"recall@1", "mrr"}


def test_the_record_has_one_child_per_configuration_and_the_summary_for_the_parent():
    config, per_question, searched, summary = _evaluated()
    shared = outcomes.retrieval_params(config, CONTEXT)
    record = outcomes.retrieval_record(config, CONTEXT, searched, per_question, summary, shared, "b1")
    assert [c.label for c in record.configurations] == ["good", "poor"]
    good = record.configurations[0]
    assert good.metrics["recall@1"] == 1.0 and good.metrics["questions_scored"] == 3
    assert good.params["ks"] == "[1, 3]" and good.params["config.search_type"] == "fulltext"
    assert record.headline["poor"]["mrr"] == summary.means["poor"]["mrr"]
    assert record.tables["warnings"]["warning"].to_list() == [
        "golden c/q4: no expected documents; excluded from every metric"
    ]
    assert set(record.figures) == {"retrieval_metrics", "retrieval_recall_at_k"}


def test_the_report_carries_the_summary_and_where_the_batch_is():
    config, _, searched, summary = _evaluated()
    logged = LoggedBatch(
        batch_id="b1",
        experiment="ragassay/c",
        parent_run_id="p",
        run_ids={"good": "r1", "poor": "r2"},
        tracking_uri="sqlite:///x",
        ui_command="mlflow ui",
    )
    report = outcomes.retrieval_report(config, CONTEXT, searched, summary, logged)
    assert report.run_ids == {"good": "r1", "poor": "r2"} and report.questions == 3
    assert report.warnings == CONTEXT.warnings and report.seconds_searching == {"good": 0.5, "poor": 0.5}
    rows = outcomes.published_intervals(report.intervals, ["recall@1"])
    assert {row["configuration"] for row in rows} == {"good", "poor"} and all(
        row["metric"] == "recall@1" for row in rows
    )


def _answers(label: str, rows: list[tuple[str, bool, str, float | None]]) -> pl.DataFrame:
    """An answers table of (query id, answerable, outcome, faithfulness) rows, every other metric null."""
    from ragassay.metrics.names import ANSWER_METRICS
    from ragassay.store.schemas import answers_spec

    return pl.DataFrame(
        [
            {
                "configuration": label,
                "query_collection": "c",
                "query_id": query_id,
                "answerable": answerable,
                "outcome": outcome,
                "faithfulness": faithfulness,
            }
            for query_id, answerable, outcome, faithfulness in rows
        ],
        schema=answers_spec(ANSWER_METRICS).schema,
    )


def test_answer_metrics_are_compared_pairwise_over_the_questions_both_scored_and_differences_warned():
    from ragassay.evaluation.answer_summary import answer_differences, question_set_warnings
    from ragassay.metrics.significance import compare_paired

    answers = {
        # "a" declined q3, so its faithfulness is unscored there; "b" answered all three.
        "a": _answers(
            "a", [("q1", True, "answered", 0.5), ("q2", True, "answered", 1.0), ("q3", True, "refused", None)]
        ),
        "b": _answers(
            "b", [("q1", True, "answered", 1.0), ("q2", True, "answered", 1.0), ("q3", True, "answered", 0.0)]
        ),
    }
    answers = {label: answer_scores(table) for label, table in answers.items()}  # per question, refusal beside
    differences = answer_differences(answers, seed=3)
    faithful = differences.filter(pl.col("metric") == "faithfulness").row(0, named=True)
    expected = compare_paired([0.5, 1.0], [1.0, 1.0], seed=3)
    assert (faithful["configuration_a"], faithful["configuration_b"], faithful["questions"]) == ("a", "b", 2)
    assert (faithful["mean_difference"], faithful["ci_low"], faithful["ci_high"], faithful["p_value"]) == (
        expected.mean_difference,
        expected.ci_low,
        expected.ci_high,
        expected.p_value,
    )
    # The false-refusal rate is scored on every answerable question: 1 for a's refusal.
    refusals = differences.filter(pl.col("metric") == "false_refusal_rate").row(0, named=True)
    assert refusals["questions"] == 3 and refusals["mean_difference"] == -1 / 3
    # A metric neither scored (no reference answers here) has nothing to compare.
    assert differences.filter(pl.col("metric") == "context_recall")["questions"].to_list() == [0]
    [warning] = question_set_warnings(answers)
    assert warning.configuration == "a vs b" and warning.metric == "faithfulness"
    assert "faithfulness 2 against 3 (2 both)" in warning.reason


def test_the_report_says_who_is_ahead_and_whether_that_is_significant():
    from ragassay.evaluation.interval_text import interval_lines
    from ragassay.evaluation.reports import ahead_lines

    def row(label, metric, mean):
        return IntervalRow(configuration=label, metric=metric, scored=3, mean=mean, ci_low=0.1, ci_high=0.9)

    intervals = [
        row("a", "faithfulness", 0.5),
        row("b", "faithfulness", 0.8),
        row("a", "false_refusal_rate", 0.1),
        row("b", "false_refusal_rate", 0.3),
        row("a", "answer_relevancy", 0.7),
        row("b", "answer_relevancy", 0.7),
    ]
    comparisons = [
        {"configuration_a": "a", "configuration_b": "b", "metric": "faithfulness", "questions": 3,
         "mean_difference": 0.3, "ci_low": 0.1, "ci_high": 0.5, "p_value": 0.01},
        {"configuration_a": "a", "configuration_b": "b", "metric": "false_refusal_rate", "questions": 3,
         "mean_difference": 0.2, "ci_low": -0.1, "ci_high": 0.4, "p_value": 0.4},
    ]  # fmt: skip
    faithfulness, relevancy, refusals = ahead_lines(
        intervals, [ComparisonRow(**c) for c in comparisons], ["faithfulness", "answer_relevancy", "false_refusal_rate"]
    )
    assert faithfulness == (
        "- faithfulness: **b** is ahead (0.800 against a's 0.500; paired difference +0.300 [+0.100, +0.500] over "
        "3 questions, p = 0.010: significant)"
    )
    assert relevancy == "- answer_relevancy: a and b tie at 0.700"
    # Lower is better for false refusals: a leads, and b - a is turned into a - b.
    assert refusals.startswith("- false_refusal_rate: **a** is ahead (0.100 against b's 0.300")
    assert "paired difference -0.200 [-0.400, +0.100]" in refusals and refusals.endswith("not significant)")
    table = interval_lines(intervals, ["faithfulness", "context_recall"])
    assert (
        table[0] == "| metric | a | b |"
        and table[2] == "| faithfulness | 0.500 [0.100, 0.900], 3 scored | 0.800 [0.100, 0.900], 3 scored |"
    )
    assert len(table) == 3, "a metric nobody scored has no row"


def test_who_is_ahead_of_configurations_that_scored_different_questions_is_said_on_the_questions_both_scored():
    from ragassay.evaluation.reports import ahead_lines

    def row(label, metric, mean, scored):
        return IntervalRow(configuration=label, metric=metric, scored=scored, mean=mean, ci_low=0.0, ci_high=1.0)

    # The screen issue 38 found: hybrid's 0.200 over 5 questions, fulltext's 0.000 over 3, and no
    # difference on the 3 both scored. Before: "hybrid is ahead (0.200 against fulltext's 0.000;
    # paired difference +0.000 ...)".
    intervals = [
        row("fulltext", "faithfulness", 0.0, 3),
        row("hybrid", "faithfulness", 0.2, 5),
        row("fulltext", "answer_relevancy", 0.4, 3),
        row("hybrid", "answer_relevancy", 0.6, 5),
    ]
    comparisons = [
        {"configuration_a": "fulltext", "configuration_b": "hybrid", "metric": "faithfulness", "questions": 3,
         "mean_difference": 0.0, "ci_low": 0.0, "ci_high": 0.0, "p_value": 1.0},
        # On the questions both scored fulltext is the better one: hybrid - fulltext = -0.1.
        {"configuration_a": "fulltext", "configuration_b": "hybrid", "metric": "answer_relevancy", "questions": 3,
         "mean_difference": -0.1, "ci_low": -0.3, "ci_high": 0.05, "p_value": 0.2},
    ]  # fmt: skip
    faithfulness, relevancy = ahead_lines(
        intervals, [ComparisonRow(**c) for c in comparisons], ["faithfulness", "answer_relevancy"]
    )
    assert faithfulness == (
        "- faithfulness: hybrid and fulltext tie on the 3 questions both scored (paired difference +0.000 "
        "[+0.000, +0.000], p = 1.000: not significant); their means, hybrid's 0.200 over 5 questions and "
        "fulltext's 0.000 over 3, are over different questions"
    )
    assert relevancy == (
        "- answer_relevancy: on the 3 questions both scored, **fulltext** is ahead of hybrid (paired difference "
        "+0.100 [-0.050, +0.300], p = 0.200: not significant); their means, hybrid's 0.600 over 5 questions and "
        "fulltext's 0.400 over 3, are over different questions"
    )


def test_a_tie_on_one_question_reads_plus_zero_and_one_question():
    """The pipeline report's screen (SmolLM2 judging, one question both scored): a tie read as the
    runner-up against the leader was written "-0.000 [-0.000, -0.000]" "on the 1 questions"."""
    from ragassay.evaluation.interval_text import counted, signed, signed_interval
    from ragassay.evaluation.reports import ahead_lines

    intervals = [
        IntervalRow(configuration="fulltext", metric="faithfulness", scored=1, mean=1.0, ci_low=1.0, ci_high=1.0),
        IntervalRow(configuration="hybrid", metric="faithfulness", scored=2, mean=0.5, ci_low=0.0, ci_high=1.0),
    ]
    comparisons = [
        ComparisonRow(configuration_a="fulltext", configuration_b="hybrid", metric="faithfulness", questions=1,
                      mean_difference=0.0, ci_low=0.0, ci_high=0.0, p_value=1.0),
    ]  # fmt: skip
    [line] = ahead_lines(intervals, comparisons, ["faithfulness"])
    assert line.startswith(
        "- faithfulness: fulltext and hybrid tie on the question both scored (paired difference +0.000 [+0.000, +0.000]"
    )
    assert "fulltext's 1.000 over 1 question and hybrid's 0.500 over 2" in line and "-0.000" not in line
    assert (signed(-0.0), signed(-1e-17), signed(-0.25, 4), signed_interval(-0.0, 0.1)) == (
        "+0.000",
        "+0.000",
        "-0.2500",
        "[+0.000, +0.100]",
    )
    assert (counted(1, "dialogue"), counted(12, "dialogue")) == ("1 dialogue", "12 dialogues")


def test_judged_metrics_carry_their_corrected_estimate_in_intervals_differences_metrics_and_reports():
    from ragassay.evaluation.answer_summary import answer_differences, answer_intervals
    from ragassay.evaluation.interval_text import (
        RAW_AND_CORRECTED,
        configuration_markdown,
        interval_lines,
        judge_error_lines,
    )
    from ragassay.evaluation.judge_correction import (
        calibration_summary,
        calibration_warnings,
        clipped_corrections,
        corrected_comparisons,
        corrected_intervals,
        corrected_metrics,
        correction_fit_warnings,
    )
    from ragassay.metrics.corrected_rows import answer_interval_rows
    from ragassay.metrics.judge_calibration import JudgeCalibration
    from ragassay.metrics.judge_error import corrected_difference, corrected_mean, simple_strata

    answers = {
        "a": _answers(
            "a", [("q1", True, "answered", 0.5), ("q2", True, "answered", 1.0), ("q3", True, "answered", 0.0)]
        ),
        "b": _answers(
            "b", [("q1", True, "answered", 1.0), ("q2", True, "answered", 1.0), ("q3", True, "answered", 1.0)]
        ),
    }
    strata = simple_strata([True] * 40 + [False] * 30, [True] * 36 + [False] * 4 + [True] * 6 + [False] * 24)
    calibration = JudgeCalibration("labels", "70 statements people labelled", tuple(strata), "judge", "p/4", 0.85)
    answers = {label: answer_scores(table) for label, table in answers.items()}  # per question, refusal beside
    intervals = corrected_intervals(answer_intervals(answers), answers, calibration)
    row = intervals.filter((pl.col("configuration") == "a") & (pl.col("metric") == "faithfulness")).row(0, named=True)
    expected = corrected_mean([0.5, 1.0, 0.0], strata)
    assert (row["mean"], row["corrected"], row["corrected_low"], row["corrected_high"]) == (
        0.5,
        expected.estimate,
        expected.low,
        expected.high,
    )
    refusal = intervals.filter(pl.col("metric") == "false_refusal_rate").row(0, named=True)
    assert refusal["corrected"] is None and refusal["corrected_low"] is None, "refusals are counted, not judged"
    assert corrected_metrics(intervals)["a"]["faithfulness_corrected_low"] == expected.low
    differences = corrected_comparisons(answer_differences(answers), answers, calibration)
    faithful = differences.filter(pl.col("metric") == "faithfulness").row(0, named=True)
    paired = corrected_difference([0.5, 1.0, 0.0], [1.0, 1.0, 1.0], strata)
    assert faithful["corrected"] == paired.estimate and faithful["mean_difference"] == paired.raw
    assert "corrected " in interval_lines(answer_interval_rows(intervals), ["faithfulness"])[2]
    # b's judge said "supported" for every statement of its three answers, more often than its
    # sensitivity (0.9) allows: the estimate is clipped to 1, its interval is not a point there,
    # and a warning names the mean that the error rates cannot produce.
    perfect = intervals.filter((pl.col("configuration") == "b") & (pl.col("metric") == "faithfulness")).row(
        0, named=True
    )
    assert perfect["corrected"] == 1.0 and perfect["corrected_low"] < 0.8 and perfect["corrected_high"] == 1.0
    [fit] = correction_fit_warnings(intervals, calibration)
    assert "b faithfulness 1.000 (above Se)" in fit.reason and "a faithfulness" not in fit.reason
    b_rows = answer_interval_rows(intervals.filter(pl.col("configuration") == "b"))
    [(clipped, side)] = clipped_corrections(b_rows, calibration)
    assert clipped.metric == "faithfulness" and side == "above Se"
    description = configuration_markdown("answers/b", b_rows, ["faithfulness"], "rests on labels", "clipped: why")
    assert description.split("\n")[:2] == ["**answers/b**", ""] and "| faithfulness | 1.000 [" in description
    assert description.rstrip().endswith("\n\nrests on labels\n\nclipped: why") and RAW_AND_CORRECTED in description
    summary = calibration_summary(calibration)
    assert summary.separable and summary.sensitivity == pytest.approx(36 / 40)
    assert "this collection's labels" in judge_error_lines(summary)[0]
    # Without labels the judged metrics stay the judge's own, and the report and a warning say so.
    bare = corrected_intervals(answer_intervals(answers), answers, None)
    assert bare["corrected_low"].null_count() == bare.height
    [warning] = calibration_warnings(None, "judge")
    assert "the judge's own numbers" in warning.reason and "No labels" in judge_error_lines(None)[0]
    assert "depends on the documents" not in warning.reason, "a judge never measured elsewhere has no rates to cite"
    few = JudgeCalibration(
        "labels", "12 statements", tuple(simple_strata([True] * 9 + [False] * 3, [True] * 12)), "j", "p", 0.5
    )
    reasons = " | ".join(w.reason for w in calibration_warnings(few, "j"))
    assert "fewer than 10 of a class" in reasons and "cannot tell" in reasons


def test_a_regression_gate_bounds_the_judge_corrected_drop():
    from ragassay.errors import ConfigError
    from ragassay.gates.regression import compare_batches, parse_drop_bound
    from ragassay.metrics.judge_error import corrected_difference, simple_strata

    baseline = {"hybrid": _answers("hybrid", [(f"q{i}", True, "answered", 1.0) for i in range(12)])}
    candidate = {"hybrid": _answers("hybrid", [(f"q{i}", True, "answered", 1.0 if i % 3 else 0.0) for i in range(12)])}
    strata = simple_strata([True] * 40 + [False] * 30, [True] * 36 + [False] * 4 + [True] * 6 + [False] * 24)
    bounds = [parse_drop_bound("faithfulness=0.2"), parse_drop_bound("faithfulness.corrected=0.2")]
    raw, corrected = compare_batches(baseline, candidate, bounds, calibration=strata).to_dicts()
    expected = corrected_difference([1.0] * 12, [1.0 if i % 3 else 0.0 for i in range(12)], strata)
    assert raw["drop"] == 4 / 12 and corrected["drop"] == -expected.estimate
    assert corrected["drop"] > raw["drop"], "the judge's error shrinks a difference; corrected, it is larger"
    assert corrected["p_value"] == raw["p_value"], "the same sign, the same test"
    with pytest.raises(ConfigError, match="holds no labels"):
        compare_batches(baseline, candidate, bounds[1:])
    with pytest.raises(ConfigError, match="only a judged metric"):
        parse_drop_bound("answer_relevancy.corrected=0.1")


def test_the_logged_calibration_table_reads_back_as_the_strata_it_was_written_from():
    from ragassay.evaluation.judge_correction import calibration_record
    from ragassay.gates.regression import calibration_strata
    from ragassay.metrics.judge_calibration import JudgeCalibration
    from ragassay.metrics.judge_error import LabelStratum

    strata = (LabelStratum("supported", 900, 18, 0, 2, 0), LabelStratum("unsupported", 100, 0, 5, 0, 15))
    _, table = calibration_record(JudgeCalibration("labels", "40 labels", strata, "judge", "p/4", 0.85))
    assert tuple(calibration_strata(table)) == strata, "what `ragassay gate` corrects with is what was logged"
