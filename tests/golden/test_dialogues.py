"""Golden dialogues: conversations of turns, validated, stored per collection, listed and deleted."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from typer.testing import CliRunner

from ragassay.cli.main import app
from ragassay.golden.dialogues import (
    DialogueCandidate,
    TurnCandidate,
    dialogues_digest,
    turn_id,
    validate_dialogues,
)
from ragassay.golden.files import read_candidate_file
from ragassay.store.schemas import DIALOGUES

NOW = datetime(2026, 1, 1, tzinfo=UTC)
KNOWN = {"a.md", "b.md"}
runner = CliRunner()


def dialogue(*turns: TurnCandidate, dialogue_id: str | None = "d1") -> DialogueCandidate:
    return DialogueCandidate(tuple(turns), "test", dialogue_id)


FIRST = TurnCandidate("What do bees make?", ("a.md",), reference_answer="Honey.")
FOLLOW = TurnCandidate("And how long does it keep?", ("a.md", "b.md"), relevance=(2, 1))
UNANSWERABLE = TurnCandidate("And what does it cost?", answerable=False)


def test_a_dialogue_is_stored_turn_by_turn_with_its_turn_ids():
    rows, problems = validate_dialogues([dialogue(FIRST, FOLLOW, UNANSWERABLE)], DIALOGUES.empty(), set(), KNOWN, NOW)
    assert not problems
    assert rows.select("dialogue_id", "turn", "answerable").rows() == [
        ("d1", 1, True),
        ("d1", 2, True),
        ("d1", 3, False),
    ]
    assert rows["relevance"].to_list() == [[1], [2, 1], []]
    assert rows["reference_answer"].to_list() == ["Honey.", None, None]
    assert turn_id("d1", 2) == "d1#2"


@pytest.mark.parametrize(
    ("bad", "reason", "detail"),
    [
        (dialogue(FIRST), "bad_turns", "2 to 20 turns"),
        (dialogue(FIRST, TurnCandidate("  ", ("a.md",))), "empty_question", "turn 2"),
        (dialogue(FIRST, TurnCandidate("And then?")), "no_expected_documents", "turn 2"),
        (dialogue(FIRST, TurnCandidate("And then?", ("a.md",), answerable=False)), "bad_unanswerable", "turn 2"),
        (dialogue(FIRST, TurnCandidate("And then?", ("ghost.md",))), "unknown_document_ids", "ghost.md"),
        (dialogue(FIRST, TurnCandidate("And then?", ("a.md",), relevance=(1, 2))), "bad_relevance", "turn 2"),
        (dialogue(FIRST, FOLLOW, dialogue_id="d#1"), "bad_id", "'#'"),
    ],
)
def test_a_bad_dialogue_is_refused_whole_with_its_reason(bad, reason, detail):
    rows, problems = validate_dialogues([bad], DIALOGUES.empty(), set(), KNOWN, NOW)
    assert rows.height == 0
    assert [(p.reason, detail in p.detail) for p in problems] == [(reason, True)]


def test_repeated_dialogues_and_taken_turn_ids_are_refused():
    stored, _ = validate_dialogues([dialogue(FIRST, FOLLOW)], DIALOGUES.empty(), set(), KNOWN, NOW)
    same_questions = dialogue(
        TurnCandidate("what do BEES make", ("a.md",)),
        TurnCandidate("and how long does it keep", ("a.md",)),
        dialogue_id="d2",
    )
    same_id = dialogue(FIRST, UNANSWERABLE)
    collides = dialogue(FIRST, UNANSWERABLE, dialogue_id="g7")
    rows, problems = validate_dialogues([same_questions, same_id, collides], stored, {"g7#2"}, KNOWN, NOW)
    assert rows.height == 0
    assert [p.reason for p in problems] == ["duplicate_dialogue", "duplicate_id", "duplicate_id"]
    assert "g7#2" in problems[2].detail


def test_a_golden_file_holds_entries_and_dialogues_and_names_bad_rows(tmp_path):
    path = tmp_path / "golden.jsonl"
    rows = [
        {"question": "One?", "expected_document_ids": ["a.md"]},
        {
            "id": "d1",
            "turns": [
                {"question": "First?", "expected_document_ids": ["a.md"]},
                {"question": "And then?", "answerable": False},
            ],
        },
        {"turns": "not a list"},
        {"turns": [{"question": "First?", "expected_document_ids": ["a.md"], "answerable": "yes"}]},
        {"turns": [{"question": "First?", "expected": ["a.md"]}]},
    ]
    path.write_text("\n".join(json.dumps(row) for row in rows) + "\n", encoding="utf-8")
    read = read_candidate_file(path)
    assert [c.question for c in read.candidates] == ["One?"]
    assert [(d.dialogue_id, len(d.turns), d.turns[1].answerable) for d in read.dialogues] == [("d1", 2, False)]
    assert [(p.source, p.reason) for p in read.problems] == [(f"{path}:{n}", "malformed_row") for n in (3, 4, 5)]
    assert "answerable must be true or false" in read.problems[1].detail
    assert "unknown fields ['expected']" in read.problems[2].detail


def test_the_digest_changes_with_a_turn_but_not_with_row_order():
    rows, _ = validate_dialogues([dialogue(FIRST, FOLLOW)], DIALOGUES.empty(), set(), KNOWN, NOW)
    changed, _ = validate_dialogues([dialogue(FIRST, UNANSWERABLE)], DIALOGUES.empty(), set(), KNOWN, NOW)
    assert dialogues_digest(rows) == dialogues_digest(rows.reverse())
    assert dialogues_digest(rows) != dialogues_digest(changed)


def invoke(*args):
    return runner.invoke(app, list(args), catch_exceptions=False)


@pytest.mark.flows
def test_golden_commands_add_list_check_and_delete_dialogues(home, tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "wax.md").write_text("Beeswax melts at 63 degrees. It keeps for years.", encoding="utf-8")
    assert invoke("ingest", "-c", "bees", str(docs)).exit_code == 0
    rows = tmp_path / "golden.jsonl"
    conversation = {
        "id": "w",
        "turns": [
            {
                "question": "When does beeswax melt?",
                "expected_document_ids": ["wax.md"],
                "reference_answer": "At 63 degrees.",
            },
            {"question": "And how long does it keep?", "expected_document_ids": ["wax.md"]},
            {"question": "And what does it cost?", "answerable": False},
        ],
    }
    rows.write_text(
        json.dumps({"id": "q1", "question": "Is wax flammable?", "expected_document_ids": ["wax.md"]})
        + "\n"
        + json.dumps(conversation)
        + "\n"
        + json.dumps({"id": "bad", "turns": [{"question": "Where?", "expected_document_ids": ["ghost.md"]}] * 2})
        + "\n",
        encoding="utf-8",
    )
    added = invoke("golden", "add", "-c", "bees", "--file", str(rows), "--json")
    assert added.exit_code == 1
    change = json.loads(added.stdout)
    assert (change["added"], change["dialogues_added"], change["dialogues"]) == (["q1"], ["w"], 1)
    assert [(p["source"].rsplit(":", 1)[1], p["reason"]) for p in change["problems"]] == [("3", "unknown_document_ids")]

    again = json.loads(invoke("golden", "add", "-c", "bees", "--file", str(rows), "--json").stdout)
    assert again["dialogues_added"] == [] and "duplicate_id" in {p["reason"] for p in again["problems"]}

    listed = json.loads(invoke("golden", "list", "-c", "bees", "--json").stdout)
    assert [e["entry_id"] for e in listed] == ["q1", "w#1", "w#2", "w#3"]
    assert [e.get("answerable") for e in listed[1:]] == [True, True, False]
    shown = invoke("golden", "list", "-c", "bees")
    assert "1 golden dialogues in bees (3 turns)" in shown.output and "unanswerable" in shown.output

    health = json.loads(invoke("collections", "check", "bees", "--json").stdout)
    assert health["golden_dialogues"] == 1

    assert invoke("golden", "delete", "-c", "bees", "w").exit_code == 0
    assert [e["entry_id"] for e in json.loads(invoke("golden", "list", "-c", "bees", "--json").stdout)] == ["q1"]
