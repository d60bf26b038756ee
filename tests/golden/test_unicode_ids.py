"""Document ids read one way everywhere (fields.document_id): a golden set's expected ids, a
system's returned ids, ingest and `documents delete` all in NFC without outer spaces, so one
document never has two ids; an id holding an invisible or direction-changing character is refused
naming its code point, never printed raw."""

from __future__ import annotations

import json
import unicodedata

import numpy as np
import pytest

from ragassay.evaluation.questions import gather_golden_questions
from ragassay.evaluation.retrieval_scoring import score_rankings
from ragassay.evaluation.system_runs import run_system
from ragassay.golden.store import add_from_file, load_golden
from ragassay.metrics.names import standard_metrics
from ragassay.store.workspace import collection_paths
from ragassay.systems.settings import SystemConfiguration

CAFE_NFC = "menus/café.md"
CAFE_NFD = unicodedata.normalize("NFD", CAFE_NFC)


def test_a_golden_id_in_nfd_matches_the_nfc_id_a_system_returns_and_an_invisible_character_is_refused(home, tmp_path):
    assert CAFE_NFC != CAFE_NFD
    golden = tmp_path / "golden.jsonl"
    rows = [
        {"id": "q1", "question": "What does the café serve?", "expected_document_ids": [CAFE_NFD]},
        {"id": "q2", "question": "Where is the hive?", "expected_document_ids": [" hives/site.md "]},
        {"id": "q3", "question": "Who keeps bees here?", "expected_document_ids": ["people/keeper\u200b.md"]},
        {"id": "q4", "question": "Which way is north?", "expected_document_ids": ["maps/\u202enorth.md"]},
    ]
    golden.write_text("\n".join(json.dumps(row) for row in rows) + "\n")
    report = add_from_file(home, "golden-only", golden)
    stored = load_golden(collection_paths(home, "golden-only"))
    assert sorted(stored["entry_id"]) == ["q1", "q2"]
    ids = dict(zip(stored["entry_id"], stored["expected_document_ids"].to_list(), strict=True))
    assert ids == {"q1": [CAFE_NFC], "q2": ["hives/site.md"]}
    refused = {problem["reason"] for problem in report.problems}
    assert refused == {"bad_id"}
    details = " ".join(problem["detail"] for problem in report.problems)
    assert "'people/keeper<U+200B>.md'" in details and "U+200B" in details
    assert "'maps/<U+202E>north.md'" in details and "U+202E" in details
    assert "\u200b" not in details and "\u202e" not in details, "never printed raw"

    # A system returning the NFC id, and one with spaces around it, at rank 1: both hits.
    run = tmp_path / "run.trec"
    run.write_text(f"q1 Q0 {CAFE_NFC} 1 9.0 sys\nq2 Q0 hives/site.md 1 9.0 sys\n")
    questions, _ = gather_golden_questions(home, ("golden-only",), None, 0)
    found = run_system(
        home,
        ("golden-only",),
        questions,
        SystemConfiguration(label="sys", system={"kind": "trec", "path": str(run)}),
        10,
        None,
    )
    scores = score_rankings(questions, found.rankings, standard_metrics([1]), 10)
    assert np.all(scores["recall@1"] == 1.0)


@pytest.mark.parametrize("returned", [CAFE_NFD, f"  {CAFE_NFC} "])
def test_a_systems_id_is_read_as_the_golden_sets_are(home, tmp_path, returned):
    golden = tmp_path / "golden.jsonl"
    golden.write_text(json.dumps({"id": "q1", "question": "Menu?", "expected_document_ids": [CAFE_NFC]}) + "\n")
    add_from_file(home, "ids", golden)
    records = tmp_path / "records.jsonl"
    records.write_text(json.dumps({"query_id": "q1", "question": "Menu?", "retrieved": [returned]}) + "\n")
    questions, _ = gather_golden_questions(home, ("ids",), None, 0)
    found = run_system(
        home,
        ("ids",),
        questions,
        SystemConfiguration(label="sys", system={"kind": "records", "path": str(records)}),
        10,
        None,
    )
    assert score_rankings(questions, found.rankings, standard_metrics([1]), 10)["recall@1"].tolist() == [1.0]
