"""Golden dialogues: conversations whose later questions depend on the earlier ones ("and how long
does it live?"), each turn with its own expected documents, reference answer and whether the
corpus answers it. Pure: candidates and the stored tables in, accepted rows and problems out.

A dialogue is refused whole (nothing of it stored) when it has fewer than two turns (one turn is a
golden question), a turn's question is empty, an answerable turn names no expected documents or
unknown ones, an unanswerable turn names any, its id holds `#` (turn ids are `DIALOGUE#TURN`) or
is taken (by a dialogue, or by a golden entry whose id a turn's would repeat), or it asks the same
questions as a stored dialogue (after normalization).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime

import polars as pl

from ragassay.fields import document_id, shown, unsafe_characters
from ragassay.golden.entries import MAX_GRADE, GoldenProblem, Origin, expected_ids_problem, normalize_question
from ragassay.store.schemas import DIALOGUES

# Between a dialogue's id and a turn's number in the turn's id (`g07#2`).
TURN_SEPARATOR = "#"
MIN_TURNS, MAX_TURNS = 2, 20


def turn_id(dialogue_id: str, turn: int) -> str:
    """The id of one turn of a dialogue: `g07#2`."""
    return f"{dialogue_id}{TURN_SEPARATOR}{turn}"


def with_turn_ids(dialogues: pl.DataFrame) -> pl.DataFrame:
    """Dialogue rows with each turn's id (`entry_id`: `g07#2`) as their first column."""
    ids = pl.concat_str(pl.col("dialogue_id"), pl.lit(TURN_SEPARATOR), pl.col("turn").cast(pl.String))
    return dialogues.select(ids.alias("entry_id"), pl.all())


@dataclass(frozen=True)
class TurnCandidate:
    """One turn of a dialogue before validation."""

    question: str
    expected_document_ids: tuple[str, ...] = ()
    relevance: tuple[int, ...] | None = None
    reference_answer: str | None = None
    answerable: bool = True


@dataclass(frozen=True)
class DialogueCandidate:
    """A dialogue before validation; `source` says where it came from (file:line)."""

    turns: tuple[TurnCandidate, ...]
    source: str
    dialogue_id: str | None = None
    origin: Origin = "manual"
    lineage: dict = field(default_factory=dict)


def default_dialogue_id(questions: list[str]) -> str:
    """A dialogue's id from its questions: `d-` and a digest of them, normalized, in order."""
    joined = "\n".join(normalize_question(question) for question in questions)
    return "d-" + hashlib.sha256(joined.encode()).hexdigest()[:10]


def dialogue_from_record(record: dict, source: str) -> DialogueCandidate:
    """A dialogue from one JSON record holding `turns`; ValueError names the field at fault."""
    turns = record.get("turns")
    if not isinstance(turns, list) or not all(isinstance(turn, dict) for turn in turns):
        raise ValueError("field 'turns' must be a list of objects, each with a 'question'")
    dialogue_id = record.get("id")
    if dialogue_id is not None and (not isinstance(dialogue_id, (str, int)) or not str(dialogue_id).strip()):
        raise ValueError("field 'id' must be a non-empty string")
    return DialogueCandidate(
        turns=tuple(_turn_from_record(turn, number) for number, turn in enumerate(turns, start=1)),
        source=source,
        dialogue_id=str(dialogue_id).strip() if dialogue_id is not None else None,
    )


def _turn_from_record(record: dict, number: int) -> TurnCandidate:
    where = f"turns[{number - 1}]"
    unknown = sorted(set(record) - {"question", "expected_document_ids", "relevance", "reference_answer", "answerable"})
    if unknown:
        raise ValueError(f"{where} has unknown fields {unknown}")
    question = record.get("question")
    if not isinstance(question, str):
        raise ValueError(f"{where}.question must be a string")
    expected = record.get("expected_document_ids", [])
    if isinstance(expected, str):
        expected = [expected]
    if not isinstance(expected, list) or not all(isinstance(d, str) and d.strip() for d in expected):
        raise ValueError(f"{where}.expected_document_ids must be a list of document ids")
    relevance = record.get("relevance")
    if relevance is not None and (
        not isinstance(relevance, list) or not all(type(g) is int and 0 <= g <= MAX_GRADE for g in relevance)
    ):
        raise ValueError(f"{where}.relevance must be a list of whole numbers from 0 to {MAX_GRADE}")
    answer = record.get("reference_answer")
    if answer is not None and not isinstance(answer, str):
        raise ValueError(f"{where}.reference_answer must be a string")
    answerable = record.get("answerable", True)
    if not isinstance(answerable, bool):
        raise ValueError(f"{where}.answerable must be true or false")
    return TurnCandidate(
        question=question,
        expected_document_ids=tuple(document_id(d) for d in expected),
        relevance=tuple(relevance) if relevance is not None else None,
        reference_answer=answer or None,
        answerable=answerable,
    )


