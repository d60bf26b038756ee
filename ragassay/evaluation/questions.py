"""The questions of an evaluation: each collection's golden entries (with their graded expected
documents) sampled by seed, the unanswerable questions of a file, and what identifies their data."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import polars as pl
from pydantic import BaseModel

from ragassay.errors import ConfigError, RagassayError, listed_problems
from ragassay.golden.dialogues import dialogues_digest, turn_id
from ragassay.golden.entries import default_entry_id, golden_digest
from ragassay.golden.store import load_dialogues, load_golden, read_question_file
from ragassay.run_warnings import RunWarning
from ragassay.store.workspace import collection_paths, load_documents, read_manifest

T = TypeVar("T")


class GoldenContext(BaseModel):
    """The questions of an evaluation (a dialogue's turns among them) and what identifies the data
    they came from."""

    questions: list[dict]
    warnings: list[RunWarning]
    golden_digests: dict[str, str]
    golden_sizes: dict[str, int]
    index_digests: dict[str, str]
    embedding_models: dict[str, str]
    dialogue_digests: dict[str, str] = {}
    dialogues: int = 0  # golden dialogues evaluated (their turns are among `questions`)


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


def _dialogue_questions(
    name: str, dialogues: pl.DataFrame, known: set[str] | None
) -> tuple[list[EvalQuestion], list[RunWarning]]:
    """One collection's golden dialogues as questions, turn after turn, each with the questions of
    its dialogue's earlier turns; a warning for each turn expecting documents the collection no
    longer holds."""
    questions, warnings = [], []
    history: dict[str, list[str]] = {}
    for row in dialogues.iter_rows(named=True):
        earlier = history.setdefault(row["dialogue_id"], [])
        identifier = turn_id(row["dialogue_id"], row["turn"])
        gone = sorted(set(row["expected_document_ids"]) - known) if known is not None else []
        if gone:
            warnings.append(
                RunWarning(
                    metric="golden",
                    question=f"{name}/{identifier}",
                    reason=f"expected documents no longer in the collection: {', '.join(gone)}",
                )
            )
        questions.append(
            EvalQuestion(
                query_collection=name,
                query_id=identifier,
                question=row["question"],
                judgements={(name, doc): grade for doc, grade in zip(row["expected_document_ids"], row["relevance"])},
                reference_answer=row["reference_answer"],
                dialogue_id=row["dialogue_id"],
                turn=row["turn"],
                history=tuple(earlier),
                answerable=row["answerable"],
            )
        )
        earlier.append(row["question"])
    return questions, warnings


def gather_golden_questions(
    home: Path, collections: tuple[str, ...], max_questions: int | None, seed: int, max_dialogues: int | None = None
) -> tuple[list[EvalQuestion], GoldenContext]:
    """The golden questions of an evaluation (a seeded sample of the single questions, and of the
    dialogues, each with all its turns, unanswerable ones included) and what identifies their data."""
    questions: list[EvalQuestion] = []
    turns: list[EvalQuestion] = []
    warnings: list[RunWarning] = []
    digests, sizes, index_digests, models, dialogue_digests = {}, {}, {}, {}, {}
    for name in collections:
        paths = collection_paths(home, name)
        golden, dialogues = load_golden(paths), load_dialogues(paths)
        manifest = read_manifest(paths) or {}
        digests[name], sizes[name] = golden_digest(golden), golden.height
        if dialogues.height:
            dialogue_digests[name] = dialogues_digest(dialogues)
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
        dialogue_turns, dialogue_warnings = _dialogue_questions(name, dialogues, known)
        questions += collection_questions
        turns += dialogue_turns
        warnings += collection_warnings + dialogue_warnings
    if not questions and not turns:
        raise RagassayError(
            f"no golden questions in {', '.join(collections)}; add some with `ragassay golden add` or `golden import`"
        )
    sampled = sample_questions(questions, max_questions, seed) + sample_dialogues(turns, max_dialogues, seed)
    if not sampled:
        raise RagassayError(
            f"nothing to evaluate in {', '.join(collections)}: max_questions {max_questions} leaves no single "
            f"question, and {'no golden dialogue is sampled (max_dialogues 0)' if turns else 'there are no golden dialogues'}"
        )
    context = GoldenContext(
        questions=[{"collection": q.query_collection, "id": q.query_id} for q in sampled],
        warnings=warnings,
        golden_digests=digests,
        golden_sizes=sizes,
        index_digests=index_digests,
        embedding_models=models,
        dialogue_digests=dialogue_digests,
        dialogues=len({(q.query_collection, q.dialogue_id) for q in sampled if q.dialogue_id is not None}),
    )
    return sampled, context


def with_expected_documents(
    questions: list[EvalQuestion], context: GoldenContext
) -> tuple[list[EvalQuestion], GoldenContext]:
    """The questions a retrieval evaluation scores: those that expect documents (a dialogue's
    unanswerable turn does not; later turns still read its question as history)."""
    kept = [q for q in questions if q.judgements]
    listed = [{"collection": q.query_collection, "id": q.query_id} for q in kept]
    return kept, context.model_copy(update={"questions": listed})


def with_earlier_turns(questions: Sequence[EvalQuestion]) -> list[EvalQuestion]:
    """The questions with each dialogue's earlier turns that are not among them (a retrieval
    evaluation scores no unanswerable turn) put back before their follow-ups, unanswerable and
    expecting nothing, so that a system under test is asked each conversation as it was written.
    Each put-back turn's question is the one its follow-ups hold as history."""
    present = {(q.query_collection, q.dialogue_id, q.turn) for q in questions if q.dialogue_id is not None}
    filled: list[EvalQuestion] = []
    for question in questions:
        if question.dialogue_id is not None:
            for number, asked in enumerate(question.history, start=1):
                key = (question.query_collection, question.dialogue_id, number)
                if key not in present:
                    present.add(key)
                    filled.append(
                        EvalQuestion(
                            question.query_collection,
                            turn_id(question.dialogue_id, number),
                            asked,
                            {},
                            dialogue_id=question.dialogue_id,
                            turn=number,
                            history=question.history[: number - 1],
                            answerable=False,
                        )
                    )
        filled.append(question)
    return filled


