"""A team's own system whose mapping is wrong, tried as a new user tries it: every number printed
is a measurement (scored as pytrec_eval scores the same run), and every mistake is named with its
fix; nothing is a silent zero, an inflated rank, or a lost batch. One test per mistake of
RELIABILITY.md's "Mapping mistakes" table, with real servers, real files and the real flows."""

from __future__ import annotations

import json
import socket
import tempfile
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import pytrec_eval
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from flows.eval_retrieval import eval_retrieval_flow
from ragassay import tracking
from ragassay.cli.main import app
from ragassay.config import RetrievalEvalConfig
from ragassay.config_errors import parse_config
from ragassay.errors import ConfigError
from ragassay.evaluation.questions import EvalQuestion, gather_golden_questions
from ragassay.evaluation.retrieval_scoring import score_rankings
from ragassay.evaluation.system_runs import run_system
from ragassay.golden.store import add_from_file, load_golden
from ragassay.metrics.names import standard_metrics
from ragassay.store.workspace import collection_paths, load_documents
from ragassay.systems.calls import UNREACHABLE_AFTER, call_system
from ragassay.systems.http_system import HttpSystem
from ragassay.systems.python_system import PythonSystem
from ragassay.systems.settings import SystemConfiguration
from ragassay.systems.trec import read_trec_run
from tests.conftest import SAMPLE
from tests.helpers import report_of
from tests.systems import served_search
from tests.systems.served_search import Faults, SearchServer

runner = CliRunner()


@pytest.fixture(scope="module")
def served(sample_home):
    add_from_file(sample_home, "sample", SAMPLE / "golden.jsonl")
    served_search.HOME = sample_home
    return sample_home


def _questions(home: Path) -> list[EvalQuestion]:
    questions, _ = gather_golden_questions(home, ("sample",), None, 0)
    return questions


def _evaluate(home, configurations, **settings):
    config = parse_config(
        RetrievalEvalConfig, collections=["sample"], configurations=configurations, home=home, **settings
    )
    return report_of(eval_retrieval_flow, config)


def _scored(home: Path, system: dict, ks=(5, 10), max_rank: int = 100, **configuration) -> dict[str, np.ndarray]:
    """A system's per-question metrics as ragassay scores them, without a flow: its records read or
    called, its ids mapped, ranked to the max rank and scored (the functions the flow's tasks call)."""
    questions = _questions(home)
    found = run_system(
        home,
        ("sample",),
        questions,
        SystemConfiguration(label="sys", system=system, **configuration),
        max(max_rank, *ks),
        None,
    )
    return score_rankings(questions, found.rankings, standard_metrics(list(ks)), max(max_rank, *ks)) | {
        "query_id": np.array([q.query_id for q in questions])
    }


def _qrels(home: Path) -> dict[str, dict[str, int]]:
    golden = load_golden(collection_paths(home, "sample"))
    return {
        row["entry_id"]: dict(zip(row["expected_document_ids"], row["relevance"]))
        for row in golden.iter_rows(named=True)
    }


def _pytrec(qrels, run: dict[str, dict[str, float]], measures) -> dict[str, dict[str, float]]:
    return pytrec_eval.RelevanceEvaluator(qrels, set(measures)).evaluate(run)


def _closed_port_url() -> str:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}/rag"


def _served(server: SearchServer, **settings) -> dict:
    return {
        "kind": "http",
        "url": server.url,
        "body": {"query": "{{question}}", "id": "{{query_id}}"},
        "response": {"documents": "$.sources[*].doc_id"},
        "cache": False,
        **settings,
    }


# 1 and 2: unknown ids scored in place; MRR to the max rank, for built-in and system configurations.


