"""The questions of an evaluation: each collection's golden entries (with their graded expected
documents) sampled by seed, the unanswerable questions of a file, and what identifies their data."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import polars as pl
from pydantic import BaseModel

from ragassay.errors import ConfigError, RagassayError, listed_problems
from ragassay.golden.entries import default_entry_id, golden_digest
from ragassay.golden.store import load_golden, read_question_file
from ragassay.run_warnings import RunWarning
from ragassay.store.workspace import collection_paths, load_documents, read_manifest


class GoldenContext(BaseModel):
    """The questions of an evaluation and what identifies the data they came from."""

    questions: list[dict]
    warnings: list[RunWarning]
    golden_digests: dict[str, str]
    golden_sizes: dict[str, int]
    index_digests: dict[str, str]
    embedding_models: dict[str, str]


def _collection_questions(
    name: str, golden: pl.DataFrame, known: set[str] | None
) -> tuple[list[EvalQuestion], list[RunWarning]]:
    """One collection's golden entries as questions, and a warning for each entry without expected
    documents (left out) or expecting documents the collection no longer holds (known: its doc
    ids; None when it holds only a golden set)."""
    questions, warnings = [], []
    for row in golden.iter_rows(named=True):
        where = f"{name}/{row['entry_id']}"
        if not row["expected_document_ids"]:
            warnings.append(
                RunWarning(metric="golden", question=where, reason="no expected documents; excluded from every metric")
            )
            continue
        gone = sorted(set(row["expected_document_ids"]) - known) if known is not None else []
        if gone:
            warnings.append(
                RunWarning(
                    metric="golden",
                    question=where,
                    reason=f"expected documents no longer in the collection: {', '.join(gone)}",
                )
            )
        questions.append(
            EvalQuestion(
                query_collection=name,
                query_id=row["entry_id"],
                question=row["question"],
                judgements={(name, doc): grade for doc, grade in zip(row["expected_document_ids"], row["relevance"])},
                reference_answer=row["reference_answer"],
            )
        )
    return questions, warnings


def gather_golden_questions(
    home: Path, collections: tuple[str, ...], max_questions: int | None, seed: int
) -> tuple[list[EvalQuestion], GoldenContext]:
    """The golden questions of an evaluation (seeded sample) and what identifies their data."""
    questions: list[EvalQuestion] = []
    warnings: list[RunWarning] = []
    digests, sizes, index_digests, models = {}, {}, {}, {}
    for name in collections:
        paths = collection_paths(home, name)
        golden = load_golden(paths)
        manifest = read_manifest(paths) or {}
        digests[name], sizes[name] = golden_digest(golden), golden.height
        index_digests[name] = str(manifest.get("index_digest"))
        models[name] = str(manifest.get("embedding_model_id"))
        known = set(load_documents(paths)["doc_id"].to_list()) if paths.documents.exists() else None
        if known is None:
            warnings.append(
                RunWarning(
                    metric="golden",
                    reason=f"collection {name} holds only a golden set: its expected document ids could not be "
                    "checked against documents (ingest its corpus for that check)",
                )
            )
        collection_questions, collection_warnings = _collection_questions(name, golden, known)
        questions += collection_questions
        warnings += collection_warnings
    if not questions:
        raise RagassayError(
            f"no golden questions in {', '.join(collections)}; add some with `ragassay golden add` or `golden import`"
        )
    sampled = sample_questions(questions, max_questions, seed)
    context = GoldenContext(
        questions=[{"collection": q.query_collection, "id": q.query_id} for q in sampled],
        warnings=warnings,
        golden_digests=digests,
        golden_sizes=sizes,
        index_digests=index_digests,
        embedding_models=models,
    )
    return sampled, context


DocKey = tuple[str, str]  # (collection, doc_id)


@dataclass(frozen=True)
class EvalQuestion:
    """A golden question with its graded expected documents."""

    query_collection: str
    query_id: str
    question: str
    judgements: dict[DocKey, int]
    reference_answer: str | None = None


def sample_questions(questions: list[EvalQuestion], max_questions: int | None, seed: int) -> list[EvalQuestion]:
    """At most max_questions, chosen by a seeded hash of each question's id (same seed, same sample),
    kept in their original order."""
    if max_questions is None or len(questions) <= max_questions:
        return questions

    def draw(question: EvalQuestion) -> str:
        return hashlib.sha256(f"{seed}:{question.query_collection}/{question.query_id}".encode()).hexdigest()

    chosen = {id(q) for q in sorted(questions, key=draw)[:max_questions]}
    return [q for q in questions if id(q) in chosen]


UNANSWERABLE_COLLECTION = "unanswerable"


def read_unanswerable(path: Path) -> list[EvalQuestion]:
    """Questions the corpus cannot answer, from a .jsonl or .csv file (question, optional id).

    Refused as a whole (ConfigError naming file:line) when any row is malformed, repeats an id,
    or names expected documents: a wrong refusal set would skew both refusal metrics.
    """
    candidates, problems = read_question_file(path, "unanswerable questions")
    messages = [f"{p.source}: {p.detail}" for p in problems]
    seen: set[str] = set()
    questions = []
    for candidate in candidates:
        entry_id = candidate.entry_id or default_entry_id(candidate.question)
        if candidate.expected_document_ids:
            messages.append(f"{candidate.source}: an unanswerable question cannot name expected_document_ids")
        elif not candidate.question.strip():
            messages.append(f"{candidate.source}: field 'question' is empty")
        elif entry_id in seen:
            messages.append(f"{candidate.source}: id {entry_id} repeats an earlier row")
        seen.add(entry_id)
        questions.append(EvalQuestion(UNANSWERABLE_COLLECTION, entry_id, candidate.question.strip(), {}))
    if messages:
        raise ConfigError(f"{path} has {len(messages)} bad rows: " + listed_problems(messages))
    if not questions:
        raise ConfigError(f"{path} holds no questions")
    return questions
