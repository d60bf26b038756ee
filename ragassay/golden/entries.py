"""Golden sets: validating candidate entries, and their digest (golden/files.py reads them from files).

Pure: candidates and the stored set in, accepted rows and problems out. An entry is refused, and
nothing of it stored, when its question is empty, it names no expected document or unknown ones,
it repeats a stored or earlier question (after normalization), or its id is taken. The good
entries of a file with some bad rows are still accepted.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

import polars as pl

from ragassay.fields import document_id, shown, unsafe_characters
from ragassay.store.schemas import GOLDEN

Origin = Literal["manual", "imported", "generated"]


# The largest relevance grade accepted (TREC-style grades are 0-4; anything near 2**31 is an error).
MAX_GRADE = 1000


@dataclass(frozen=True)
class GoldenCandidate:
    """An entry before validation; `source` says where it came from (file:line or a flag)."""

    question: str
    expected_document_ids: tuple[str, ...]
    source: str
    relevance: tuple[int, ...] | None = None
    reference_answer: str | None = None
    entry_id: str | None = None
    origin: Origin = "manual"
    lineage: dict = field(default_factory=dict)


@dataclass(frozen=True)
class GoldenProblem:
    """Why one entry (or file row) was refused."""

    source: str
    reason: str
    detail: str


def normalize_question(question: str) -> str:
    """Case-folded, accents and punctuation removed, whitespace collapsed: the duplicate key."""
    decomposed = unicodedata.normalize("NFKD", question.casefold())
    letters = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return " ".join(re.sub(r"[^\w\s]", " ", letters).split())


def default_entry_id(question: str) -> str:
    return "q-" + hashlib.sha256(normalize_question(question).encode()).hexdigest()[:10]


def validate_candidates(
    candidates: list[GoldenCandidate],
    stored: pl.DataFrame,
    known_doc_ids: set[str] | None,
    now: datetime,
    taken_ids: set[str] = frozenset(),
) -> tuple[pl.DataFrame, list[GoldenProblem]]:
    """Rows (GOLDEN schema) of the acceptable candidates, and a problem for each refused one.
    taken_ids: ids the collection's golden dialogues' turns have (`g07#2`), which no entry may take."""
    seen_questions = {normalize_question(q): i for q, i in stored.select("question", "entry_id").iter_rows()}
    seen_ids = set(stored["entry_id"].to_list()) | set(taken_ids)
    rows: list[dict] = []
    problems: list[GoldenProblem] = []
    for candidate in candidates:
        problem = _problem(candidate, seen_questions, seen_ids, known_doc_ids)
        if problem is not None:
            problems.append(GoldenProblem(candidate.source, *problem))
            continue
        entry_id = candidate.entry_id or default_entry_id(candidate.question)
        seen_questions[normalize_question(candidate.question)] = entry_id
        seen_ids.add(entry_id)
        rows.append(
            {
                "entry_id": entry_id,
                "question": candidate.question.strip(),
                "expected_document_ids": list(candidate.expected_document_ids),
                "relevance": list(candidate.relevance or [1] * len(candidate.expected_document_ids)),
                "reference_answer": candidate.reference_answer,
                "origin": candidate.origin,
                "created_at": now,
                **{
                    key: candidate.lineage.get(key)
                    for key in ("seed", "model", "prompt_version", "source_chunk_id", "source_document_sha256")
                },
            }
        )
    return pl.DataFrame(rows, schema=GOLDEN.schema), problems


def _problem(
    candidate: GoldenCandidate, seen_questions: dict[str, str], seen_ids: set[str], known_doc_ids: set[str] | None
) -> tuple[str, str] | None:
    if not candidate.question.strip():
        return "empty_question", "the question is empty"
    if not candidate.expected_document_ids:
        return "no_expected_documents", "expected_document_ids needs at least one document id"
    if candidate.relevance is not None and (
        len(candidate.relevance) != len(candidate.expected_document_ids) or min(candidate.relevance) < 1
    ):
        return "bad_relevance", "relevance needs one grade >= 1 per expected document"
    unsafe = expected_ids_problem(candidate.expected_document_ids)
    if unsafe:
        return unsafe
    # None: a collection holding only a golden set, whose ids nothing here can check.
    unknown = sorted(set(candidate.expected_document_ids) - known_doc_ids) if known_doc_ids is not None else []
    if unknown:
        return "unknown_document_ids", "not in the collection: " + ", ".join(map(shown, unknown))
    key = normalize_question(candidate.question)
    if key in seen_questions:
        return "duplicate_question", f"same question as entry {seen_questions[key]}"
    entry_id = candidate.entry_id or default_entry_id(candidate.question)
    if unsafe_characters(entry_id):
        return (
            "bad_id",
            f"entry id {shown(entry_id)!r} holds control or bidirectional characters "
            f"{', '.join(unsafe_characters(entry_id))}",
        )
    if entry_id in seen_ids:
        return "duplicate_id", f"entry id {entry_id} is already in the golden set (or a dialogue's turn)"
    return None


def expected_ids_problem(expected: tuple[str, ...]) -> tuple[str, str] | None:
    """("bad_id", why) when an expected document id holds a control or format character (a
    zero-width space, a direction override), naming the code points: no document id ingest
    stores holds one, so the id could never be found, and it would print as another."""
    for doc_id in expected:
        if unsafe_characters(doc_id):
            return (
                "bad_id",
                f"expected document id {shown(doc_id)!r} holds control or bidirectional characters "
                f"{', '.join(unsafe_characters(doc_id))}",
            )
    return None


def candidate_from_record(record: object, source: str) -> GoldenCandidate:
    """A candidate from one JSON/CSV record; ValueError names the field at fault."""
    if not isinstance(record, dict):
        raise ValueError("each row must be an object with a 'question' field")
    question = record.get("question")
    if not isinstance(question, str):
        raise ValueError("field 'question' must be a string")
    expected = record.get("expected_document_ids", [])
    if isinstance(expected, str):
        expected = [expected]
    if not isinstance(expected, list) or not all(isinstance(d, str) and d.strip() for d in expected):
        raise ValueError("field 'expected_document_ids' must be a list of document ids")
    relevance = record.get("relevance")
    if relevance is not None:
        # Strict: 1.9, "2" and true are not grades (they would be silently changed), and a grade
        # must fit the stored Int32 column.
        if not isinstance(relevance, list) or not all(type(g) is int and 0 <= g <= MAX_GRADE for g in relevance):
            raise ValueError(
                f"field 'relevance' must be a list of whole numbers from 0 to {MAX_GRADE}, got {str(relevance)[:80]}"
            )
        relevance = tuple(relevance)
    answer = record.get("reference_answer")
    if answer is not None and not isinstance(answer, str):
        raise ValueError("field 'reference_answer' must be a string")
    entry_id = record.get("id")
    if entry_id is not None and (not isinstance(entry_id, (str, int)) or not str(entry_id).strip()):
        raise ValueError("field 'id' must be a non-empty string")
    return GoldenCandidate(
        question=question,
        expected_document_ids=tuple(document_id(d) for d in expected),
        source=source,
        relevance=relevance,
        reference_answer=answer or None,
        entry_id=str(entry_id).strip() if entry_id is not None else None,
    )


def golden_digest(golden: pl.DataFrame) -> str:
    """Digest of a golden set's questions and judgements (order-independent)."""
    digest = hashlib.sha256()
    for entry_id, question, expected, relevance in (
        golden.sort("entry_id").select("entry_id", "question", "expected_document_ids", "relevance").iter_rows()
    ):
        digest.update(json.dumps([entry_id, question, expected, relevance]).encode())
    return digest.hexdigest()[:16]
