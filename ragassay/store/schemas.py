"""Canonical tables: explicit Polars schemas, each with a name and a version stored in the file."""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl


@dataclass(frozen=True)
class TableSpec:
    """A table's name, schema version and columns; the name and version travel in Parquet metadata."""

    name: str
    version: int
    schema: pl.Schema

    def empty(self) -> pl.DataFrame:
        return pl.DataFrame(schema=self.schema)


UTC_TIME = pl.Datetime("us", "UTC")

DOCUMENTS = TableSpec(
    "documents",
    1,
    pl.Schema(
        {
            "doc_id": pl.String,
            "source_path": pl.String,
            "content_type": pl.String,
            "bytes": pl.Int64,
            "characters": pl.Int64,
            "sha256": pl.String,
            "title": pl.String,
            "ingested_at": UTC_TIME,
            "chunk_count": pl.Int32,
            "truncated": pl.Boolean,
            # The chunking settings that produced the chunks: a change re-chunks unchanged files.
            "chunker": pl.String,
            "text": pl.String,
        }
    ),
)

CHUNKS = TableSpec(
    "chunks",
    1,
    pl.Schema(
        {
            "chunk_id": pl.String,
            "doc_id": pl.String,
            "ordinal": pl.Int32,
            "page": pl.Int32,
            "char_start": pl.Int64,
            "char_end": pl.Int64,
            "text": pl.String,
            "text_sha256": pl.String,
        }
    ),
)

QUERIES = TableSpec("queries", 1, pl.Schema({"query_id": pl.String, "text": pl.String}))

QRELS = TableSpec(
    "qrels",
    1,
    pl.Schema({"query_id": pl.String, "doc_id": pl.String, "relevance": pl.Int32}),
)


def embeddings_spec(dimension: int) -> TableSpec:
    """Embedding cache rows: one vector per distinct chunk text for one model."""
    return TableSpec(
        "embeddings",
        1,
        pl.Schema(
            {
                "text_sha256": pl.String,
                "model_id": pl.String,
                "vector": pl.Array(pl.Float32, dimension),
            }
        ),
    )


GOLDEN = TableSpec(
    "golden",
    1,
    pl.Schema(
        {
            "entry_id": pl.String,
            "question": pl.String,
            "expected_document_ids": pl.List(pl.String),
            # Graded relevance of each expected document, in the same order (1 when not graded).
            "relevance": pl.List(pl.Int32),
            "reference_answer": pl.String,
            "origin": pl.String,  # manual, imported or generated
            "created_at": UTC_TIME,
            # Lineage of generated entries (null otherwise).
            "seed": pl.Int64,
            "model": pl.String,
            "prompt_version": pl.String,
            "source_chunk_id": pl.String,
            "source_document_sha256": pl.String,
        }
    ),
)

# Golden dialogues: one row per turn of a conversation whose later questions depend on
# the earlier ones. A turn's id is `DIALOGUE#TURN` (`g07#2`); an unanswerable turn names no
# expected documents and measures refusal in context.
DIALOGUES = TableSpec(
    "dialogues",
    1,
    pl.Schema(
        {
            "dialogue_id": pl.String,
            "turn": pl.Int32,  # 1-based, in the order the questions are asked
            "question": pl.String,
            "expected_document_ids": pl.List(pl.String),
            "relevance": pl.List(pl.Int32),
            "reference_answer": pl.String,
            "answerable": pl.Boolean,
            "origin": pl.String,  # manual or generated
            "created_at": UTC_TIME,
            # Lineage of generated dialogues (null otherwise).
            "seed": pl.Int64,
            "model": pl.String,
            "prompt_version": pl.String,
            "source_chunk_id": pl.String,
            "source_document_sha256": pl.String,
        }
    ),
)

RUN = TableSpec(
    "run",
    1,
    pl.Schema(
        {
            "configuration": pl.String,
            "query_collection": pl.String,
            "query_id": pl.String,
            "collection": pl.String,
            "doc_id": pl.String,
            "rank": pl.Int32,
            "score": pl.Float64,
        }
    ),
)