def test_an_unknown_id_keeps_its_rank_and_mrr_reads_past_the_deepest_cut_off(served, tmp_path):
    qrels = _qrels(served)
    documents = load_documents(collection_paths(served, "sample"))["doc_id"].to_list()
    run, lines = {}, []
    for number, (query_id, judged) in enumerate(sorted(qrels.items())):
        others = [d for d in documents if d not in judged]
        # A stale id at rank 1, the expected document at rank 6, or (every third question) at
        # rank 15 of a list of 20: deeper than max(ks) = 10.
        depth = 15 if number % 3 == 0 else 6
        ranked = ["stale/removed-last-week.md", *others[: depth - 2], *judged, *others[depth - 2 : 20]][:20]
        run[query_id] = {doc: float(100 - rank) for rank, doc in enumerate(ranked)}
        lines += [f"{query_id} Q0 {doc} {rank} {score} t" for rank, (doc, score) in enumerate(run[query_id].items())]
    path = tmp_path / "run.trec"
    path.write_text("\n".join(lines) + "\n")
    ours = _scored(served, {"kind": "trec", "path": str(path)})
    theirs = _pytrec(qrels, run, {"recall.5", "recall.10", "ndcg_cut.10", "recip_rank"})
    for our_name, their_name in (
        ("recall@5", "recall_5"),
        ("recall@10", "recall_10"),
        ("ndcg@10", "ndcg_cut_10"),
        ("mrr", "recip_rank"),
    ):
        expected = np.array([theirs[q][their_name] for q in ours["query_id"]])
        assert np.max(np.abs(ours[our_name] - expected)) <= 1e-12, our_name
    first = sorted(qrels)[1]  # expected document at rank 6, below a stale id
    position = list(ours["query_id"]).index(first)
    assert ours["recall@5"][position] == 0.0 and ours["mrr"][position] == pytest.approx(1 / 6)


@pytest.mark.flows
def test_a_built_in_configuration_is_scored_to_the_same_max_rank_as_pytrec_eval_reads_its_run(served):
    report = _evaluate(served, [{"label": "fulltext", "search_type": "fulltext"}], ks=[1, 3])
    run = tracking.download_table(served, report.run_ids["fulltext"], "run")
    per_question = tracking.download_table(served, report.run_ids["fulltext"], "per_question")
    assert run.group_by("query_id").len()["len"].max() > 3, "retrieved to the max rank, not to max(ks)"
    ranked = {
        query_id: {row["doc_id"]: float(-row["rank"]) for row in rows.iter_rows(named=True)}
        for (query_id,), rows in run.group_by("query_id")
    }
    theirs = _pytrec(_qrels(served), ranked, {"recip_rank"})
    for row in per_question.iter_rows(named=True):
        assert row["mrr"] == pytest.approx(theirs[row["query_id"]]["recip_rank"], abs=1e-12)


# The property: any ranking, with unknown ids, repeats, chunk ids and any length, scores as
# pytrec_eval scores the run it stands for.


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_run_with_unknown_ids_repeats_and_chunk_ids_scores_as_pytrec_eval(served, data):
    qrels = _qrels(served)
    documents = load_documents(collection_paths(served, "sample"))["doc_id"].to_list()
    pool = documents + [f"unknown/{n}" for n in range(8)]
    ks = sorted(set(data.draw(st.lists(st.integers(1, 12), min_size=1, max_size=3))))
    max_rank = data.draw(st.integers(max(ks), 30))
    kind = data.draw(st.sampled_from(["trec", "records"]))
    query_ids = data.draw(st.lists(st.sampled_from(sorted(qrels)), min_size=1, max_size=6, unique=True))
    lines, reference = [], {}
    for query_id in query_ids:
        length = data.draw(st.integers(0, 40))
        if kind == "trec":  # a TREC run lists a document once per query (a repeat is refused)
            ranked = data.draw(st.lists(st.sampled_from(pool), max_size=length, unique=True))
            scores = data.draw(st.lists(st.sampled_from([1.0, 2.0, 3.0]), min_size=len(ranked), max_size=len(ranked)))
            lines += [f"{query_id} Q0 {doc} 0 {score} t" for doc, score in zip(ranked, scores)]
            # trec_eval's order: by score, higher first; ties by docid, higher first (stable sorts).
            order = sorted(sorted(zip(ranked, scores), key=lambda pair: pair[0], reverse=True), key=lambda p: -p[1])
            reference[query_id] = [doc for doc, _ in order]
        else:  # records may repeat a document, or name its chunks: the first (best) rank counts
            ranked = data.draw(st.lists(st.sampled_from(pool), max_size=length))
            # A known document's chunk id (`doc#3`) is that document; an unknown one is its own id.
            ranked = [
                f"{doc}#{data.draw(st.integers(0, 3))}" if doc in documents and data.draw(st.booleans()) else doc
                for doc in ranked
            ]
            lines.append(json.dumps({"query_id": query_id, "documents": ranked}))
            reference[query_id] = list(dict.fromkeys(doc.partition("#")[0] if "#" in doc else doc for doc in ranked))
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / ("run.trec" if kind == "trec" else "records.jsonl")
        path.write_text("\n".join(lines) + "\n")
        if not any(reference.values()):  # a file without one document is refused, not scored 0
            with pytest.raises(ConfigError, match=r"holds no results|is empty|no record holds document ids"):
                _scored(served, {"kind": kind, "path": str(path)}, ks, max_rank)
            return
        ours = _scored(served, {"kind": kind, "path": str(path)}, ks, max_rank)
    # pytrec_eval reads a run as scores; the reference order as descending scores, cut to the max rank.
    run = {q: {doc: float(-rank) for rank, doc in enumerate(docs[:max_rank])} for q, docs in reference.items()}
    measures = {"recip_rank", *(f"recall.{k}" for k in ks), *(f"ndcg_cut.{k}" for k in ks)}
    theirs = _pytrec({q: qrels[q] for q in query_ids}, {q: run[q] for q in query_ids}, measures)
    for position, query_id in enumerate(ours["query_id"]):
        if query_id not in query_ids:
            continue
        expected = theirs.get(query_id, {})
        for k in ks:
            assert ours[f"recall@{k}"][position] == pytest.approx(expected.get(f"recall_{k}", 0.0), abs=1e-12)
            assert ours[f"ndcg@{k}"][position] == pytest.approx(expected.get(f"ndcg_cut_{k}", 0.0), abs=1e-12)
        assert ours["mrr"][position] == pytest.approx(expected.get("recip_rank", 0.0), abs=1e-12)


