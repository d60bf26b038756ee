"""Golden-set generation: each discard reason through the pure gate with scripted outputs, the
labelled fixture, seeded sampling, and the whole flow with the real SmolLM2 on the sample corpus."""

from __future__ import annotations

import json
import shutil

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

from ragassay.cli.main import app
from ragassay.golden.generation import sample_pages
from ragassay.golden.quality_gate import GeneratedPair, gate_candidate, is_passage_dependent
from tests.conftest import REPO, SAMPLE

PASSAGE = (
    "Beeswax melts between 62 and 64 degrees Celsius. Never heat it over an open flame: its flash point "
    "is about 204 degrees, and wax fires are hard to put out."
)


def decide(question: str, answer: str = "Between 62 and 64 degrees Celsius.", known=(), vectors=None):
    return gate_candidate(
        GeneratedPair(question=question, answer=answer), PASSAGE, list(known), *(vectors or (None, None))
    )


@pytest.mark.parametrize(
    ("question", "answer", "reason"),
    [
        ("At what temperature does beeswax melt", "62 to 64 degrees.", "not_a_question"),
        ("Wax melt?", "62 to 64 degrees.", "too_short"),
        ("At what temperature " + "does beeswax really " * 12 + "melt?", "62 to 64 degrees.", "too_long"),
        ("At what temperature does beeswax melt?", "62 to 64 degrees, " * 30, "too_long"),
        ("At what temperature does beeswax melt?", "   ", "empty_answer"),
        ("According to the passage, when does wax melt?", "62 to 64 degrees.", "passage_dependent"),
        ("What does the text say about wax fires?", "They are hard to put out.", "passage_dependent"),
        ("What is its flash point?", "About 204 degrees.", "passage_dependent"),
        ("Beeswax melts between 62 and 64 degrees Celsius?", "Yes.", "copies_passage"),
        ("At what temperature does beeswax melt?", "At 900 kelvin on the surface of Venus.", "answer_not_in_page"),
    ],
)
def test_each_discard_reason(question, answer, reason):
    decision = decide(question, answer)
    assert (decision.accepted, decision.reason) == (False, reason)


def test_unreadable_model_output_is_unparseable():
    assert gate_candidate(None, PASSAGE, []).reason == "unparseable"


def test_near_duplicates_by_text_and_by_embedding():
    by_text = decide("At which temperature does beeswax melt?", known=["At what temperature does beeswax melt?"])
    assert by_text.reason == "near_duplicate" and "token_sort_ratio" in by_text.detail
    vector = np.array([0.6, 0.8], dtype=np.float32)
    by_vector = decide(
        "How hot must beeswax get before it turns liquid?",
        known=["Melting point of wax, please?"],
        vectors=(vector, vector[None, :]),
    )
    assert by_vector.reason == "near_duplicate" and "cosine" in by_vector.detail


def test_a_good_question_passes():
    assert decide("At what temperature does beeswax melt?").accepted


@pytest.mark.parametrize(
    ("question", "dependent"),
    [
        ("How long does a queen live after it emerges?", False),
        ("Why are these cells capped?", True),
        ("Why can't it fly?", True),
        ("Under this section, how many hives are allowed?", True),
        ("What is the flash point of beeswax?", False),
    ],
)
def test_pronouns_need_an_antecedent_in_the_question(question, dependent):
    assert is_passage_dependent(question) is dependent


def test_the_gate_on_the_teams_labelled_candidates(home):
    """Discard precision and recall on data/gate (benchmarks/bench_gate.py prints the detail)."""
    from ragassay.environment import models_dir
    from ragassay.search.dense import DEFAULT_MODEL_NAME, Embedder, resolve_model

    fixture = json.loads((REPO / "data" / "gate" / "labelled_candidates.json").read_text())
    assert len(fixture["candidates"]) >= 60
    embedder = Embedder(resolve_model(DEFAULT_MODEL_NAME, models_dir()))
    right = discarded = bad = 0
    for candidate in fixture["candidates"]:
        known = candidate.get("known", [])
        vectors = embedder.embed([candidate["question"], *known])
        decision = gate_candidate(
            GeneratedPair(question=candidate["question"], answer=candidate["answer"]),
            fixture["passages"][candidate["passage"]],
            known,
            vectors[0],
            vectors[1:] if known else None,
        )
        is_bad = candidate["label"] != "accept"
        bad += is_bad
        discarded += not decision.accepted
        right += is_bad and not decision.accepted
    assert right / discarded >= 0.95 and right / bad >= 0.85


