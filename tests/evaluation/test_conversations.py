"""Golden dialogues evaluated as conversations: follow-ups retrieved with their conversation and
reported apart from first turns, systems under test asked turn after turn (a chat that keeps its
sessions over HTTP, one sent the whole conversation each call, a Python callable), and the
built-in answer path answering a follow-up from its own sources with the conversation shown."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from flows.eval_retrieval import eval_retrieval_flow
from ragassay import tracking
from ragassay.cli.main import app
from ragassay.config import RetrievalEvalConfig
from ragassay.config_errors import parse_config
from ragassay.evaluation.reports import retrieval_markdown
from ragassay.golden.store import add_from_file
from ragassay.metrics.conversations import question_groups
from ragassay.metrics.significance import compare_paired
from tests.conftest import SAMPLE
from tests.helpers import report_of
from tests.systems import served_chat, served_search
from tests.systems.served_chat import ChatServer

pytestmark = pytest.mark.flows  # every test here runs flows

runner = CliRunner()
DIALOGUES = [json.loads(line) for line in (SAMPLE / "dialogues.jsonl").read_text().splitlines() if line.strip()]
ANSWERABLE_TURNS = sum(turn.get("answerable", True) for d in DIALOGUES for turn in d["turns"])


def _asked_in_retrieval(dialogue: dict) -> list[str]:
    """A dialogue's questions as a retrieval evaluation asks a system: each turn up to its last
    scored (answerable) one, unanswerable turns before it included."""
    last = max(n for n, turn in enumerate(dialogue["turns"]) if turn.get("answerable", True))
    return [turn["question"] for turn in dialogue["turns"][: last + 1]]


@pytest.fixture(scope="module")
def chat_home(tmp_path_factory) -> Path:
    """The sample corpus with the sample's golden dialogues only (no single questions)."""
    from tests.helpers import build_collection

    workspace = tmp_path_factory.mktemp("conversations")
    build_collection(workspace, "sample", (SAMPLE / "corpus",))
    assert add_from_file(workspace, "sample", SAMPLE / "dialogues.jsonl").dialogues == len(DIALOGUES)
    served_search.HOME = workspace
    return workspace


@pytest.fixture(scope="module")
def evaluated(chat_home):
    config = parse_config(
        RetrievalEvalConfig,
        collections=["sample"],
        home=chat_home,
        configurations=[
            {"label": "fulltext", "search_type": "fulltext"},
            {"label": "without_memory", "search_type": "fulltext", "followup_query": "alone"},
            {"label": "hybrid", "search_type": "hybrid"},
        ],
        assertions=["hybrid:followup.recall@5>=0.7", "without_memory:followup.mrr>=0.99"],
    )
    return config, report_of(eval_retrieval_flow, config)


def test_follow_ups_search_with_their_conversation_and_are_reported_apart(chat_home, evaluated):
    config, report = evaluated
    assert report.questions == ANSWERABLE_TURNS and report.dialogues == len(DIALOGUES)
    table = tracking.download_table(chat_home, report.run_ids["fulltext"], "per_question")
    autumn = table.filter(pl.col("query_id") == "d02#2").row(0, named=True)
    assert (autumn["dialogue_id"], autumn["turn"], autumn["question"]) == ("d02", 2, "And the autumn one?")
    assert autumn["search_query"] == "What ratio of sugar to water should spring syrup have? And the autumn one?"
    first = table.filter(pl.col("query_id") == "d02#1").row(0, named=True)
    assert first["search_query"] == first["question"], "a first turn searches as asked"
    alone = tracking.download_table(chat_home, report.run_ids["without_memory"], "per_question")
    assert alone.filter(pl.col("query_id") == "d02#2")["search_query"].item() == "And the autumn one?"

    gaps = {(row.configuration, row.metric): row for row in report.followup_gaps}
    for label in ("fulltext", "without_memory", "hybrid"):
        gap = gaps[(label, "mrr")]
        assert gap.dialogues == len(DIALOGUES) and gap.first_scored == len(DIALOGUES)
        assert gap.followup_scored == ANSWERABLE_TURNS - len(DIALOGUES)
        # The sample's 12 dialogues are fewer than a dialogue bootstrap needs: the gap, no interval.
        assert gap.gap is not None and not gap.has_interval
        assert report.means[label]["followup_mrr"] == pytest.approx(gap.followup_mean)
    # Searched alone, a follow-up ("And the autumn one?") loses what it points back to.
    assert gaps[("without_memory", "mrr")].followup_mean < gaps[("fulltext", "mrr")].followup_mean
    assert gaps[("without_memory", "mrr")].first_mean == gaps[("fulltext", "mrr")].first_mean

    assert [(a.assertion, a.passed) for a in report.assertions] == [
        ("hybrid:followup.recall@5>=0.7", True),
        ("without_memory:followup.mrr>=0.99", False),
    ]
    # Paired differences resample whole dialogues: recomputed with each turn's dialogue as its group.
    row = next(
        c
        for c in report.comparisons
        if (c.configuration_a, c.configuration_b, c.metric) == ("fulltext", "without_memory", "mrr")
    )
    both = table.join(alone, on=["query_collection", "query_id"], suffix="_b", maintain_order="left")
    expected = compare_paired(
        both["mrr"].to_numpy(), both["mrr_b"].to_numpy(), seed=config.seed, groups=question_groups(both)
    )
    assert (row.mean_difference, row.ci_low, row.ci_high, row.p_value) == pytest.approx(
        (expected.mean_difference, expected.ci_low, expected.ci_high, expected.p_value)
    )
    markdown = retrieval_markdown(report, ["recall@5", "mrr"])
    assert f"## First turns and follow-ups ({len(DIALOGUES)} dialogues)" in markdown
    assert "resampling whole dialogues, none from fewer than 25" in markdown and "(no CI: 12 dialogues)" in markdown
    # MLflow: each configuration's run holds the subsets' means, the parent the gaps.
    run = tracking.client(chat_home).get_run(report.run_ids["hybrid"])
    assert run.data.metrics["followup_recall_at_5"] == pytest.approx(report.means["hybrid"]["followup_recall@5"])
    assert tracking.download_table(chat_home, report.parent_run_id, "followup_gaps").height == 3 * len(config.metrics())


