"""A system's stored records matched to the golden questions (how a kind whose records are read
from a file collects them): by `query_id` (the golden entry's id, or a dialogue turn's `g07#2`),
by `conversation_id` and `turn` for a record of a conversation's turn, or, for a record without
either, by the exact question text. A question no record answers becomes a record with error kind `missing`; records
that match no question are counted and named; two records for one question are refused naming
both lines, unless the records system's `duplicates:` keeps the first or the last."""

from __future__ import annotations

from dataclasses import replace

from ragassay.errors import ConfigError, listed_problems
from ragassay.systems.kind import CollectedRecords
from ragassay.systems.records import SystemQuestion, SystemRecord, failed_record, system_question


def match_records(
    stored: list[SystemRecord], questions: list[SystemQuestion | tuple[str, str]], duplicates: str = "refuse"
) -> CollectedRecords:
    """Each question's record: the one with its query_id, else the one with its conversation and
    turn, else the one with its exact text. Two records for one question: a ConfigError naming
    both (duplicates "refuse"), else the first or the last is kept and the other counted as repeated."""
    asked = [system_question(question) for question in questions]
    position_of_id = {question.query_id: position for position, question in enumerate(asked)}
    position_of_turn = {
        (question.conversation_id, question.turn): position
        for position, question in enumerate(asked)
        if question.conversation_id is not None
    }
    position_of_text: dict[str, int] = {}
    for position, question in enumerate(asked):
        position_of_text.setdefault(question.question, position)
    found: dict[int, SystemRecord] = {}
    unmatched, repeated, clashes = [], [], []
    for record in stored:
        position = position_of_id.get(record.query_id) if record.query_id is not None else None
        if position is None and record.conversation_id is not None:
            position = position_of_turn.get((record.conversation_id, record.turn))
        if position is None and record.question is not None and record.conversation_id is None:
            # A turn's text alone says nothing ("and how long?" may be asked in many conversations).
            position = position_of_text.get(record.question)
        name = record.query_id or (
            f"{record.conversation_id}, turn {record.turn}" if record.conversation_id else (record.question or "")[:80]
        )
        if position is None:
            unmatched.append(name)
        elif position in found:
            kept = found[position]
            clashes.append(
                f"{record.source or 'a record'}: a second record for question {asked[position].query_id} "
                f"(the first is {kept.source or 'another record'})"
            )
            repeated.append(name)
            if duplicates == "last":
                found[position] = _as_asked(record, asked[position])
        else:
            found[position] = _as_asked(record, asked[position])
    if clashes and duplicates == "refuse":
        raise ConfigError(
            "records repeat a question, and which one to score is not guessed: "
            + listed_problems(clashes)
            + "; remove one of each, or set `duplicates: first` or `duplicates: last` in the system's settings"
        )
    records = [
        found.get(position)
        or _as_asked(
            failed_record(question.query_id, question.question, "missing", "no record for this question", None),
            question,
        )
        for position, question in enumerate(asked)
    ]
    return CollectedRecords(records, unmatched, repeated)


def _as_asked(record: SystemRecord, question: SystemQuestion) -> SystemRecord:
    """A record named as the golden set names its question (a record matched by its text, or by
    its conversation and turn, may carry no id)."""
    return replace(
        record,
        query_id=question.query_id,
        question=question.question,
        conversation_id=question.conversation_id,
        turn=question.turn,
    )