def test_pages_are_one_per_document_in_seeded_order():
    chunks = pl.DataFrame(
        {
            "chunk_id": [f"d{d}#{c}" for d in range(5) for c in range(3)],
            "doc_id": [f"d{d}" for d in range(5) for _ in range(3)],
        }
    )
    first = sample_pages(chunks, seed=1, skip_chunk_ids=set())
    assert first["doc_id"].n_unique() == first.height == 5
    assert first.equals(sample_pages(chunks, seed=1, skip_chunk_ids=set()))
    assert not first["chunk_id"].equals(sample_pages(chunks, seed=2, skip_chunk_ids=set())["chunk_id"])
    skipped = sample_pages(chunks, seed=1, skip_chunk_ids={first["chunk_id"][0]})
    assert first["chunk_id"][0] not in skipped["chunk_id"].to_list() and skipped.height == 5


# SmolLM2 writes fast (the judged check still uses the default judge): these tests are about the
# generation loop, not the questions' quality (benchmarks/bench_generation.py measures that).
SMOLLM2 = {"backend": "smollm2"}


def generated_workspace(tmp_path, name):
    from tests.helpers import build_collection

    home = tmp_path / name
    build_collection(home, "sample", (SAMPLE / "corpus",))
    return home


@pytest.mark.slow
@pytest.mark.flows
def test_generation_is_reproducible_grows_the_set_and_resumes(tmp_path):
    from flows.generate_golden import generate_golden_flow
    from ragassay import tracking
    from ragassay.config import GenerateConfig
    from ragassay.golden.store import load_golden
    from ragassay.store.workspace import collection_paths

    first_home, second_home = generated_workspace(tmp_path, "a"), generated_workspace(tmp_path, "b")
    first = generate_golden_flow(
        GenerateConfig(collection="sample", count=1, seed=5, model=SMOLLM2, judge=SMOLLM2, home=first_home)
    )
    again = generate_golden_flow(
        GenerateConfig(collection="sample", count=1, seed=5, model=SMOLLM2, judge=SMOLLM2, home=second_home)
    )
    columns = ["chunk_id", "question", "answer", "reason"]
    log_a = pl.read_parquet(collection_paths(first_home, "sample").generation_log).select(columns)
    log_b = pl.read_parquet(collection_paths(second_home, "sample").generation_log).select(columns)
    assert log_a.equals(log_b), "same seed, corpus and model give the same candidates"
    assert again.accepted == first.accepted
    assert first.attempted == log_a.height and sum(first.discarded.values()) + len(first.accepted) == first.attempted
    assert first.acceptance_rate == len(first.accepted) / first.attempted

    # A second call (or a rerun after an interruption) skips every page already tried.
    grown = generate_golden_flow(
        GenerateConfig(collection="sample", count=1, seed=5, model=SMOLLM2, judge=SMOLLM2, home=first_home)
    )
    assert grown.skipped_pages >= first.attempted
    log = pl.read_parquet(collection_paths(first_home, "sample").generation_log)
    assert log["chunk_id"].is_unique().all(), "no page is asked twice"
    golden = load_golden(collection_paths(first_home, "sample"))
    generated = golden.filter(pl.col("origin") == "generated")
    assert generated.height == len(first.accepted) + len(grown.accepted)
    assert generated["question"].is_unique().all() and generated["source_chunk_id"].is_unique().all()
    for row in generated.iter_rows(named=True):
        assert row["seed"] == 5 and row["model"].startswith("smollm2:") and row["prompt_version"] == "golden-question/2"
        assert (
            row["source_chunk_id"].startswith(row["expected_document_ids"][0] + "#")
            and len(row["source_document_sha256"]) == 64
        )

    run = tracking.client(first_home).get_run(first.run_id)
    assert run.data.params["seed"] == "5" and run.data.metrics["acceptance_rate"] == pytest.approx(
        first.acceptance_rate
    )
    assert tracking.download_table(first_home, first.run_id, "candidates").height == first.attempted