def per_question_spec(metric_columns: list[str]) -> TableSpec:
    """Per-question retrieval scores: one row per (configuration, question), one column per metric.
    Version 2: a dialogue's turn names its dialogue and number, and each question what it searched
    (a follow-up's query with its conversation; search/followups.py)."""
    return TableSpec(
        "retrieval_per_question",
        2,
        pl.Schema(
            {
                "configuration": pl.String,
                "query_collection": pl.String,
                "query_id": pl.String,
                "question": pl.String,
                "dialogue_id": pl.String,
                "turn": pl.Int32,
                "search_query": pl.String,
                "relevant_count": pl.Int32,
                "retrieved": pl.Int32,
                **dict.fromkeys(metric_columns, pl.Float64),
            }
        ),
    )


GENERATION_CANDIDATES = TableSpec(
    "generation_candidates",
    1,
    pl.Schema(
        {
            "seed": pl.Int64,
            "model": pl.String,
            "prompt_version": pl.String,
            "chunk_id": pl.String,
            "doc_id": pl.String,
            "question": pl.String,
            "answer": pl.String,
            "raw_output": pl.String,
            "accepted": pl.Boolean,
            "reason": pl.String,
            "detail": pl.String,
            "entry_id": pl.String,
        }
    ),
)

# Every generated dialogue (golden/dialogue_generation.py), accepted or discarded, with the turn
# the gate stopped at (null when accepted, or unreadable as a whole).
DIALOGUE_CANDIDATES = TableSpec(
    "dialogue_candidates",
    1,
    pl.Schema(
        {
            "seed": pl.Int64,
            "model": pl.String,
            "prompt_version": pl.String,
            "chunk_id": pl.String,
            "doc_id": pl.String,
            "questions": pl.List(pl.String),
            "answers": pl.List(pl.String),
            "raw_output": pl.String,
            "accepted": pl.Boolean,
            "reason": pl.String,
            "detail": pl.String,
            "failed_turn": pl.Int32,
            "dialogue_id": pl.String,
        }
    ),
)

# Answer evaluation: one row per (configuration, question), then one column per answer metric
# (answers_spec); a metric column is null when the question was not scored for that metric (the
# reason is in the batch's warnings or the outcome).
ANSWERS = TableSpec(
    "answers",
    3,
    pl.Schema(
        {
            "configuration": pl.String,
            "query_collection": pl.String,
            "query_id": pl.String,
            "question": pl.String,
            # Version 3: a golden dialogue's turn names its dialogue and number, what it searched
            # with its conversation (search/followups.py), and what was noticed of its call (a
            # system under test's history missing a failed turn's answer).
            "dialogue_id": pl.String,
            "turn": pl.Int32,
            "search_query": pl.String,
            "note": pl.String,
            "answerable": pl.Boolean,
            "outcome": pl.String,
            "reason": pl.String,
            "answer": pl.String,
            "statements": pl.Int32,
            "citations": pl.Int32,
            "sources": pl.Int32,
            "unparseable": pl.Boolean,
            "relevance": pl.Float64,
            "answer_calls": pl.Int32,
            "answer_prompt_tokens": pl.Int64,
            "answer_completion_tokens": pl.Int64,
            "answer_model_seconds": pl.Float64,
            "answer_seconds": pl.Float64,
            "implied_question": pl.String,
        }
    ),
)


def answers_spec(metrics: tuple[str, ...]) -> TableSpec:
    """The answers table with one Float64 column per answer metric, in the order given (the
    declared metrics: metrics/declared.py)."""
    return TableSpec(ANSWERS.name, ANSWERS.version, pl.Schema({**ANSWERS.schema, **dict.fromkeys(metrics, pl.Float64)}))


WARNINGS = TableSpec(
    "warnings",
    1,
    pl.Schema({"configuration": pl.String, "metric": pl.String, "question": pl.String, "reason": pl.String}),
)

CASE_RESULTS = TableSpec(
    "case_results",
    1,
    pl.Schema(
        {
            "case_id": pl.String,
            "input": pl.String,
            "outcome": pl.String,  # answered or refused
            "answer": pl.String,
            "passed": pl.Boolean,
            "checks": pl.String,  # one line per check: "contains FAILED: missing: '2,000'"
            "failures": pl.String,  # the checks that failed, e.g. "contains; judge"
            "judge_score": pl.Float64,
            "judge_reason": pl.String,
            "judge_error": pl.Boolean,
            "claims": pl.Int32,
            "claims_supported": pl.Int32,
            "passages": pl.Int32,
        }
    ),
)
