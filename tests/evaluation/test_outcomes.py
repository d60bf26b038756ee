"""What an evaluation logs and reports, computed without Prefect or MLflow: small hand-made
rankings in, the record (child runs, the parent's summary) and the typed report out."""

from __future__ import annotations

import polars as pl

from ragassay.config import RetrievalEvalConfig
from ragassay.evaluation import outcomes
from ragassay.evaluation.questions import EvalQuestion, GoldenContext
from ragassay.evaluation.retrieval_scoring import SearchedConfiguration, per_question_frame, score_rankings
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
    assert [a["passed"] for a in summary.assertions] == [True, False]
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
    from ragassay.store.schemas import ANSWERS

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
        schema=ANSWERS.schema,
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
    from ragassay.evaluation.reports import ahead_lines, interval_lines

    def row(label, metric, mean):
        return {"configuration": label, "metric": metric, "scored": 3, "mean": mean, "ci_low": 0.1, "ci_high": 0.9}

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
        intervals, comparisons, ["faithfulness", "answer_relevancy", "false_refusal_rate"]
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
        and table[2] == "| faithfulness | 0.500 [0.100, 0.900] (3) | 0.800 [0.100, 0.900] (3) |"
    )
    assert len(table) == 3, "a metric nobody scored has no row"
