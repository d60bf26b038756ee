"""A team's own RAG system as a configuration: ragassay's own search wrapped as a Python callable,
served by a real HTTP server, replayed from the records it wrote, and given as a TREC run; each
scored like the built-in configuration it wraps, with pytrec_eval parity, and with the faults a
real service has counted and named, never dropped."""

from __future__ import annotations

import json
import random

import numpy as np
import polars as pl
import pytest
import pytrec_eval

from flows.eval_retrieval import eval_retrieval_flow
from ragassay import tracking
from ragassay.config import RetrievalEvalConfig
from ragassay.config_errors import parse_config
from ragassay.errors import ConfigError
from ragassay.golden.store import add_from_file, load_golden
from ragassay.store.workspace import collection_paths, load_documents
from ragassay.systems.columns import COLUMN_PRESETS
from ragassay.systems.records import read_records
from ragassay.systems.records_system import RecordsSystem
from ragassay.systems.trec import read_trec_run
from tests.conftest import SAMPLE
from tests.helpers import report_of
from tests.systems import served_search
from tests.systems.served_search import Faults, SearchServer

METRICS = ("recall@5", "ndcg@10", "mrr", "hit_rate@3")


def _evaluate(home, configurations, **settings):
    config = parse_config(
        RetrievalEvalConfig, collections=["sample"], configurations=configurations, home=home, **settings
    )
    return report_of(eval_retrieval_flow, config)


def _per_question(home, report, label) -> pl.DataFrame:
    return tracking.download_table(home, report.run_ids[label], "per_question").sort("query_id")


def _served(server: SearchServer, **settings) -> dict:
    """The `http` kind asking the served search: the question and its id in the body, the
    ranked document ids out of the response; settings add to or replace these."""
    return {
        "kind": "http",
        "url": server.url,
        "body": {"query": "{{question}}", "id": "{{query_id}}"},
        "response": {"documents": "$.sources[*].doc_id"},
        **settings,
    }


@pytest.fixture(scope="module")
def served(sample_home):
    add_from_file(sample_home, "sample", SAMPLE / "golden.jsonl")
    served_search.HOME = sample_home
    return sample_home


@pytest.mark.flows
@pytest.mark.slow
def test_a_python_system_an_http_system_and_their_records_score_as_the_search_they_wrap(served, tmp_path):
    home = served
    with SearchServer() as server:
        http = _served(
            server, response={"documents": "$.sources[*].doc_id", "contexts": "$.sources[*].text"}, cache=False
        )
        report = _evaluate(
            home,
            [
                {"label": "built-in", "search_type": "fulltext"},
                {"label": "python", "system": {"kind": "python", "target": "tests.systems.served_search:search"}},
                {
                    "label": "python-async",
                    "system": {"kind": "python", "target": "tests.systems.served_search:search_async"},
                },
                {"label": "http", "system": http},
            ],
        )
    built_in = _per_question(home, report, "built-in")
    for label in ("python", "python-async", "http"):
        theirs = _per_question(home, report, label)
        assert theirs.drop("configuration").equals(built_in.drop("configuration")), label
        assert report.model_costs[label]["coverage"] == 1.0 and report.model_costs[label]["asked"] == built_in.height
        assert report.model_costs[label]["latency_p95_ms"] >= report.model_costs[label]["latency_p50_ms"] > 0
    # The records a system produced, kept and re-scored later as the records kind.
    records = tracking.download_table(home, report.run_ids["http"], "records")
    saved = tmp_path / "http-records.jsonl"
    saved.write_text(
        "".join(
            json.dumps({"query_id": row["query_id"], "question": row["question"], "documents": row["returned_ids"]})
            + "\n"
            for row in records.iter_rows(named=True)
        )
    )
    replayed = _evaluate(home, [{"label": "last-week", "system": {"kind": "records", "path": str(saved)}}])
    assert _per_question(home, replayed, "last-week").drop("configuration").equals(built_in.drop("configuration"))
    comparisons = pl.DataFrame([c.model_dump() for c in report.comparisons]).filter(pl.col("configuration_b") == "http")
    assert (comparisons["mean_difference"] == 0).all() and (comparisons["p_value"] == 1).all()


