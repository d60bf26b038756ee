"""The workspace's own MLflow store: a workspace moved or copied keeps its runs' artifacts inside it."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import polars as pl
import pytest

from ragassay import tracking


def _log_one_run(home, label: str) -> str:
    mlflow_client = tracking.client(home)
    experiment_id = tracking.ensure_experiment(mlflow_client, home, ["sample"])
    run = mlflow_client.create_run(experiment_id, run_name=label)
    tracking.log_tables(mlflow_client, run.info.run_id, {"answers": pl.DataFrame({"query_id": [label]})})
    tracking.finish(mlflow_client, run.info.run_id)
    return run.info.run_id


def test_runs_logged_after_the_workspace_moved_keep_their_artifacts_inside_it(tmp_path):
    before, after = tmp_path / "wsA", tmp_path / "wsB"
    first = _log_one_run(before, "first")
    shutil.move(before, after)

    second = _log_one_run(after, "second")
    assert not before.exists(), "nothing is written into the old place"
    stored = sorted(path.name for path in (after / "mlartifacts").rglob("answers.parquet"))
    assert len(stored) == 2
    # Both runs, the one logged before the move too, read their tables from the moved workspace.
    assert tracking.download_table(after, first, "answers")["query_id"].to_list() == ["first"]
    assert tracking.download_table(after, second, "answers")["query_id"].to_list() == ["second"]
    experiment = tracking.client(after).get_experiment_by_name(tracking.experiment_name(["sample"]))
    assert experiment.artifact_location.startswith((after / "mlartifacts").as_uri())


def test_a_report_longer_than_a_description_holds_is_cut_at_a_heading_and_kept_whole_as_an_artifact(tmp_path):
    """MLflow keeps 8,000 characters of a tag and cuts a longer description wherever that falls
    (the sample pipeline's report is ~13,000): the description shows whole sections and says
    where the rest is; report.md holds every character."""
    from mlflow.utils.validation import MAX_TAG_VAL_LENGTH

    from ragassay.tracking.write import DESCRIPTION_LIMIT

    assert DESCRIPTION_LIMIT == MAX_TAG_VAL_LENGTH
    table = "\n".join(f"| configuration {i} | 0.{i:03d} [0.100, 0.900] |" for i in range(60))
    sections = [f"## Section {n}\n\n| configuration | recall@5 |\n|---|---|\n{table}" for n in range(4)]
    report = "# Pipeline run on `sample`\n\n" + "\n\n".join(sections)
    assert len(report) > MAX_TAG_VAL_LENGTH
    run_id = _log_one_run(tmp_path, "long")
    tracking.describe_run(tmp_path, run_id, report)

    shown = tracking.client(tmp_path).get_run(run_id).data.tags[tracking.DESCRIPTION_TAG]
    assert len(shown) <= MAX_TAG_VAL_LENGTH
    kept, note = shown.rsplit("\n\n", 1)
    assert report.startswith(kept) and report[len(kept) :].startswith("\n\n## Section"), "cut before a heading"
    assert "## Section 1" in kept and "## Section 2" not in kept, "Section 2 does not fit whole"
    assert f"whole report ({len(report):,} characters" in note and "`report.md` artifact" in note
    whole = tracking.client(tmp_path).download_artifacts(run_id, "report.md", str(tmp_path))
    assert Path(whole).read_text() == report
    # A report that fits is shown whole.
    assert tracking.fitted_description(kept) == kept


def test_an_answered_question_is_a_trace_of_its_run_with_passages_verdicts_and_assessments(tmp_path):
    from ragassay.answer.grounding import AnsweredStatement, Citation, GroundedAnswer, Source
    from ragassay.evaluation.answer_summary import AnsweredQuestion
    from ragassay.evaluation.answer_traces import TraceSettings, answer_traces
    from ragassay.evaluation.questions import EvalQuestion
    from ragassay.llm.structured import Usage
    from ragassay.metrics.answer_metric import AnswerJudgement
    from ragassay.metrics.answer_metrics.answer_correctness import CORRECT_THRESHOLDS, answer_correctness
    from ragassay.metrics.answer_metrics.faithfulness import faithfulness
    from ragassay.metrics.answer_metrics.mean_support import mean_support
    from ragassay.metrics.answers import Scored
    from ragassay.metrics.names import ANSWER_METRICS

    home = tmp_path / "workspace"
    sources = [
        Source(1, "sample", "hives.md", "hives.md#0", 0, 30, None, "Hive 1 was inspected on Monday."),
        Source(2, "sample", "smoke.md", "smoke.md#2", 10, 40, None, "Smoke calms the bees."),
    ]
    statement = AnsweredStatement("Hive 1 was inspected on Monday.", [Citation(1, "hives.md", "hives.md#0", 0, 30, "")])
    answer = GroundedAnswer("When was hive 1 inspected?", "answered", "answered", [statement], sources)
    question = EvalQuestion("sample", "g1", answer.question, {("sample", "hives.md"): 1}, "On Monday.")
    # The question took 1.0 s, 0.75 s of it the answer model's; judging it took 2.5 s of the judge's.
    usage = Usage(calls=1, prompt_tokens=120, completion_tokens=12, seconds=0.75)
    answered = AnsweredQuestion(question, True, answer, usage, 1.0)
    verdicts = [
        {"metric": "faithfulness", "statement_index": 0, "statement": statement.text, "source_number": None,
         "verdict": "unsupported", "p_supported": 0.4, "error": None, "seconds": 1.5},
        {"metric": "citation_precision", "statement_index": 0, "statement": statement.text, "source_number": 1,
         "verdict": "supported", "p_supported": 0.97, "error": None, "seconds": 1.0},
        {"metric": "answer_correctness", "statement_index": -1, "statement": statement.text, "source_number": None,
         "verdict": "correct", "p_supported": None, "p_correct": 0.9, "error": None, "seconds": 0.0},
    ]  # fmt: skip
    scores = {
        "faithfulness": faithfulness([False]),
        "context_recall": Scored(None, "no reference answer"),
        "answer_relevancy": Scored(0.8, None, 1),
        "citation_precision": Scored(1.0, None, 1),
        "answer_correctness": answer_correctness(0.9, 0.5),
        "mean_support": mean_support([0.4]),
    }
    judgement = AnswerJudgement({name: scores[name] for name in ANSWER_METRICS}, verdicts)
    settings = TraceSettings("hybrid", "b1", "smollm2:abc", "qwen2.5-1.5b:def", 0.85, "support-probability/3")
    traces = answer_traces([answered], {answered.key: judgement}, {answered.key: 2.5}, settings)

    mlflow_client = tracking.client(home)
    experiment_id = tracking.ensure_experiment(mlflow_client, home, ["sample"])
    run = mlflow_client.create_run(experiment_id, run_name="answers/hybrid")
    before = os.environ.get("MLFLOW_TRACKING_URI")
    tracking.log_traces(home, experiment_id, run.info.run_id, traces)
    assert os.environ.get("MLFLOW_TRACKING_URI") == before, "the process's tracking URI is put back"

    # Found through MLflow's own search, by the run, as its Traces tab finds them.
    [trace] = tracking.client(home).search_traces(locations=[experiment_id], run_id=run.info.run_id)
    assert [t.info.trace_id for t in tracking.find_traces(home, run.info.run_id)] == [trace.info.trace_id]
    spans = {span.name: span for span in trace.data.spans}
    retrieved = spans["retrieve"]
    assert retrieved.span_type == "RETRIEVER" and [d["metadata"]["doc_uri"] for d in retrieved.outputs] == [
        "hives.md",
        "smoke.md",
    ]
    assert retrieved.outputs[1]["page_content"] == "Smoke calms the bees."
    assert (
        spans["answer"].attributes["prompt_tokens"] == 120 and spans["answer"].attributes["model_id"] == "smollm2:abc"
    )
    # The trace is named by its configuration, question and batch; a verdict's span by its statement.
    assert spans["hybrid · sample/g1 · batch b1"].span_type == "CHAIN"
    cited = spans["citation_precision 1: Hive 1 was inspected on Monday."]
    assert cited.inputs["passage"] == "Hive 1 was inspected on Monday." and cited.attributes["p_supported"] == 0.97
    faithful = spans["faithfulness 1: Hive 1 was inspected on Monday."]
    assert "[2] Smoke calms the bees." in faithful.inputs["passage"], "judged against the whole context"
    assert faithful.outputs == {"verdict": "unsupported", "p": 0.4, "threshold": 0.85, "error": None}
    # The answer-correctness verdict keeps its own probability, P(correct), under its own name,
    # beside the threshold measured for this judge model.
    graded = spans["answer_correctness: whole answer"]
    assert graded.attributes["p_correct"] == 0.9 and "p_supported" not in graded.attributes
    threshold = CORRECT_THRESHOLDS["qwen2.5-1.5b"]
    assert graded.outputs == {"verdict": "correct", "p": 0.9, "threshold": threshold, "error": None}
    assessments = {a.name: a for a in trace.info.assessments}
    assert assessments["faithfulness"].value == 0.0
    assert assessments["faithfulness"].rationale == "not supported: Hive 1 was inspected on Monday."
    assert assessments["faithfulness"].source.source_id == "qwen2.5-1.5b:def (support-probability/3)"
    assert assessments["answer_correctness"].value == 1.0 and assessments["refusal"].value == "answered"
    # Left out by design: no value and why, no error (an error is the judge's unreadable output).
    assert assessments["context_recall"].value is None and assessments["context_recall"].error is None
    assert assessments["context_recall"].rationale == "not scored: no reference answer"
    # The golden set's side beside what it is compared with, not as expectations (which would push
    # faithfulness out of the run's Traces table): only scores are assessments.
    assert retrieved.attributes["expected_documents"] == ["sample/hives.md"]
    assert spans["answer"].attributes["reference_answer"] == "On Monday."
    assert set(assessments) == {*ANSWER_METRICS, "refusal"}
    assert trace.info.tags["ragassay.query_id"] == "sample/g1"
    # Logged after the work, each step lasts what it took, end to end (MLflow's durations; ms).
    lasted = {name: (span.end_time_ns - span.start_time_ns) / 1e9 for name, span in spans.items()}
    assert (lasted["retrieve"], lasted["answer"], lasted["judge"]) == pytest.approx((0.25, 0.75, 2.5), abs=1e-6)
    assert spans["retrieve"].end_time_ns <= spans["answer"].start_time_ns <= spans["retrieve"].end_time_ns + 1
    assert spans["answer"].end_time_ns <= spans["judge"].start_time_ns <= spans["answer"].end_time_ns + 1
    # Each verdict lasts its own model seconds, in the order they were judged, within the judge's.
    verdict_spans = sorted((s for s in trace.data.spans if s.span_type == "EVALUATOR"), key=lambda s: s.start_time_ns)
    assert [s.name.split(" ")[0] for s in verdict_spans] == [
        "faithfulness",
        "citation_precision",
        "answer_correctness:",
    ]
    assert [(s.end_time_ns - s.start_time_ns) / 1e9 for s in verdict_spans] == pytest.approx([1.5, 1.0, 0.0], abs=1e-6)
    assert spans["judge"].start_time_ns <= verdict_spans[0].start_time_ns
    assert verdict_spans[-1].end_time_ns <= spans["judge"].end_time_ns
    assert trace.info.execution_duration == pytest.approx(3500, abs=1)


def test_a_batch_failed_on_its_assertions_ends_failed_and_stays_a_whole_batch_for_the_gate(tmp_path):
    """MLflow's runs list shows a run's status at a glance: a batch whose assertions failed ends
    FAILED (its red mark), not a green "Finished". It is still a whole measurement, so the gate's
    newest-finished choice takes it; a batch a stage failed in is never taken."""
    mlflow_client = tracking.client(tmp_path)
    whole, broken, passed = (tracking.open_batch(tmp_path, ["sample"], "retrieval", {}, {}) for _ in range(3))
    tracking.log_verdict(mlflow_client, passed, "retrieval", "passed", [{"assertion": "a:mrr>=0"}])
    tracking.finish(mlflow_client, passed.parent_run_id, tracking.verdict_status("passed"))
    tracking.log_verdict(mlflow_client, whole, "retrieval", "failed", [{"assertion": "a:mrr>=1"}])
    tracking.finish(mlflow_client, whole.parent_run_id, tracking.verdict_status("failed"))
    tracking.mark_failed(tmp_path, broken, "answers", "the judge crashed")

    status = {batch.batch_id: tracking.batch_status(tmp_path, batch.batch_id) for batch in (whole, broken, passed)}
    assert status == {whole.batch_id: "FAILED", broken.batch_id: "FAILED", passed.batch_id: "FINISHED"}
    # Newest first: `broken` was opened after `whole`, and is passed over.
    assert tracking.latest_batch(tmp_path, "sample", excluding=passed.batch_id) == whole.batch_id
    assert tracking.latest_batch(tmp_path, "sample", excluding=whole.batch_id) == passed.batch_id


def test_the_saved_view_puts_each_metrics_interval_beside_it_low_then_high():
    headline = {"hybrid": {"recall@5": 0.8, "faithfulness": 0.7, "faithfulness_corrected": 0.75, "mrr": 0.6}}
    logged = {
        "lo/recall@5",
        "hi/recall@5",
        "hi/faithfulness",
        "lo/faithfulness",
        "faithfulness_corrected_low",
        "faithfulness_corrected_high",
    }
    assert tracking.runs_view_columns(headline, logged) == [
        f"metrics.`{name}`"
        for name in (
            "recall_at_5",
            "lo/recall_at_5",
            "hi/recall_at_5",
            "faithfulness",
            "lo/faithfulness",
            "hi/faithfulness",
            "faithfulness_corrected",
            "faithfulness_corrected_low",
            "faithfulness_corrected_high",
            "mrr",
        )
    ]


def test_the_store_file_read_without_mlflow_gives_what_mlflow_search_gives(tmp_path):
    """runs list reads the workspace's SQLite store with the standard library (tracking/local_store.py):
    the same runs as MLflow's own search, in the same order, with the same tags, params and latest
    metrics; a deleted run, a run of another experiment and a run without ragassay's kind tag are
    in neither."""
    import math

    from ragassay import tracking
    from ragassay.tracking.local_store import store_file, stored_runs

    home = tmp_path / "workspace"
    mlflow_client = tracking.client(home)
    experiment = tracking.ensure_experiment(mlflow_client, home, ["sample"])
    other = mlflow_client.create_experiment("not-ragassay")
    made = []
    for index, (kind, role) in enumerate(
        [("retrieval", "batch"), ("retrieval", "configuration"), ("answers", "batch")]
    ):
        tags = {tracking.TAG_KIND: kind, tracking.TAG_ROLE: role, tracking.TAG_BATCH: f"b{index % 2}"}
        run = mlflow_client.create_run(experiment, tags=tags, start_time=1_000 + index)
        mlflow_client.log_param(run.info.run_id, "k", str(index))
        for step, value in enumerate((0.1, 0.5 + index)):
            mlflow_client.log_metric(run.info.run_id, "recall_at_5", value, step=step)
        mlflow_client.log_metric(run.info.run_id, "empty", math.nan)
        made.append(run.info.run_id)
    mlflow_client.set_terminated(made[0], "FINISHED")
    deleted = mlflow_client.create_run(experiment, tags={tracking.TAG_KIND: "retrieval"})
    mlflow_client.delete_run(deleted.info.run_id)
    mlflow_client.create_run(experiment, tags={"note": "no kind"})
    mlflow_client.create_run(other, tags={tracking.TAG_KIND: "retrieval"})

    def seen(runs) -> list[tuple]:
        return [
            (
                r.info.run_id,
                r.info.run_name,
                r.info.experiment_id,
                r.info.user_id,
                r.info.lifecycle_stage,
                r.info.status,
                r.info.start_time,
                r.info.end_time,
                r.info.artifact_uri,
                dict(r.data.tags),
                dict(r.data.params),
                {k: "nan" if math.isnan(v) else v for k, v in r.data.metrics.items()},
            )
            for r in runs
        ]

    experiments = [e.experiment_id for e in mlflow_client.search_experiments() if e.name.startswith("ragassay/")]
    for filters, tags in [((), {}), ((f"tags.`{tracking.TAG_BATCH}` = 'b0'",), {tracking.TAG_BATCH: "b0"})]:
        query = " and ".join([f"tags.`{tracking.TAG_KIND}` != ''", *filters])
        by_mlflow = mlflow_client.search_runs(experiments, query, order_by=["attributes.start_time DESC"])
        by_file = stored_runs(store_file(tracking.tracking_uri(home)), tags)
        assert seen(by_file) == seen(by_mlflow) and len(by_file) == (3 if not tags else 2)
    assert tracking.get_run(home, made[1]).data.metrics["recall_at_5"] == 1.5
    assert tracking.get_run(home, "no-such-run") is None
    # A workspace with no store yet has no runs, and reading creates none.
    assert stored_runs(tmp_path / "elsewhere" / "mlflow.db") == []
    assert not (tmp_path / "elsewhere").exists()


def _schema(database: Path) -> list[tuple]:
    """Each table's and index's definition as a set of its lines: the order of a table's CHECK
    constraints in MLflow's migrations depends on what else the process imported (Prefect's server
    modules reorder them), and means nothing."""
    import sqlite3

    with sqlite3.connect(database) as store:
        rows = store.execute("SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'")
        return sorted(
            (kind, name, tuple(sorted(line.strip().rstrip(",") for line in (sql or "").splitlines())))
            for kind, name, sql in rows
        )


def test_a_new_workspace_store_starts_as_the_set_up_template_and_is_the_store_mlflow_would_make(tmp_path):
    from mlflow.tracking import MlflowClient

    from ragassay.tracking.client import seed_new_store, store_template_path

    assert store_template_path().is_file(), "scripts/setup.sh migrates the template once per environment"
    migrated = tmp_path / "migrated" / "mlflow.db"
    migrated.parent.mkdir()
    by_mlflow = MlflowClient(tracking_uri=f"sqlite:///{migrated}")
    by_mlflow.search_experiments()

    home = tmp_path / "ws"
    run_id = _log_one_run(home, "first")
    # The same tables, indexes and schema revision as a store MLflow migrated itself, and MLflow's
    # own Default experiment where MLflow puts it (not where the template was written).
    assert _schema(home / "mlflow.db") == _schema(migrated)
    seeded = tracking.client(home)
    assert seeded.get_experiment("0").artifact_location == by_mlflow.get_experiment("0").artifact_location
    assert tracking.ensure_experiment(seeded, home, ["sample"]) == "1"
    # A store that exists is never replaced: its runs stay.
    assert seed_new_store(home / "mlflow.db") is False
    assert tracking.download_table(home, run_id, "answers")["query_id"].to_list() == ["first"]