# 3, 15, 19: what an HTTP response holds that its mapping does not fit, each that question's row.


def test_a_jsonpath_wrong_below_its_first_key_or_a_wrong_typed_field_is_that_questions_mapping_error(served):
    questions = [(q.query_id, q.question) for q in _questions(served)][:8]
    faults = Faults()
    empty, score_text, answer_number, refused_text, redirected, fine = (q for q, _ in questions[:6])
    faults.empty_sources = {empty}
    faults.bodies = {
        score_text: {"sources": [{"doc_id": "guides/overview.md", "score": "0.5"}], "answer": "ok", "refused": False},
        answer_number: {"sources": [], "answer": 42, "refused": False},
        refused_text: {"sources": [], "answer": "ok", "refused": "yes"},
        fine: {"sources": [{"doc_id": "guides/overview.md", "score": 0.5}], "answer": "ok", "refused": False},
    }
    faults.redirected = {redirected}
    with SearchServer(faults) as server:
        wrong = call_system(
            HttpSystem(**_served(server, response={"documents": "$.sources[*].docid"})), questions, None
        )
        typed = call_system(
            HttpSystem(
                **_served(
                    server,
                    response={
                        "documents": "$.sources[*].doc_id",
                        "scores": "$.sources[*].score",
                        "answer": "$.answer",
                        "refused": "$.refused",
                    },
                )
            ),
            questions,
            None,
        )
        followed = call_system(HttpSystem(**_served(server, follow_redirects=True)), questions[4:5], None)
    by_id = {record.query_id: record for record in wrong}
    assert by_id[empty].answered and by_id[empty].retrieved == (), "an empty list found nothing: answered, no ids"
    failed = [record for record in wrong if record.query_id not in (empty, score_text, answer_number, refused_text)]
    assert all(r.error_kind == "mapping" for r in failed if r.query_id != redirected)
    assert "response.documents $.sources[*].docid matched nothing in the response" in by_id[fine].error
    assert "the rest of the path none" in by_id[fine].error
    typed_by_id = {record.query_id: record for record in typed}
    assert (
        typed_by_id[score_text].error_kind == "mapping"
        and "score must be a finite number" in typed_by_id[score_text].error
    )
    assert typed_by_id[answer_number].error_kind == "mapping" and "not a string" in typed_by_id[answer_number].error
    assert typed_by_id[refused_text].error_kind == "mapping" and "not true or false" in typed_by_id[refused_text].error
    assert typed_by_id[fine].answered
    redirect = typed_by_id[redirected]
    assert redirect.error_kind == "http_status" and "HTTP 307 redirect" in redirect.error
    assert "/moved (not followed; set `follow_redirects: true`" in redirect.error
    assert followed[0].answered and followed[0].retrieved, "follow_redirects: true follows it"


@pytest.mark.flows
def test_a_wrong_typed_response_field_leaves_the_batch_and_the_built_in_configuration_beside_it(served):
    faults = Faults()
    faults.bodies = {q.query_id: {"sources": [{"doc_id": 7.5}]} for q in _questions(served)[:2]}
    with SearchServer(faults) as server:
        report = _evaluate(
            served, [{"label": "fulltext", "search_type": "fulltext"}, {"label": "prod", "system": _served(server)}]
        )
    assert report.model_costs["prod"]["errors/mapping"] == 2
    assert report.means["fulltext"]["recall@5"] > 0 and report.means["prod"]["questions_scored"] == 28