@pytest.mark.flows
@pytest.mark.slow
def test_faults_of_a_real_server_are_counted_named_and_kept_as_rows(served):
    home = served
    questions = load_golden(collection_paths(home, "sample"))["entry_id"].to_list()
    faults = Faults()
    flaky, throttled, slow, malformed, unmapped, unknown = questions[:6]
    faults.failures_before_success = {flaky: [500, 503], throttled: [429]}
    faults.slow, faults.malformed, faults.without_sources, faults.unknown_ids = (
        {slow},
        {malformed},
        {unmapped},
        {unknown},
    )
    with SearchServer(faults) as server:
        system = _served(
            server,
            body={"query": "[[question]]", "id": "[[query_id]]"},  # the prefect.yaml spelling
            timeout_seconds=1,
            max_retries=2,
            concurrency=4,
            cache=False,
        )
        report = _evaluate(
            home,
            [{"label": "fulltext", "search_type": "fulltext"}, {"label": "prod", "system": system}],
            assertions=["prod:coverage>=0.98"],
        )
    costs = report.model_costs["prod"]
    asked = len(questions)
    assert (costs["asked"], costs["answered"]) == (asked, asked - 3)
    assert (costs["errors/timeout"], costs["errors/malformed"], costs["errors/mapping"]) == (1, 1, 1)
    assert costs["unknown_doc_ids"] > 0
    assert faults.calls[flaky] == 3 and faults.calls[throttled] == 2, "500s and 429s are retried"
    assert faults.calls[slow] == 3, "a timeout is retried, then kept as the row's error"
    per_question = _per_question(home, report, "prod")
    failed = per_question.filter(pl.col("query_id").is_in([slow, malformed, unmapped]))
    assert failed.height == 3 and failed["recall@5"].is_null().all(), "failed calls are rows, in no mean"
    expected_mean = per_question["recall@5"].drop_nulls().mean()
    assert report.means["prod"]["recall@5"] == pytest.approx(expected_mean)
    warnings = " | ".join(w.text() for w in report.warnings)
    assert "response.documents $.sources[*].doc_id matched nothing" in warnings
    assert "kb://" in warnings and "no document of the collection" in warnings
    [assertion] = report.assertions
    assert assertion.assertion == "prod:coverage>=0.98" and not assertion.passed
    assert assertion.value == pytest.approx((asked - 3) / asked)
    records = tracking.download_table(home, report.run_ids["prod"], "records")
    assert records.height == asked and set(records.filter(~pl.col("answered"))["error_kind"]) == {
        "timeout",
        "malformed",
        "mapping",
    }


@pytest.mark.flows
def test_a_trec_run_scores_as_pytrec_eval_scores_it_ties_included(served, tmp_path):
    home = served
    golden = load_golden(collection_paths(home, "sample"))
    documents = load_documents(collection_paths(home, "sample"))["doc_id"].to_list()
    generator = random.Random(5)
    run_file, trec_run = tmp_path / "run.trec", {}
    lines = []
    for entry_id in golden["entry_id"].to_list():
        chosen = generator.sample(documents, 12)
        # Few distinct scores, so ties are common; the rank column is deliberately wrong.
        trec_run[entry_id] = {doc: float(generator.choice([1, 2, 3])) for doc in chosen}
        lines += [f"{entry_id} Q0 {doc} 1 {score} bm25" for doc, score in trec_run[entry_id].items()]
    run_file.write_text("\n".join(lines) + "\n")
    report = _evaluate(
        home, [{"label": "bm25-baseline", "system": {"kind": "trec", "path": str(run_file)}}], ks=[3, 5, 10, 20]
    )
    qrels = {
        row["entry_id"]: dict(zip(row["expected_document_ids"], row["relevance"]))
        for row in golden.iter_rows(named=True)
    }
    reference = pytrec_eval.RelevanceEvaluator(qrels, {"recall.5", "ndcg_cut.10", "recip_rank", "P.3"}).evaluate(
        trec_run
    )
    ours = _per_question(home, report, "bm25-baseline")
    for our_name, their_name in (
        ("recall@5", "recall_5"),
        ("ndcg@10", "ndcg_cut_10"),
        ("mrr", "recip_rank"),
        ("precision@3", "P_3"),
    ):
        theirs = np.array([reference[q][their_name] for q in ours["query_id"]])
        assert np.max(np.abs(ours[our_name].to_numpy() - theirs)) <= 1e-9, our_name


