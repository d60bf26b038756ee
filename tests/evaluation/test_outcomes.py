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