def test_golden_list_marks_entries_whose_source_changed(tmp_path, monkeypatch):
    # A generated entry as the generation loop stores it (the loop itself is tested above): its
    # lineage records the digest of the document the question was written from.
    from ragassay.golden.entries import GoldenCandidate
    from ragassay.golden.store import add_candidates
    from ragassay.store.workspace import collection_paths, load_documents
    from tests.helpers import build_collection, ingest

    corpus = tmp_path / "corpus"
    shutil.copytree(SAMPLE / "corpus", corpus)
    home = tmp_path / "stale"
    build_collection(home, "sample", (corpus,))
    documents = load_documents(collection_paths(home, "sample"))
    source = documents.filter(pl.col("doc_id").str.ends_with("overview.md")).row(0, named=True)
    question = GoldenCandidate(
        question="What does the overview say a new beekeeper should read first?",
        expected_document_ids=(source["doc_id"],),
        source="generated in the test",
        reference_answer="The guides.",
        origin="generated",
        lineage={"seed": 7, "model": "test", "prompt_version": "test", "source_document_sha256": source["sha256"]},
    )
    assert add_candidates(home, "sample", [question], []).added
    monkeypatch.setenv("RAGASSAY_HOME", str(home))
    runner = CliRunner()
    entries = json.loads(runner.invoke(app, ["golden", "list", "-c", "sample", "--json"]).stdout)
    generated = next(e for e in entries if e["origin"] == "generated")
    assert generated["stale"] is False
    rewritten = next(path for path in corpus.rglob("overview.md"))
    rewritten.write_text("This document was rewritten after the question was generated.", encoding="utf-8")
    assert ingest(home, "sample", (corpus,)).counts["replaced"] == 1
    entries = json.loads(runner.invoke(app, ["golden", "list", "-c", "sample", "--json"]).stdout)
    assert next(e for e in entries if e["entry_id"] == generated["entry_id"])["stale"] is True


@pytest.mark.parametrize(
    ("question", "answer", "reason"),
    [
        ("Can I melt it over an open flame?", "No: its flash point is about 204 degrees.", None),
        ("And its flash point?", "About 204 degrees.", None),
        ("What about wax fires?", "They are hard to put out.", None),
        ("What is the flash point of beeswax?", "About 204 degrees.", "standalone_followup"),
        ("Why?", "Its flash point is low.", "too_short"),
        ("And what does the passage say about it?", "Wax fires are hard to put out.", "passage_dependent"),
        ("So at what temperature does beeswax melt?", "Between 62 and 64 degrees Celsius.", "repeated_turn"),
        ("And how much does it cost?", "Forty dollars a kilogram in Tokyo.", "answer_not_in_page"),
        ("And its flash point", "About 204 degrees.", "not_a_question"),
    ],
)
def test_each_follow_up_must_point_back_and_be_answered_by_the_page(question, answer, reason):
    from ragassay.golden.quality_gate import gate_followup

    decision = gate_followup(
        GeneratedPair(question=question, answer=answer), PASSAGE, ["At what temperature does beeswax melt?"]
    )
    assert (decision.accepted, decision.reason) == (reason is None, reason)


@pytest.mark.slow
@pytest.mark.flows
def test_dialogue_generation_is_seeded_gated_turn_by_turn_logged_and_resumed(tmp_path, monkeypatch):
    from ragassay.golden.store import load_dialogues
    from ragassay.store.workspace import collection_paths

    home = generated_workspace(tmp_path, "d")
    monkeypatch.setenv("RAGASSAY_HOME", str(home))
    arguments = ["golden", "generate", "-c", "sample", "--dialogues", "1", "--turns", "2", "--seed", "3"]
    arguments += ["--model", "smollm2", "--judge-model", "smollm2", "--json"]
    both = CliRunner().invoke(app, [*arguments, "--count", "1"])
    assert both.exit_code == 2 and "either --count (questions) or --dialogues" in both.output
    result = CliRunner().invoke(app, arguments)
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["prompt_version"] == "golden-dialogue/1" and report["requested"] == 1
    log = pl.read_parquet(collection_paths(home, "sample").dialogue_generation_log)
    assert log.height == report["attempted"] >= 1
    assert sum(report["discarded"].values()) + len(report["accepted"]) == report["attempted"]
    for row in log.iter_rows(named=True):
        # Each discarded dialogue says why, and (past reading it) at which turn.
        assert row["accepted"] or row["reason"] in report["discarded"]
        assert row["reason"] == "unparseable" or row["accepted"] or 1 <= row["failed_turn"] <= 2
        assert row["questions"] is None or len(row["questions"]) == 2
    stored = load_dialogues(collection_paths(home, "sample"))
    assert stored["dialogue_id"].n_unique() == len(report["accepted"])
    assert set(stored["origin"]) <= {"generated"} and set(stored["prompt_version"]) <= {"golden-dialogue/1"}
    # Again with the same seed: every page already tried is skipped, none asked twice.
    again = json.loads(CliRunner().invoke(app, arguments).stdout)
    assert again["skipped_pages"] >= report["attempted"]
    log = pl.read_parquet(collection_paths(home, "sample").dialogue_generation_log)
    assert log["chunk_id"].is_unique().all()