def test_a_trec_run_with_a_document_twice_or_a_bad_line_names_file_and_line(tmp_path):
    run_file = tmp_path / "run.trec"
    run_file.write_text("q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 1.5 t\nq1 Q0 d1 3 1.0 t\nq2 Q0 d3 1 high t\n")
    with pytest.raises(ConfigError) as raised:
        read_trec_run(run_file)
    assert f"{run_file}:3: d1 listed again for query q1 (first on line 1)" in str(raised.value)
    assert f"{run_file}:4: score 'high' is not a number" in str(raised.value)


@pytest.mark.parametrize("tool", sorted(COLUMN_PRESETS))
def test_records_shaped_as_ragas_deepeval_or_llamacloud_are_read_through_columns(tmp_path, tool):
    names = COLUMN_PRESETS[tool]
    row = {
        names["question"]: "When was hive 3 inspected?",
        names["answer"]: "On day 3.",
        names["contexts"]: ["Hive 3 was inspected on day 3.", "Hive 4 swarmed."],
    }
    if "documents" in names:
        row[names["documents"]] = ["hives/3.txt", "hives/4.txt"]
    path = tmp_path / f"{tool}.jsonl"
    path.write_text(json.dumps(row) + "\n")
    [record] = read_records(path, RecordsSystem(kind="records", path=path, columns=tool).column_names())
    assert (record.question, record.answer) == ("When was hive 3 inspected?", "On day 3.")
    assert [r.text for r in record.retrieved] == ["Hive 3 was inspected on day 3.", "Hive 4 swarmed."]
    assert [r.doc_id for r in record.retrieved] == (["hives/3.txt", "hives/4.txt"] if tool == "ragas" else [None, None])


def test_a_records_file_with_bad_records_names_each_line(tmp_path):
    path = tmp_path / "records.jsonl"
    path.write_text('{"query_id": "q1", "documents": "not-a-list"}\nnot json\n')
    with pytest.raises(ConfigError, match=rf"{path}:2: not JSON"):
        read_records(path, RecordsSystem(kind="records", path=path).column_names())
    path.write_text('{"query_id": "q1", "documents": "not-a-list"}\n{"query_id": "q2", "refused": "yes"}\n')
    with pytest.raises(ConfigError) as raised:
        read_records(path, RecordsSystem(kind="records", path=path).column_names())
    assert f"{path}:1: documents must be a list of strings" in str(raised.value)
    assert f"{path}:2: refused must be true or false" in str(raised.value)


def test_doc_id_rules_map_prefixes_patterns_csv_and_chunk_ids(tmp_path):
    from ragassay.systems.doc_ids import DocIdMapper
    from ragassay.systems.settings import DocIdRule

    mapping = tmp_path / "ids.csv"
    mapping.write_text("system_id,doc_id\nKB-7,guides/seven.txt\n")
    known = {"guides/one.txt", "guides/seven.txt", "notes/2.md"}
    mapper = DocIdMapper(
        DocIdRule(strip_prefix="kb://", pattern=r"^N(\d)$", replacement=r"notes/\1.md", mapping=mapping), known
    )
    returned = ["kb://guides/one.txt#3", "N2", "kb://KB-7", "kb://guides/one.txt#0", "elsewhere.txt"]
    ranked = mapper.ranking([(system_id, 5.0 - rank) for rank, system_id in enumerate(returned)])
    assert ranked == [
        ("guides/one.txt", 5.0),
        ("notes/2.md", 4.0),
        ("guides/seven.txt", 3.0),
        ("elsewhere.txt", 1.0),
    ], "chunk ids collapse to their document at its best rank; an unknown id keeps its place"
    assert mapper.unknown == {"elsewhere.txt": 1}


def test_header_secrets_come_from_the_environment_and_never_reach_the_params(monkeypatch):
    from ragassay.http_bounds import resolved_headers
    from ragassay.systems.settings import SystemConfiguration

    configuration = SystemConfiguration(
        label="prod",
        system={
            "kind": "http",
            "url": "http://127.0.0.1:1/rag",
            "headers": {"Authorization": "Bearer ${PROD_RAG_TOKEN}", "X-Key": "written-in-the-file"},
            "response": {"documents": "$.ids[*]"},
        },
    )
    params = json.dumps(configuration.applicable_settings())
    assert "${PROD_RAG_TOKEN}" in params and "written-in-the-file" not in params
    with pytest.raises(ConfigError, match=r"\$\{PROD_RAG_TOKEN\}, which is not set"):
        resolved_headers(configuration.system.header_templates())
    monkeypatch.setenv("PROD_RAG_TOKEN", "s3cret")
    assert resolved_headers(configuration.system.header_templates())["Authorization"] == "Bearer s3cret"