def _chat_system(server: ChatServer, **extra) -> dict:
    return {
        "kind": "http",
        "url": f"{server.url}/chat",
        "body": {"session": "{{session}}", "message": "{{question}}"},
        "response": {"documents": "$.sources[*].id", "contexts": "$.sources[*].text", "answer": "$.answer"},
        "concurrency": 3,
        "max_retries": 0,
        **extra,
    }


def test_a_chat_that_keeps_sessions_is_asked_turn_after_turn_and_cleared(chat_home, tmp_path, monkeypatch):
    monkeypatch.setenv("RAGASSAY_HOME", str(chat_home))
    # The chat's model is down for one follow-up: that turn fails, the dialogue goes on without it.
    with ChatServer(failing={"And the autumn one?"}) as server:
        configs = tmp_path / "configs.json"
        configs.write_text(
            json.dumps(
                [
                    {
                        "label": "chat",
                        "system": _chat_system(server, clear_session={"url": f"{server.url}/sessions/{{{{session}}}}"}),
                    }
                ]
            )
        )
        result = runner.invoke(
            app,
            ["eval", "retrieval", "-c", "sample", "--configs", str(configs), "--save-records", str(tmp_path), "--json"],
        )
        received, cleared = list(server.received), list(server.cleared)
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    # Each dialogue was asked as written, an unanswerable turn before a scored one included (it
    # goes in no retrieval metric, but the conversation holds it).
    by_session: dict[str, list[str]] = {}
    for request in received:
        by_session.setdefault(request["session"], []).append(request["message"])
    assert len(by_session) == len(DIALOGUES)
    assert sorted(by_session.values()) == sorted(_asked_in_retrieval(d) for d in DIALOGUES), (
        "each dialogue's turns in order, in one session"
    )
    assert "What does its honey taste like?" in by_session[next(s for s in by_session if s.endswith("-d12"))]
    assert sorted(cleared) == sorted(by_session), "each session cleared after its dialogue"
    assert report["model_costs"]["chat"]["answered"] == ANSWERABLE_TURNS - 1
    records = {
        r["query_id"]: r
        for r in map(json.loads, (tmp_path / "chat.jsonl").read_text().splitlines())
        if r.get("query_id")
    }
    failed, after = records["d02#2"], records["d02#3"]
    assert failed["error_kind"] == "http_status" and (failed["conversation_id"], failed["turn"]) == ("d02", 2)
    assert after["error"] is None and "turns 2 are not in the history" in after["note"]
    assert records["d01#3"]["note"] is None
    # The chat remembered what it answered, so "Why is it made thicker?" still finds the feeding guide.
    assert "guides/feeding.txt" in [item["doc_id"] for item in after["retrieved"]][:3]
    gap = next(g for g in report["followup_gaps"] if g["configuration"] == "chat" and g["metric"] == "mrr")
    assert gap["followup_scored"] == ANSWERABLE_TURNS - len(DIALOGUES) - 1