# 4, 5, 20: records files that cannot be scored are refused, naming the field or both lines.


def test_records_without_ids_questions_or_with_a_question_twice_are_refused_naming_the_fix(served, tmp_path):
    questions = _questions(served)
    ragas = tmp_path / "ragas.jsonl"
    ragas.write_text(
        "".join(
            json.dumps({"user_input": q.question, "response": "yes", "retrieved_contexts": ["a passage"]}) + "\n"
            for q in questions
        )
    )
    configs = tmp_path / "configs.yaml"
    configs.write_text(
        f"configurations:\n  - {{label: team, system: {{kind: records, path: {ragas}, columns: ragas}}}}\n"
    )
    refused = runner.invoke(
        app, ["eval", "retrieval", "-c", "sample", "--configs", str(configs)], env={"RAGASSAY_HOME": str(served)}
    )
    assert refused.exit_code == 2, refused.output
    assert "no record holds document ids" in refused.output and "'retrieved_context_ids'" in refused.output
    # Its answers can still be evaluated: the answer evaluation's checks pass.
    from ragassay.config import AnswerEvalConfig

    parse_config(
        AnswerEvalConfig,
        collections=["sample"],
        home=served,
        configurations=[{"label": "team", "system": {"kind": "records", "path": str(ragas), "columns": "ragas"}}],
    ).check_stored()

    nameless = tmp_path / "nameless.jsonl"
    nameless.write_text(json.dumps({"response": "yes", "retrieved_context_ids": ["guides/overview.md"]}) + "\n")
    with pytest.raises(ConfigError, match=rf"{nameless}:1: has neither 'query_id' nor 'user_input' \(the question\)"):
        _scored(served, {"kind": "records", "path": str(nameless), "columns": "ragas"})

    first = questions[0].query_id
    twice = tmp_path / "twice.jsonl"
    twice.write_text(
        json.dumps({"query_id": first, "documents": ["guides/overview.md"]})
        + "\n"
        + json.dumps({"query_id": questions[1].query_id, "documents": []})
        + "\n"
        + json.dumps({"query_id": first, "documents": ["stale.md", "guides/overview.md"]})
        + "\n"
    )
    with pytest.raises(ConfigError) as raised:
        _scored(served, {"kind": "records", "path": str(twice)})
    assert f"{twice}:3: a second record for question {first} (the first is {twice}:1)" in str(raised.value)
    assert "duplicates: first" in str(raised.value)
    position = [q.query_id for q in questions].index(first)
    assert _scored(served, {"kind": "records", "path": str(twice), "duplicates": "first"})["mrr"][position] == 1.0
    assert _scored(served, {"kind": "records", "path": str(twice), "duplicates": "last"})["mrr"][position] == 0.5


# 12: a non-finite score in a TREC run.


def test_a_nan_or_infinite_score_in_a_trec_run_is_refused_with_file_and_line(tmp_path):
    path = tmp_path / "run.trec"
    path.write_text("q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 nan t\nq1 Q0 d3 3 -inf t\n")
    with pytest.raises(ConfigError) as raised:
        read_trec_run(path)
    assert f"{path}:2: score 'nan' is not a finite number" in str(raised.value)
    assert f"{path}:3: score '-inf' is not a finite number" in str(raised.value)


# 6: ids in another space, and a system whose answers come without any id.