@pytest.mark.flows
def test_a_system_that_cannot_be_reached_stops_after_a_few_calls_and_the_batch_still_finishes(served):
    import socket

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}/rag"
    system = {"kind": "http", "url": url, "body": {"q": "{{question}}"}, "response": {"documents": "$.ids[*]"}}
    report = _evaluate(
        served,
        [{"label": "fulltext", "search_type": "fulltext"}, {"label": "dead", "system": {**system, "max_retries": 0}}],
    )
    costs = report.model_costs["dead"]
    assert costs["coverage"] == 0 and costs["errors/connection"] >= 5
    assert costs["errors/connection"] + costs["errors/skipped"] == costs["asked"]
    assert report.means["fulltext"]["recall@5"] > 0, "the other configurations of the batch still finish"
    assert any("unreachable" in w.text() for w in report.warnings)
    # Nothing of `dead` was scored, so nothing is compared with it: the report's row says so
    # instead of a difference of +0 that is significant of nothing; the run fails its verdict.
    from ragassay.evaluation.reports import retrieval_markdown

    markdown = retrieval_markdown(report, ["recall@5"])
    assert "| fulltext | dead | recall@5 | - | - | - | no comparison: no question scored by both |" in markdown
    assert "+0.0000 [+0" not in markdown
    assert [(a.assertion, a.passed) for a in report.assertions] == [("dead:coverage>0", False)]


@pytest.mark.flows
def test_eval_retrieval_takes_systems_from_the_configs_file_and_saves_every_configurations_records(served, tmp_path):
    from typer.testing import CliRunner

    from ragassay.cli.main import app

    golden = load_golden(collection_paths(served, "sample"))
    first = golden.row(0, named=True)
    run_file = tmp_path / "run.trec"
    run_file.write_text(
        "".join(
            f"{first['entry_id']} Q0 {doc} {rank} {10 - rank} t\n"
            for rank, doc in enumerate(first["expected_document_ids"])
        )
    )
    configs = tmp_path / "configs.yaml"
    configs.write_text(
        "configurations:\n"
        "  - {label: fulltext, search_type: fulltext}\n"
        f"  - {{label: baseline, system: {{kind: trec, path: {run_file}}}}}\n"
    )
    saved = tmp_path / "records"
    result = CliRunner().invoke(
        app,
        ["eval", "retrieval", "-c", "sample", "--configs", str(configs), "--save-records", str(saved)],
        env={"RAGASSAY_HOME": str(served), "COLUMNS": "200"},
    )
    assert result.exit_code == 0, result.output
    assert "systems under test" in result.output and f"1/{golden.height}" in result.output
    assert f"{golden.height - 1} of {golden.height} questions failed (missing)" in result.output
    assert sorted(path.name for path in saved.iterdir()) == ["baseline.jsonl", "fulltext.jsonl"]
    replay_configs = tmp_path / "replay.yaml"
    replay_configs.write_text(
        "configurations:\n  - {label: fulltext, search_type: fulltext}\n"
        f"  - {{label: kept, system: {{kind: records, path: {saved / 'fulltext.jsonl'}}}}}\n"
    )
    replay = CliRunner().invoke(
        app,
        ["eval", "retrieval", "-c", "sample", "--json", "--configs", str(replay_configs)],
        env={"RAGASSAY_HOME": str(served)},
    )
    assert replay.exit_code == 0, replay.output
    means = json.loads(replay.stdout)["means"]
    assert means["kept"] == {**means["fulltext"], "coverage": 1.0}, (
        "a built-in configuration's records re-score the same"
    )