def test_a_chat_sent_the_whole_conversation_each_call_gets_its_messages(chat_home, tmp_path):
    with ChatServer(failing={"And the autumn one?"}) as server:
        system = {
            **_chat_system(server),
            "url": f"{server.url}/stateless",
            "body": {"messages": "{{messages}}", "conversation": "{{conversation_id}}", "turn": "{{turn}}"},
        }
        config = parse_config(
            RetrievalEvalConfig,
            collections=["sample"],
            home=chat_home,
            configurations=[{"label": "stateless", "system": system}],
        )
        eval_retrieval_flow(config)
        received = list(server.received)
    third = next(r for r in received if (r["conversation"], r["turn"]) == ("d01", "3"))
    assert [m["role"] for m in third["messages"]] == ["user", "assistant", "user", "assistant", "user"]
    assert third["messages"][-1]["content"] == "What about the ones raised in autumn?"
    assert third["messages"][1]["content"], "the chat's own earlier answer"
    # After the failed turn the conversation holds its question, not an answer it never gave.
    why = next(r for r in received if (r["conversation"], r["turn"]) == ("d02", "3"))
    assert [m["role"] for m in why["messages"]] == ["user", "assistant", "user", "user"]


def test_a_python_system_gets_the_history_and_its_session_cleared(chat_home):
    served_chat.SESSIONS_SEEN.clear()
    served_chat.CLEARED.clear()
    config = parse_config(
        RetrievalEvalConfig,
        collections=["sample"],
        home=chat_home,
        max_dialogues=2,
        configurations=[
            {
                "label": "py",
                "system": {
                    "kind": "python",
                    "target": "tests.systems.served_chat:remembering",
                    "clear_session": "tests.systems.served_chat:clear",
                },
            }
        ],
    )
    report = eval_retrieval_flow(config)
    assert report.dialogues == 2 and len(set(served_chat.SESSIONS_SEEN)) == 2
    assert sorted(served_chat.CLEARED) == sorted(set(served_chat.SESSIONS_SEEN))
    assert report.means["py"]["followup_recall@5"] >= 0.5


@pytest.mark.slow
def test_the_built_in_path_answers_a_dialogue_turn_after_turn_and_traces_it_as_a_session(chat_home):
    from flows.eval_answers import eval_answers_flow
    from ragassay.config import AnswerEvalConfig

    smollm2 = {"backend": "smollm2"}
    config = parse_config(
        AnswerEvalConfig,
        collections=["sample"],
        home=chat_home,
        max_dialogues=1,
        pairwise=False,
        configurations=[
            {"label": "hybrid", "search_type": "hybrid", "k": 2, "max_answer_tokens": 96, "model": smollm2}
        ],
        judge=smollm2,
        assertions=["hybrid:followup.false_refusal_rate<=1"],
    )
    report = eval_answers_flow(config)
    answers = tracking.download_table(chat_home, report.run_ids["hybrid"], "answers").sort("turn")
    dialogue = answers["dialogue_id"][0]
    turns = next(d["turns"] for d in DIALOGUES if d["id"] == dialogue)
    assert answers["query_id"].to_list() == [f"{dialogue}#{n}" for n in range(1, len(turns) + 1)]
    assert answers["answerable"].to_list() == [t.get("answerable", True) for t in turns]
    assert report.questions + report.unanswerable == len(turns) and report.dialogues == 1
    # Each follow-up searched with the questions before it; the first as asked.
    assert answers["search_query"][0] is None
    assert answers["search_query"][1] == f"{turns[0]['question']} {turns[1]['question']}"
    gaps = {row.metric for row in report.followup_gaps if row.configuration == "hybrid"}
    assert {"faithfulness", "false_refusal_rate"} <= gaps
    assert report.assertions[0].passed
    # A trace per turn, the dialogue one MLflow session (the Sessions view), each follow-up's
    # query among its turn's steps; the dialogue's own scores are its session's, on its first turn.
    traces = tracking.find_traces(chat_home, report.run_ids["hybrid"])
    [session] = {trace.info.trace_metadata["mlflow.trace.session"] for trace in traces}
    assert session == f"{report.batch_id}/hybrid/sample/{dialogue}"
    grouped = tracking.find_traces(
        chat_home, report.run_ids["hybrid"], f"metadata.`mlflow.trace.session` = '{session}'"
    )
    turn_of = {trace.info.trace_id: int(trace.info.tags["ragassay.turn"]) for trace in traces}
    in_time_order = sorted(grouped, key=lambda trace: trace.info.request_time)
    assert [turn_of[trace.info.trace_id] for trace in in_time_order] == list(range(1, len(turns) + 1))
    follow_up_queries = [span for trace in traces for span in trace.data.spans if span.name == "follow-up query"]
    assert len(follow_up_queries) == len(turns) - 1
    first = next(trace for trace in traces if turn_of[trace.info.trace_id] == 1)
    session_scores = {
        a.name for a in first.info.assessments if (a.metadata or {}).get("mlflow.trace.session") == session
    }
    assert session_scores and all(name.startswith("session_") or name == "turns_handled" for name in session_scores)
    later = [trace for trace in traces if turn_of[trace.info.trace_id] > 1]
    assert not any((a.metadata or {}).get("mlflow.trace.session") for t in later for a in t.info.assessments)