@pytest.mark.flows
@pytest.mark.slow
def test_ids_in_another_space_or_none_at_all_are_a_loud_warning_with_the_rule_that_maps_them(home, tmp_path):
    golden = tmp_path / "golden.jsonl"
    golden.write_text(
        '{"id": "q1", "question": "Which runbook covers disk alerts?", "expected_document_ids": ["12"]}\n'
        '{"id": "q2", "question": "Who owns the billing service?", "expected_document_ids": ["40", "3"]}\n'
    )
    assert runner.invoke(app, ["golden", "add", "-c", "ops", "--file", str(golden)]).exit_code == 0
    run_file = tmp_path / "run.trec"
    run_file.write_text("q1 Q0 PMID:12 1 9 t\nq1 Q0 PMID:7 2 8 t\nq2 Q0 PMID:40 1 5 t\n")
    configs = tmp_path / "configs.yaml"
    configs.write_text(
        "configurations:\n"
        f"  - {{label: pubmed, system: {{kind: trec, path: {run_file}}}}}\n"
        "  - {label: idless, system: {kind: python, target: 'tests.systems.served_search:nothing'}}\n"
    )
    result = runner.invoke(
        app, ["eval", "retrieval", "-c", "ops", "--configs", str(configs), "--json"], env={"COLUMNS": "200"}
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    reasons = {w["configuration"]: w["reason"] for w in report["warnings"] if w.get("metric") == "id_space"}
    assert "not one of the 3 document ids pubmed returned is an expected document" in reasons["pubmed"]
    assert "PMID:12" in reasons["pubmed"] and "12, 3, 40" in reasons["pubmed"]
    assert 'doc_ids: {strip_prefix: "PMID:"}' in reasons["pubmed"]
    assert "every one of the 2 questions idless answered came back without a document id" in reasons["idless"]
    logged = tracking.download_table(home, report["parent_run_id"], "warnings")["warning"].to_list()
    assert any('strip_prefix: "PMID:"' in line for line in logged), "the same warning in MLflow"
    shown = runner.invoke(app, ["eval", "retrieval", "-c", "ops", "--configs", str(configs)], env={"COLUMNS": "200"})
    assert "strip_prefix" in shown.output and "without a document id" in shown.output


# 7, 11, 13: a server that is down from the start.


@pytest.mark.slow
def test_a_server_down_from_the_start_costs_a_few_calls_and_the_rest_are_skipped():
    questions = [(f"q{n:03d}", f"question {n}") for n in range(300)]
    system = HttpSystem(
        kind="http", url=_closed_port_url(), body={"q": "{{question}}"}, response={"documents": "$.ids[*]"}
    )
    records = call_system(system, questions, None)
    kinds = [record.error_kind for record in records]
    connected = kinds.count("connection")
    # The calls already in flight when the fifth failed finish; none is started after.
    assert UNREACHABLE_AFTER <= connected < UNREACHABLE_AFTER + system.concurrency
    assert kinds.count("skipped") == 300 - connected
    assert all(record.retries == system.max_retries for record in records if record.error_kind == "connection")


@pytest.mark.flows
@pytest.mark.slow
def test_a_configuration_that_answered_nothing_has_no_values_fails_its_bounds_and_exits_1(served, tmp_path):
    configs = tmp_path / "configs.yaml"
    configs.write_text(
        "configurations:\n"
        "  - {label: fulltext, search_type: fulltext}\n"
        f"  - {{label: dead, system: {{kind: http, url: '{_closed_port_url()}', body: {{q: '{{{{question}}}}'}}, "
        "response: {documents: '$.ids[*]'}, max_retries: 0}}\n"
    )
    arguments = ["eval", "retrieval", "-c", "sample", "--configs", str(configs)]
    bounds = ["--assert", "dead:recall@5<=0.5", "--assert", "dead:mrr>=0.0"]
    result = runner.invoke(app, [*arguments, *bounds, "--json"], env={"RAGASSAY_HOME": str(served)})
    assert result.exit_code == 1, result.output
    report = json.loads(result.stdout)
    assert report["means"]["dead"]["recall@5"] is None and report["means"]["dead"]["mrr"] is None
    assert report["means"]["dead"]["questions_scored"] == 0 and report["means"]["fulltext"]["recall@5"] > 0
    results = {a["assertion"]: a for a in report["assertions"]}
    assert not results["dead:recall@5<=0.5"]["passed"] and not results["dead:mrr>=0"]["passed"]
    assert (
        not results["dead:coverage>0"]["passed"]
        and "answered none of the questions" in results["dead:coverage>0"]["reason"]
    )
    metrics = tracking.client(served).get_run(report["run_ids"]["dead"]).data.metrics
    assert "recall_at_5" not in metrics and metrics["questions_scored"] == 0 and metrics["coverage"] == 0
    shown = runner.invoke(app, arguments, env={"RAGASSAY_HOME": str(served), "COLUMNS": "200"})
    # The means table: a row per metric, a column per configuration; dead's cells say not scored.
    lines = shown.output.splitlines()
    header = next(line for line in lines if line.startswith("┃ metric "))
    recall_row = next(line for line in lines if line.startswith("│ recall@5 "))
    cells = dict(
        zip(
            [cell.strip() for cell in header.strip("┃").split("┃")],
            [cell.strip() for cell in recall_row.strip("│").split("│")],
            strict=True,
        )
    )
    assert shown.exit_code == 1 and cells["dead"] == "not scored" and float(cells["fulltext"]) > 0
    assert "dead answered none of the questions" in shown.output
    listed = runner.invoke(app, ["runs", "list", "--json"], env={"RAGASSAY_HOME": str(served)})
    [dead] = [row for row in json.loads(listed.stdout) if row["configuration"] == "dead"][:1]
    assert "recall@5" not in dead["metrics"], "runs list shows no value, not 0.0"


# 8: retries and the Retry-After a server asks for.


def test_retries_are_counted_and_a_retry_after_is_waited_for_bounded_by_the_timeout(served):
    questions = [(q.query_id, q.question) for q in _questions(served)][:3]
    throttled, dated, _ = (q for q, _ in questions)
    faults = Faults()
    faults.failures_before_success = {throttled: [429], dated: [429]}
    with SearchServer(faults) as server:
        faults.retry_after = "1"
        by_seconds = call_system(HttpSystem(**_served(server)), questions[:1], None)
        faults.retry_after = format_datetime(datetime.now(UTC) + timedelta(hours=1), usegmt=True)
        by_date = call_system(HttpSystem(**_served(server, timeout_seconds=1.5)), questions[1:], None)
    [waited] = by_seconds
    assert waited.answered and waited.retries == 1 and waited.call_ms >= 1000 > waited.latency_ms
    assert by_date[0].retries == 1 and 1500 <= by_date[0].call_ms < 10_000, "an hour asked, the timeout waited"
    assert by_date[1].retries == 0 and by_date[1].call_ms == pytest.approx(by_date[1].latency_ms, abs=5)


@pytest.mark.flows
def test_retries_and_the_whole_calls_latency_are_logged_and_shown_beside_the_errors(served):
    questions = [q.query_id for q in _questions(served)]
    faults = Faults()
    faults.failures_before_success = {questions[0]: [503, 503], questions[1]: [429]}
    with SearchServer(faults) as server:
        report = _evaluate(served, [{"label": "prod", "system": _served(server)}])
    costs = report.model_costs["prod"]
    assert costs["retries"] == 3 and costs["call_latency_p95_ms"] >= costs["latency_p95_ms"]
    metrics = tracking.client(served).get_run(report.run_ids["prod"]).data.metrics
    assert metrics["retries"] == 3
    records = tracking.download_table(served, report.run_ids["prod"], "records")
    assert records.filter(pl.col("query_id") == questions[0])["retries"].item() == 2


# 9: means over different question sets.


@pytest.mark.flows
@pytest.mark.slow
def test_means_over_different_questions_say_so_and_common_questions_scores_all_on_the_same(served, tmp_path):
    questions = [q.query_id for q in _questions(served)]
    served_search.FAILING = set(questions[:3])
    configs = tmp_path / "configs.yaml"
    configs.write_text(
        "configurations:\n"
        "  - {label: fulltext, search_type: fulltext}\n"
        "  - {label: wrapped, system: {kind: python, target: 'tests.systems.served_search:search_failing'}}\n"
    )
    arguments = ["eval", "retrieval", "-c", "sample", "--configs", str(configs)]
    env = {"RAGASSAY_HOME": str(served), "COLUMNS": "220"}
    try:
        shown = runner.invoke(app, arguments, env=env)
        common = runner.invoke(app, [*arguments, "--common-questions", "--json"], env=env)
    finally:
        served_search.FAILING = set()
    assert shown.exit_code == 0, shown.output
    assert "†" in shown.output and "over fewer questions than another configuration" in shown.output
    assert " 27 " in shown.output and " 30 " in shown.output, "n beside each configuration's means"
    means = json.loads(common.stdout)["means"]
    assert means["wrapped"]["questions_scored"] == means["fulltext"]["questions_scored"] == 27
    for metric in ("recall@5", "ndcg@10", "mrr"):
        assert means["wrapped"][metric] == means["fulltext"][metric], metric


# 10: an answer evaluation of systems alone needs no index of ours.


@pytest.mark.flows
@pytest.mark.slow
def test_answers_of_a_records_system_are_judged_on_a_collection_that_is_not_indexed(home, tmp_path):
    from flows.eval_answers import eval_answers_flow
    from ragassay.config import AnswerEvalConfig
    from tests.helpers import ingest

    ingest(home, "unindexed", (SAMPLE / "corpus",))
    add_from_file(home, "unindexed", SAMPLE / "golden.jsonl")
    records = tmp_path / "answers.jsonl"
    golden = [json.loads(line) for line in (SAMPLE / "golden.jsonl").read_text().splitlines()]
    records.write_text(
        "".join(
            json.dumps({"query_id": g["id"], "answer": g["reference_answer"], "contexts": [g["reference_answer"]]})
            + "\n"
            for g in golden
        )
    )
    config = parse_config(
        AnswerEvalConfig,
        collections=["unindexed"],
        configurations=[{"label": "team", "system": {"kind": "records", "path": str(records)}}],
        max_questions=2,
        pairwise=False,
        traces=False,
        judge={"backend": "smollm2"},
        home=home,
    )
    config.check_stored()
    report = report_of(eval_answers_flow, config)
    metrics = report.metrics["team"]
    assert metrics["answered"] == 2 and metrics["answer_relevancy_scored"] == 2


# 14: the regression gate compares coverage.


@pytest.mark.flows
def test_the_gate_compares_coverage_and_warns_on_any_drop(served, tmp_path):
    golden = load_golden(collection_paths(served, "sample"))

    def night(name: str, answered: int):
        lines = []
        for row in golden.head(answered).iter_rows(named=True):
            lines += [
                f"{row['entry_id']} Q0 {doc} {rank} {100 - rank} t"
                for rank, doc in enumerate(row["expected_document_ids"])
            ]
        path = tmp_path / f"{name}.trec"
        path.write_text("\n".join(lines) + "\n")
        return _evaluate(served, [{"label": "prod", "system": {"kind": "trec", "path": str(path)}}])

    good, bad = night("good", golden.height), night("bad", 1)
    env = {"RAGASSAY_HOME": str(served), "COLUMNS": "200"}
    base = ["gate", "--baseline", good.batch_id, "--candidate", bad.batch_id]
    bounded = runner.invoke(app, [*base, "--max-drop", "prod:coverage=0.02", "--json"], env=env)
    assert bounded.exit_code == 1, bounded.output
    [row] = json.loads(bounded.stdout)["results"]
    assert row["metric"] == "coverage" and row["failed"] and row["drop"] == pytest.approx(1 - 1 / golden.height)
    assert (row["questions"], row["asked"]) == (golden.height, golden.height)
    unbounded = runner.invoke(app, [*base, "--max-drop", "prod:recall@5=0.05"], env=env)
    assert unbounded.exit_code == 0, unbounded.output
    assert f"1/{golden.height}" in unbounded.output, "the questions compared against those asked"
    assert f"prod answered 1 of {golden.height} questions in the candidate, {golden.height} in the baseline" in (
        unbounded.output.replace("\n", " ")
    )


# 16, 17: python targets that hang or end the process.


def test_a_blocking_python_target_times_out_and_one_that_exits_is_that_questions_row(served):
    questions = [(q.query_id, q.question) for q in _questions(served)][:3]
    [hung] = call_system(
        PythonSystem(kind="python", target="tests.systems.served_search:hang", timeout_seconds=0.5, max_retries=0),
        questions[:1],
        None,
    )
    assert hung.error_kind == "timeout" and "did not return within 0.5 s (abandoned)" in hung.error
    assert hung.call_ms < 5_000
    ids = [("g01", questions[0][1]), ("g02", questions[1][1]), ("g03", questions[2][1])]
    records = call_system(PythonSystem(kind="python", target="tests.systems.served_search:exits"), ids, None)
    assert [r.error_kind for r in records] == ["exception", "exception", None]
    assert records[0].error == "SystemExit: 3" and records[1].error.startswith("KeyboardInterrupt")


# 18: secrets echoed back, and secrets in Prefect's parameters.

TOKEN, LITERAL = "tok-3f9a77c1e5", "literal-key-8d2e41"


@pytest.mark.flows
@pytest.mark.slow
def test_a_secret_echoed_by_the_server_is_masked_everywhere_and_never_reaches_prefect(served, tmp_path, monkeypatch):
    from prefect.client.orchestration import get_client

    questions = [q.query_id for q in _questions(served)]
    faults = Faults()
    faults.echo_headers = set(questions[:2])
    monkeypatch.setenv("PROD_RAG_TOKEN", TOKEN)
    saved = tmp_path / "records"
    env = {"RAGASSAY_HOME": str(served), "COLUMNS": "200"}
    with SearchServer(faults) as server:
        configs = tmp_path / "configs.yaml"
        system = _served(
            server,
            headers={"Authorization": "Bearer ${PROD_RAG_TOKEN}", "X-Tenant": LITERAL},
            secret_headers=["X-Tenant"],
            max_retries=0,
        )
        configs.write_text(json.dumps({"configurations": [{"label": "prod", "system": system}]}))
        arguments = ["eval", "retrieval", "-c", "sample", "--configs", str(configs), "--save-records", str(saved)]
        shown = runner.invoke(app, arguments, env=env)
        logged = runner.invoke(app, [*arguments, "--json"], env=env)
    assert shown.exit_code == 0 and logged.exit_code == 0, shown.output
    assert "upstream refused Authorization=***" in shown.output.replace("\n", "")
    report = json.loads(logged.stdout)
    child = tracking.client(served).get_run(report["run_ids"]["prod"])
    parent = tracking.client(served).get_run(report["parent_run_id"])
    texts = {
        "terminal": shown.output,
        "--json": logged.stdout,
        "--save-records": (saved / "prod.jsonl").read_text(),
        "MLflow records": json.dumps(tracking.download_table(served, child.info.run_id, "records").to_dicts()),
        "MLflow params": json.dumps(dict(child.data.params)),
        "MLflow description": parent.data.tags.get("mlflow.note.content", ""),
        "MLflow warnings": json.dumps(tracking.download_table(served, parent.info.run_id, "warnings").to_dicts()),
    }
    with get_client(sync_client=True) as client:
        texts["Prefect parameters"] = json.dumps([run.parameters for run in client.read_flow_runs()], default=str)
    for where, text in texts.items():
        assert TOKEN not in text and LITERAL not in text, where
    assert "upstream refused Authorization=***" in texts["MLflow warnings"]
    assert '"X-Tenant": "**********"' in texts["Prefect parameters"], "Prefect stores the header masked"


# Issue 58, case 4: a system's text printed as rich markup.


@pytest.mark.flows
def test_a_systems_ids_are_printed_as_they_are_never_read_as_terminal_markup(served, tmp_path):
    """`[/bold]` as a document id crashed the summary (exit 3, after the batch was logged), and
    `[link=http://x]install.md[/link]` printed as `install.md`, so the warning misled."""
    run = tmp_path / "hostile.trec"
    run.write_text("g01 Q0 [/bold] 1 10 t\ng01 Q0 [link=http://x]install.md[/link] 2 9 t\n")
    configs = tmp_path / "configs.yaml"
    configs.write_text(f"configurations:\n  - {{label: team, system: {{kind: trec, path: {run}}}}}\n")
    result = runner.invoke(
        app, ["eval", "retrieval", "-c", "sample", "--configs", str(configs)], env={"RAGASSAY_HOME": str(served)}
    )
    assert result.exit_code == 0, result.output
    assert "(e.g. [/bold], [link=http://x]install.md[/link])" in result.stdout


@pytest.mark.flows
def test_a_systems_ids_are_text_in_every_markdown_report_never_links_or_html(served, tmp_path):
    """Issue 58, case 4: a system's ids landed raw in report.md, MLflow's description and Prefect's
    Markdown artifact: `[click](javascript:...)` a link, `<img onerror>` HTML, `|` a new cell."""
    from tests.helpers import flow_run_outcome

    hostile = ["[click](javascript:alert(1))", "<img/src=x/onerror=alert(1)>", "a|b"]  # TREC ids hold no space
    run = tmp_path / "hostile.trec"
    run.write_text("".join(f"g01 Q0 {doc} {rank} {10 - rank} t\n" for rank, doc in enumerate(hostile, 1)))
    configs = tmp_path / "configs.yaml"
    configs.write_text(f"configurations:\n  - {{label: team, system: {{kind: trec, path: {run}}}}}\n")
    arguments = ["eval", "retrieval", "-c", "sample", "--configs", str(configs), "--json"]
    report = json.loads(runner.invoke(app, arguments, env={"RAGASSAY_HOME": str(served)}).stdout)
    parent = tracking.client(served).get_run(report["parent_run_id"]).data.tags
    _, artifacts = flow_run_outcome(parent[tracking.TAG_PREFECT_FLOW_RUN])
    for markdown in (parent[tracking.DESCRIPTION_TAG], artifacts["retrieval-sample-report"]):
        warning = next(line for line in markdown.splitlines() if "returned ids are no document" in line)
        assert r"\[click\]\(javascript:alert\(1\)\)" in warning and "](javascript" not in markdown
        assert r"\<img/src=x/onerror=alert\(1\)\>" in warning and "<img" not in markdown.replace(r"\<img", "")
        assert r"a\|b" in warning