@pytest.mark.flows
@pytest.mark.slow
def test_a_systems_own_answers_are_judged_and_what_it_cannot_have_is_not_applicable(served, tmp_path):
    """SmolLM2 judges (fast; its verdicts are not what this checks): a system's answers with their
    contexts and citations get every answer metric; one without contexts gets no faithfulness,
    context recall or citation precision (not 0), and still its correctness against the reference
    answer; a failed call is a row in no metric, and lowers the coverage an assertion bounds;
    refusal both ways comes from the system's own `refused`."""
    from flows.eval_answers import eval_answers_flow
    from ragassay.config import AnswerEvalConfig
    from ragassay.evaluation.questions import gather_golden_questions

    sampled, _ = gather_golden_questions(served, ("sample",), 3, 0)  # the questions the evaluation asks
    first, second, third = sorted(q.query_id for q in sampled)
    served_search.WITHOUT_CONTEXTS, served_search.FAILING = {second}, {third}
    unanswerable = tmp_path / "unanswerable.jsonl"
    unanswerable.write_text((SAMPLE / "unanswerable.jsonl").read_text().splitlines()[0] + "\n")
    config = parse_config(
        AnswerEvalConfig,
        collections=["sample"],
        configurations=[
            {"label": "team-rag", "system": {"kind": "python", "target": "tests.systems.served_search:answer"}}
        ],
        unanswerable=unanswerable,
        max_questions=3,
        pairwise=False,
        judge={"backend": "smollm2"},
        home=served,
        save_records=tmp_path / "records",
        assertions=["team-rag:coverage>=0.98", "team-rag:coverage>=0.75"],
    )
    report = report_of(eval_answers_flow, config)
    kept = read_records(
        tmp_path / "records" / "team-rag.jsonl", RecordsSystem(kind="records", path=tmp_path).column_names()
    )
    assert [r.error_kind for r in kept].count("exception") == 1 and sum(bool(r.refused) for r in kept) == 1
    assert all(r.retrieved for r in kept if r.answered and r.query_id not in (second, "u01"))
    answers = tracking.download_table(served, report.run_ids["team-rag"], "answers")
    by_id = {row["query_id"]: row for row in answers.iter_rows(named=True)}
    assert by_id[third]["outcome"] == "error" and "the model server behind the system is down" in by_id[third]["reason"]
    assert by_id[second]["faithfulness"] is None and by_id[second]["citation_precision"] is None
    judgments = tracking.download_table(served, report.run_ids["team-rag"], "judgments")
    judged = {q: set(judgments.filter(pl.col("query_id") == q)["metric"]) for q in (first, second)}
    # Judged against the contexts it returned (SmolLM2's verdicts may be unreadable: then left out).
    assert judged[first] == {"faithfulness", "context_recall", "citation_precision", "answer_correctness"}
    assert judged[second] == {"answer_correctness"}, "without contexts only the reference answer is a yardstick"
    for query_id in (first, second):
        [grade] = judgments.filter((pl.col("query_id") == query_id) & (pl.col("metric") == "answer_correctness")).rows(
            named=True
        )
        expected = {"correct": 1.0, "incorrect": 0.0, "unreadable": None}[grade["verdict"]]
        assert by_id[query_id]["answer_correctness"] == expected and grade["statement"] == by_id[query_id]["answer"]
    metrics = report.metrics["team-rag"]
    assert metrics["answerable_questions"] == 2 and metrics["failed_questions"] == 1
    assert (metrics["asked"], metrics["answered"], metrics["coverage"], metrics["errors/exception"]) == (4, 3, 0.75, 1)
    assert metrics["faithfulness_scored"] <= 1 and metrics["answer_relevancy_scored"] == 2
    assert metrics["refusal_recall"] == 1.0 and metrics["false_refusal_rate"] == 0.0
    assert [(a.assertion, a.value, a.passed) for a in report.assertions] == [
        ("team-rag:coverage>=0.98", 0.75, False),
        ("team-rag:coverage>=0.75", 0.75, True),
    ]
    from ragassay.evaluation.estimate import estimate_answer_eval

    [row] = estimate_answer_eval(config).configurations
    expected = 4 * metrics["latency_p50_ms"] / 1000  # calls × the measured median latency, one at a time
    assert row.answer.calls == 4 and row.answer.seconds == pytest.approx(expected, abs=0.05)
    assert report.batch_id in row.answer_rate_basis
    warnings = " | ".join(w.text() for w in report.warnings)
    assert "got no answer from the system" in warnings
    assert f"{second}: 1 answers came without context text: not applicable" in warnings