@pytest.mark.slow
def test_chat_answers_each_line_with_the_conversation_so_far_until_cleared(chat_home, monkeypatch):
    monkeypatch.setenv("RAGASSAY_HOME", str(chat_home))
    typed = "What ratio of sugar to water should spring syrup have?\nAnd the autumn one?\n/clear\nAnd the autumn one?\n"
    result = runner.invoke(app, ["chat", "-c", "sample", "--model", "smollm2", "--k", "2", "--json"], input=typed)
    assert result.exit_code == 0, result.output
    turns = [json.loads(line) for line in result.stdout.splitlines()]
    assert [turn["turn"] for turn in turns] == [1, 2, 1]
    assert turns[0]["search_query"] is None and turns[0]["prompt_version"] == "grounded-answer/2"
    assert turns[1]["search_query"].startswith("What ratio of sugar to water should spring syrup have?")
    assert turns[1]["prompt_version"] == "grounded-answer-in-conversation/1"
    assert turns[2]["search_query"] is None, "after /clear the follow-up stands alone"
    assert all(turn["outcome"] in ("answered", "refused") for turn in turns)


def test_a_remembered_conversation_is_served_whole_or_asked_again_whole(chat_home):
    """A system that keeps sessions must see a conversation's turns in order: with its calls
    remembered (`version:`), a dialogue is served from the cache whole, or asked again whole."""
    settings = {"collections": ["sample"], "home": chat_home, "max_dialogues": 3}
    with ChatServer(failing={"And the autumn one?"}) as server:
        system = {**_chat_system(server), "version": "1"}
        config = parse_config(RetrievalEvalConfig, **settings, configurations=[{"label": "chat", "system": system}])
        eval_retrieval_flow(config)
        first = list(server.received)
        server.failing.clear()
        eval_retrieval_flow(config)
        again = server.received[len(first) :]
    asked_first = {r["session"].rsplit("-", 1)[1] for r in first}
    # Only the dialogue whose turn failed (so was not remembered) is asked again, every turn of it.
    assert "d02" in asked_first and len(asked_first) == 3
    assert [r["message"] for r in again] == [turn["question"] for turn in DIALOGUES[1]["turns"]]


@pytest.mark.slow
def test_max_questions_0_evaluates_the_golden_dialogues_alone(tmp_path):
    """Issue 58, case 8: `--max-questions 0` was refused, so there was no dialogues-only run. With
    single questions and dialogues stored, it asks the dialogues' turns alone; with no dialogue
    to ask either, it says there is nothing to evaluate (exit 2), not an empty batch."""
    from tests.helpers import build_collection

    build_collection(tmp_path, "sample", (SAMPLE / "corpus",))
    add_from_file(tmp_path, "sample", SAMPLE / "golden.jsonl")
    add_from_file(tmp_path, "sample", SAMPLE / "dialogues.jsonl")
    env = {"RAGASSAY_HOME": str(tmp_path)}
    base = ["eval", "retrieval", "-c", "sample", "--mode", "fulltext"]
    result = runner.invoke(app, [*base, "--max-questions", "0", "--json"], env=env)
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    # Retrieval scores a dialogue's answerable turns: every one of them, and no single question.
    scored_turns = sum(turn.get("answerable", True) for d in DIALOGUES for turn in d["turns"])
    assert (report["dialogues"], report["questions"]) == (len(DIALOGUES), scored_turns)
    refused = runner.invoke(app, [*base, "--max-questions", "0", "--max-dialogues", "0"], env=env)
    assert refused.exit_code == 2 and "nothing to evaluate in sample: max_questions 0" in refused.output


@pytest.mark.slow
def test_a_single_questions_session_is_cleared_after_it_too(tmp_path):
    """Issue 58, case 8: single questions sent to a chat that keeps sessions got a `{{session}}`
    never cleared (300 orphan sessions a nightly run). Each is cleared after its question."""
    from tests.helpers import build_collection

    build_collection(tmp_path, "sample", (SAMPLE / "corpus",))
    add_from_file(tmp_path, "sample", SAMPLE / "golden.jsonl")
    with ChatServer() as server:
        system = _chat_system(server, clear_session={"url": f"{server.url}/sessions/{{{{session}}}}"})
        config = parse_config(
            RetrievalEvalConfig,
            collections=["sample"],
            home=tmp_path,
            max_questions=4,
            configurations=[{"label": "chat", "system": {**system, "cache": False}}],
        )
        report = report_of(eval_retrieval_flow, config)
        sessions = {request["session"] for request in server.received}
        cleared, left = list(server.cleared), dict(server.sessions)
    assert report.questions == 4 and len(sessions) == 4
    assert sorted(cleared) == sorted(sessions) and not left, "each question's session cleared, none left open"
