"""Golden sets: each kind of bad entry refused with its reason, good rows of a bad file kept."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from typer.testing import CliRunner

from ragassay.cli.main import app
from ragassay.golden.entries import (
    GoldenCandidate,
    golden_digest,
    normalize_question,
    validate_candidates,
)
from ragassay.golden.files import read_candidate_file
from ragassay.store.schemas import GOLDEN

NOW = datetime(2026, 1, 1, tzinfo=UTC)
KNOWN = {"a.md", "b.md"}
runner = CliRunner()


def candidate(question="How hot is wax?", expected=("a.md",), **extra) -> GoldenCandidate:
    return GoldenCandidate(question, tuple(expected), "test", **extra)


@pytest.mark.parametrize(
    ("bad", "reason", "detail"),
    [
        (candidate(question="   "), "empty_question", "empty"),
        (candidate(expected=()), "no_expected_documents", "at least one"),
        (candidate(expected=("a.md", "ghost.md", "zz.md")), "unknown_document_ids", "ghost.md, zz.md"),
        (candidate(relevance=(1,), expected=("a.md", "b.md")), "bad_relevance", "one grade"),
        (candidate(relevance=(0,)), "bad_relevance", ">= 1"),
    ],
)
def test_bad_entries_are_refused_with_their_reason(bad, reason, detail):
    accepted, problems = validate_candidates([bad], GOLDEN.empty(), KNOWN, NOW)
    assert accepted.height == 0
    assert [(p.reason, detail in p.detail) for p in problems] == [(reason, True)]


def test_duplicates_of_stored_and_new_questions_are_refused():
    stored, _ = validate_candidates([candidate("How hot is wax?")], GOLDEN.empty(), KNOWN, NOW)
    accepted, problems = validate_candidates(
        [candidate("HOW HOT is  wax"), candidate("What is propolis?"), candidate("what is propolis ?")],
        stored,
        KNOWN,
        NOW,
    )
    assert accepted["question"].to_list() == ["What is propolis?"]
    assert [p.reason for p in problems] == ["duplicate_question", "duplicate_question"]


def test_accepted_entries_get_ids_grades_and_origin():
    accepted, problems = validate_candidates(
        [candidate(expected=("a.md", "b.md"), relevance=(2, 1), reference_answer="63 C", entry_id="wax-1")],
        GOLDEN.empty(),
        KNOWN,
        NOW,
    )
    assert not problems
    row = accepted.row(0, named=True)
    assert (row["entry_id"], row["expected_document_ids"], row["relevance"], row["origin"]) == (
        "wax-1",
        ["a.md", "b.md"],
        [2, 1],
        "manual",
    )
    default = validate_candidates([candidate()], GOLDEN.empty(), KNOWN, NOW)[0]["entry_id"].item()
    assert default.startswith("q-") and len(default) == 12


def test_normalization_ignores_case_accents_punctuation_and_spacing():
    assert normalize_question("  Qu'est-ce que la Propolis ?! ") == normalize_question("qu est ce que la propolis")
    assert normalize_question("Crème brûlée") == "creme brulee"


def test_file_rows_that_are_malformed_are_named_by_file_and_line(tmp_path):
    path = tmp_path / "golden.jsonl"
    path.write_text(
        "\n".join(
            [
                json.dumps({"question": "Good one?", "expected_document_ids": ["a.md"]}),
                "{not json",
                json.dumps({"question": 42, "expected_document_ids": ["a.md"]}),
                json.dumps({"question": "Ids not a list?", "expected_document_ids": [1, 2]}),
                json.dumps(["just", "a", "list"]),
            ]
        ),
        encoding="utf-8",
    )
    read = read_candidate_file(path)
    candidates, problems = read.candidates, read.problems
    assert [c.question for c in candidates] == ["Good one?"]
    assert sorted(p.source for p in problems) == [f"{path}:{n}" for n in (2, 3, 4, 5)]
    assert {p.reason for p in problems} == {"malformed_row"}


def test_csv_rows_split_document_ids_on_semicolons(tmp_path):
    path = tmp_path / "golden.csv"
    path.write_text(
        'question,expected_document_ids,reference_answer,id\n"Wax, how hot?",a.md;b.md,63 C,w1\n', encoding="utf-8"
    )
    read = read_candidate_file(path)
    candidates, problems = read.candidates, read.problems
    assert not problems
    assert candidates[0].expected_document_ids == ("a.md", "b.md") and candidates[0].entry_id == "w1"


def test_digest_ignores_row_order_but_not_content():
    rows, _ = validate_candidates([candidate("One?"), candidate("Two?")], GOLDEN.empty(), KNOWN, NOW)
    assert golden_digest(rows) == golden_digest(rows.reverse())
    changed, _ = validate_candidates(
        [candidate("One?"), candidate("Two?", expected=("b.md",))], GOLDEN.empty(), KNOWN, NOW
    )
    assert golden_digest(rows) != golden_digest(changed)


def invoke(*args):
    return runner.invoke(app, list(args), catch_exceptions=False)


@pytest.mark.flows
def test_golden_commands_store_list_refuse_and_delete(home, tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "wax.md").write_text("Beeswax melts at 63 degrees.", encoding="utf-8")
    assert invoke("ingest", "-c", "bees", str(docs)).exit_code == 0

    added = invoke(
        "golden",
        "add",
        "-c",
        "bees",
        "--question",
        "When does wax melt?",
        "--expected-doc",
        "wax.md",
        "--id",
        "w1",
        "--json",
    )
    assert added.exit_code == 0 and json.loads(added.stdout)["added"] == ["w1"]

    rows = tmp_path / "rows.jsonl"
    rows.write_text(
        json.dumps({"question": "when does WAX melt", "expected_document_ids": ["wax.md"]})
        + "\n"
        + json.dumps({"question": "Is wax flammable?", "expected_document_ids": ["wax.md"], "reference_answer": "Yes"})
        + "\n"
        + json.dumps({"question": "Where is the smoker?", "expected_document_ids": ["smoker.md"]})
        + "\n",
        encoding="utf-8",
    )
    partial = invoke("golden", "add", "-c", "bees", "--file", str(rows), "--json")
    assert partial.exit_code == 1
    report = json.loads(partial.stdout)
    assert len(report["added"]) == 1 and report["size"] == 2
    assert sorted(p["reason"] for p in report["problems"]) == ["duplicate_question", "unknown_document_ids"]

    listed = json.loads(invoke("golden", "list", "-c", "bees", "--json").stdout)
    assert sorted(e["question"] for e in listed) == ["Is wax flammable?", "When does wax melt?"]

    refused = invoke("golden", "delete", "-c", "bees", "w1", "nope")
    assert refused.exit_code == 2 and "nope" in refused.output
    assert invoke("golden", "delete", "-c", "bees", "w1").exit_code == 0
    assert len(json.loads(invoke("golden", "list", "-c", "bees", "--json").stdout)) == 1

    usage = invoke("golden", "add", "-c", "bees")
    assert usage.exit_code == 2 and "--file or --question" in usage.output


@pytest.mark.flows
def test_golden_import_from_beir_keeps_graded_relevance(home, tmp_path):
    dataset = tmp_path / "beir"
    (dataset / "qrels").mkdir(parents=True)
    (dataset / "corpus.jsonl").write_text(
        "\n".join(json.dumps({"_id": d, "title": "", "text": f"text of {d}"}) for d in ("d1", "d2", "d3")),
        encoding="utf-8",
    )
    (dataset / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "which documents?"}), encoding="utf-8")
    (dataset / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\nq1\td1\t2\nq1\td2\t1\nq1\td3\t0\n", encoding="utf-8"
    )
    assert invoke("ingest", "-c", "tiny", "--format", "beir", str(dataset)).exit_code == 0
    imported = invoke("golden", "import", "-c", "tiny", "--format", "beir", "--json")
    assert imported.exit_code == 0 and json.loads(imported.stdout)["added"] == ["q1"]
    entry = json.loads(invoke("golden", "list", "-c", "tiny", "--json").stdout)[0]
    assert (entry["expected_document_ids"], entry["relevance"], entry["origin"]) == (["d1", "d2"], [2, 1], "imported")