def validate_dialogues(
    candidates: list[DialogueCandidate],
    stored: pl.DataFrame,
    golden_ids: set[str],
    known_doc_ids: set[str] | None,
    now: datetime,
) -> tuple[pl.DataFrame, list[GoldenProblem]]:
    """Rows (DIALOGUES schema, a row per turn) of the acceptable dialogues, and a problem for each
    refused one. golden_ids: the collection's golden entry ids (a turn's id must not repeat one);
    known_doc_ids: None for a collection holding only golden data (ids not checkable)."""
    seen_ids = set(stored["dialogue_id"].to_list())
    seen_questions = {
        _questions_key(questions): dialogue
        for dialogue, questions in stored.sort("dialogue_id", "turn")
        .group_by("dialogue_id", maintain_order=True)
        .agg("question")
        .iter_rows()
    }
    rows: list[dict] = []
    problems: list[GoldenProblem] = []
    for candidate in candidates:
        problem = _problem(candidate, seen_ids, seen_questions, golden_ids, known_doc_ids)
        if problem is not None:
            problems.append(GoldenProblem(candidate.source, *problem))
            continue
        dialogue_id = candidate.dialogue_id or default_dialogue_id([turn.question for turn in candidate.turns])
        seen_ids.add(dialogue_id)
        seen_questions[_questions_key([turn.question for turn in candidate.turns])] = dialogue_id
        rows += [_row(dialogue_id, number, turn, candidate, now) for number, turn in enumerate(candidate.turns, 1)]
    return pl.DataFrame(rows, schema=DIALOGUES.schema), problems


def _questions_key(questions: list[str]) -> str:
    return "\n".join(normalize_question(question) for question in questions)


def _row(dialogue_id: str, number: int, turn: TurnCandidate, candidate: DialogueCandidate, now: datetime) -> dict:
    """One turn as a row of the golden dialogues table (store/schemas DIALOGUES), which polars
    builds against that schema."""
    return {
        "dialogue_id": dialogue_id,
        "turn": number,
        "question": turn.question.strip(),
        "expected_document_ids": list(turn.expected_document_ids),
        "relevance": list(turn.relevance or [1] * len(turn.expected_document_ids)),
        "reference_answer": turn.reference_answer,
        "answerable": turn.answerable,
        "origin": candidate.origin,
        "created_at": now,
        **{
            key: candidate.lineage.get(key)
            for key in ("seed", "model", "prompt_version", "source_chunk_id", "source_document_sha256")
        },
    }


def _problem(
    candidate: DialogueCandidate,
    seen_ids: set[str],
    seen_questions: dict[str, str],
    golden_ids: set[str],
    known_doc_ids: set[str] | None,
) -> tuple[str, str] | None:
    if not MIN_TURNS <= len(candidate.turns) <= MAX_TURNS:
        return (
            "bad_turns",
            f"a dialogue has {MIN_TURNS} to {MAX_TURNS} turns, this one {len(candidate.turns)} "
            "(a single question is a golden entry without `turns`)",
        )
    for number, turn in enumerate(candidate.turns, start=1):
        problem = _turn_problem(turn, number, known_doc_ids)
        if problem is not None:
            return problem
    dialogue_id = candidate.dialogue_id or default_dialogue_id([turn.question for turn in candidate.turns])
    if TURN_SEPARATOR in dialogue_id:
        return "bad_id", f"dialogue id {dialogue_id!r} holds {TURN_SEPARATOR!r}, which separates a turn's number"
    if unsafe_characters(dialogue_id):
        return (
            "bad_id",
            f"dialogue id {shown(dialogue_id)!r} holds control or bidirectional characters "
            f"{', '.join(unsafe_characters(dialogue_id))}",
        )
    if dialogue_id in seen_ids:
        return "duplicate_id", f"dialogue id {dialogue_id} is already in the golden dialogues"
    taken = sorted(golden_ids & {turn_id(dialogue_id, n) for n in range(1, len(candidate.turns) + 1)})
    if taken:
        return "duplicate_id", f"turn ids {', '.join(taken)} are golden entry ids already"
    key = _questions_key([turn.question for turn in candidate.turns])
    if key in seen_questions:
        return "duplicate_dialogue", f"same questions as dialogue {seen_questions[key]}"
    return None


def _turn_problem(turn: TurnCandidate, number: int, known_doc_ids: set[str] | None) -> tuple[str, str] | None:
    where = f"turn {number}"
    if not turn.question.strip():
        return "empty_question", f"{where}: the question is empty"
    if turn.answerable and not turn.expected_document_ids:
        return (
            "no_expected_documents",
            f"{where}: an answerable turn needs expected_document_ids (or `answerable: false`)",
        )
    if not turn.answerable and turn.expected_document_ids:
        return "bad_unanswerable", f"{where}: an unanswerable turn cannot name expected_document_ids"
    if turn.relevance is not None and (
        len(turn.relevance) != len(turn.expected_document_ids) or (turn.relevance and min(turn.relevance) < 1)
    ):
        return "bad_relevance", f"{where}: relevance needs one grade >= 1 per expected document"
    unsafe = expected_ids_problem(turn.expected_document_ids)
    if unsafe:
        return unsafe[0], f"{where}: {unsafe[1]}"
    unknown = sorted(set(turn.expected_document_ids) - known_doc_ids) if known_doc_ids is not None else []
    if unknown:
        return "unknown_document_ids", f"{where}: not in the collection: " + ", ".join(map(shown, unknown))
    return None


def dialogues_digest(dialogues: pl.DataFrame) -> str:
    """Digest of golden dialogues' turns and judgements (order-independent)."""
    digest = hashlib.sha256()
    columns = ("dialogue_id", "turn", "question", "expected_document_ids", "relevance", "answerable")
    for row in dialogues.sort("dialogue_id", "turn").select(*columns).iter_rows():
        digest.update(repr(row).encode())
    return digest.hexdigest()[:16]