def dialogue_units(questions: Sequence[EvalQuestion]) -> list[list[int]]:
    """Positions of the questions asked together, in order: a dialogue's turns (by turn number),
    each single question alone; in the order each first appears."""
    units: dict[tuple, list[int]] = {}
    for position, question in enumerate(questions):
        key = (question.query_collection, question.dialogue_id) if question.dialogue_id is not None else (position,)
        units.setdefault(key, []).append(position)
    return [sorted(unit, key=lambda position: questions[position].turn or 0) for unit in units.values()]


def whole_dialogue_parts(items: Sequence[T], size: int | None, question_of=lambda item: item) -> list[list[T]]:
    """items in consecutive parts of at most `size` (all in one part when None), as
    work_parts.in_parts cuts them, except that a dialogue is never split: its turns are answered
    one after another, each with the answers before it (a longer dialogue is a part of its own)."""
    parts: list[list[int]] = []
    current: list[int] = []
    for unit in dialogue_units([question_of(item) for item in items]):
        if size and current and len(current) + len(unit) > size:
            parts.append(current)
            current = []
        current = current + unit
    if current:
        parts.append(current)
    return [[items[position] for position in part] for part in parts]


DocKey = tuple[str, str]  # (collection, doc_id)


@dataclass(frozen=True)
class EvalQuestion:
    """A golden question with its graded expected documents; a dialogue's turn also names its
    dialogue, its number and the questions of the dialogue's earlier turns (its `query_id` is the
    turn's id, `g07#2`). An unanswerable question expects no documents."""

    query_collection: str
    query_id: str
    question: str
    judgements: dict[DocKey, int]
    reference_answer: str | None = None
    dialogue_id: str | None = None
    turn: int | None = None
    history: tuple[str, ...] = ()
    answerable: bool = True

    @property
    def followup(self) -> bool:
        """A dialogue's turn after its first."""
        return self.turn is not None and self.turn > 1


def sample_questions(questions: list[EvalQuestion], max_questions: int | None, seed: int) -> list[EvalQuestion]:
    """At most max_questions, chosen by a seeded hash of each question's id (same seed, same sample),
    kept in their original order."""
    if max_questions is None or len(questions) <= max_questions:
        return questions

    def draw(question: EvalQuestion) -> str:
        return hashlib.sha256(f"{seed}:{question.query_collection}/{question.query_id}".encode()).hexdigest()

    chosen = {id(q) for q in sorted(questions, key=draw)[:max_questions]}
    return [q for q in questions if id(q) in chosen]


def sample_dialogues(turns: list[EvalQuestion], max_dialogues: int | None, seed: int) -> list[EvalQuestion]:
    """The turns of at most max_dialogues dialogues, chosen by a seeded hash of each dialogue's id
    (same seed, same sample), every turn of a chosen dialogue kept, in their original order."""
    dialogues = list(dict.fromkeys((q.query_collection, q.dialogue_id) for q in turns))
    if max_dialogues is None or len(dialogues) <= max_dialogues:
        return turns

    def draw(dialogue: tuple[str, str]) -> str:
        return hashlib.sha256(f"{seed}:dialogue:{dialogue[0]}/{dialogue[1]}".encode()).hexdigest()

    chosen = set(sorted(dialogues, key=draw)[:max_dialogues])
    return [q for q in turns if (q.query_collection, q.dialogue_id) in chosen]


UNANSWERABLE_COLLECTION = "unanswerable"


def gather_unanswerable(path: Path | None, max_unanswerable: int | None, seed: int) -> list[EvalQuestion]:
    """The unanswerable file's questions an evaluation asks: a seeded sample of at most
    max_unanswerable of them (sample_questions' draw), none without a file."""
    return sample_questions(read_unanswerable(path), max_unanswerable, seed) if path else []


def read_unanswerable(path: Path) -> list[EvalQuestion]:
    """Questions the corpus cannot answer, from a .jsonl or .csv file (question, optional id).

    Refused as a whole (ConfigError naming file:line) when any row is malformed, repeats an id,
    or names expected documents: a wrong refusal set would skew both refusal metrics.
    """
    read = read_question_file(path, "unanswerable questions")
    candidates = read.candidates
    messages = [f"{p.source}: {p.detail}" for p in read.problems] + [
        f"{d.source}: a dialogue (`turns`) belongs in a golden file; mark its unanswerable turns `answerable: false`"
        for d in read.dialogues
    ]
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
        questions.append(
            EvalQuestion(UNANSWERABLE_COLLECTION, entry_id, candidate.question.strip(), {}, answerable=False)
        )
    if messages:
        raise ConfigError(f"{path} has {len(messages)} bad rows: " + listed_problems(messages))
    if not questions:
        raise ConfigError(f"{path} holds no questions")
    return questions