@pytest.mark.flows
def test_a_collection_holding_only_a_golden_set_evaluates_a_systems_own_ids(home, tmp_path):
    """A team whose golden set names its own system's ids: no corpus ingested; the output says the
    ids could not be checked."""
    from typer.testing import CliRunner

    from ragassay.cli.main import app

    golden = tmp_path / "golden.jsonl"
    golden.write_text(
        '{"id": "q1", "question": "Which runbook covers disk alerts?", "expected_document_ids": ["RB-12"]}\n'
        '{"id": "q2", "question": "Who owns the billing service?", "expected_document_ids": ["TEAM-3", "RB-40"]}\n'
    )
    added = CliRunner().invoke(app, ["golden", "add", "-c", "ops", "--file", str(golden)])
    assert added.exit_code == 0, added.output
    assert "holds only a golden set: expected document ids were not checked" in added.output
    run_file = tmp_path / "run.trec"
    run_file.write_text("q1 Q0 RB-12 1 9 t\nq1 Q0 RB-7 2 8 t\nq2 Q0 RB-40 1 5 t\n")
    report = parse_config(
        RetrievalEvalConfig,
        collections=["ops"],
        configurations=[{"label": "ops-search", "system": {"kind": "trec", "path": str(run_file)}}],
        home=home,
    )
    result = report_of(eval_retrieval_flow, report)
    assert result.means["ops-search"]["recall@1"] == pytest.approx((1 + 0.5) / 2)
    warnings = " | ".join(w.text() for w in result.warnings)
    assert "ops holds only a golden set" in warnings and "could not be checked" in warnings


@pytest.mark.flows
@pytest.mark.slow
def test_a_server_that_dies_mid_run_keeps_what_it_answered_and_the_batch_is_logged(served):
    faults = Faults()
    faults.die_after = 8
    with SearchServer(faults) as server:
        system = _served(server, max_retries=1, concurrency=1, cache=False)
        report = _evaluate(
            served, [{"label": "fulltext", "search_type": "fulltext"}, {"label": "prod", "system": system}]
        )
    costs = report.model_costs["prod"]
    assert costs["answered"] == 8, "what it answered before it died is scored"
    assert costs["errors/connection"] + costs.get("errors/skipped", 0) == costs["asked"] - 8
    assert report.batch_id and set(report.run_ids) == {"fulltext", "prod"}, "the batch is still logged"


@pytest.mark.flows
@pytest.mark.slow
def test_calls_are_remembered_under_a_version_and_failures_never(served):
    questions = load_golden(collection_paths(served, "sample"))["entry_id"].to_list()
    faults = Faults()
    faults.malformed = {questions[0]}
    with SearchServer(faults) as server:
        system = _served(server, version="2026-12-01")
        configurations = [{"label": "prod", "system": system}]
        first = _evaluate(served, configurations)
        calls_after_first = dict(faults.calls)
        second = _evaluate(served, configurations)
        third = _evaluate(served, [{"label": "prod", "system": {**system, "version": "2026-12-02"}}])
    assert first.means == second.means == third.means
    asked_again = {q: faults.calls[q] - calls_after_first.get(q, 0) for q in questions}
    assert asked_again[questions[0]] == 2, "a failed call is asked again on each run"
    assert all(asked_again[q] == 1 for q in questions[1:]), "remembered under one version, asked under the next"


@pytest.mark.flows
def test_the_regression_gate_catches_a_systems_drop_over_the_questions_both_nights_answered(served, tmp_path):
    from typer.testing import CliRunner

    from ragassay.cli.main import app

    golden = load_golden(collection_paths(served, "sample"))
    documents = load_documents(collection_paths(served, "sample"))["doc_id"].to_list()

    def night(name: str, buried: int, missing: int):
        """A TREC run: each question's expected documents first, except `buried` questions where
        ten others come first, and `missing` questions the system did not answer at all."""
        lines = []
        for number, row in enumerate(golden.iter_rows(named=True)):
            if number < missing:
                continue
            others = [d for d in documents if d not in row["expected_document_ids"]][:10]
            ranked = (
                [*others, *row["expected_document_ids"]] if number < missing + buried else row["expected_document_ids"]
            )
            lines += [f"{row['entry_id']} Q0 {doc} {rank} {100 - rank} t" for rank, doc in enumerate(ranked)]
        path = tmp_path / f"{name}.trec"
        path.write_text("\n".join(lines) + "\n")
        return _evaluate(served, [{"label": "prod", "system": {"kind": "trec", "path": str(path)}}])

    good, bad = night("good", 0, 0), night("bad", 12, 3)
    result = CliRunner().invoke(
        app,
        [
            "gate",
            "--baseline",
            good.batch_id,
            "--candidate",
            bad.batch_id,
            "--max-drop",
            "prod:recall@5=0.05",
            "--json",
        ],
        env={"RAGASSAY_HOME": str(served)},
    )
    assert result.exit_code == 1, result.output
    [row] = json.loads(result.stdout)["results"]
    assert row["failed"] and row["questions"] == golden.height - 3, "paired over the questions both nights answered"
    assert row["drop"] == pytest.approx(12 / (golden.height - 3))
