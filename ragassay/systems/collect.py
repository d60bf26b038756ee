"""A system's records for the golden questions, whichever kind of system it is, matched to the
questions by `query_id` (the golden entry's id) or, for a record without one, by the exact
question text. A question no record answers becomes a record with error kind `missing`; records
that match no question are counted and named; two records for one question are refused naming
both lines, unless the records system's `duplicates:` keeps the first or the last."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from ragassay.errors import ConfigError, listed_problems
from ragassay.llm.cache import CompletionCache
from ragassay.systems.calls import call_system
from ragassay.systems.records import Retrieved, SystemRecord, check_document_ids, failed_record, read_records
from ragassay.systems.settings import SystemSpec
from ragassay.systems.trec import read_trec_run


@dataclass(frozen=True)
class CollectedRecords:
    """One record per question, in the questions' order; records that matched none."""

    records: list[SystemRecord]
    unmatched: list[str]
    repeated: list[str]  # records not scored because another record of their question is (duplicates: first|last)


def collect_records(
    system: SystemSpec,
    questions: list[tuple[str, str]],
    cache: CompletionCache | None,
    on_progress: Callable[[int, int], None] = lambda done, total: None,
) -> CollectedRecords:
    """The records of (query_id, question) pairs from the system."""
    if system.kind in ("http", "python"):
        return CollectedRecords(call_system(system, questions, cache, on_progress), [], [])
    if system.kind == "trec":
        stored = [
            SystemRecord(qid, None, retrieved=tuple(Retrieved(doc_id, None, score) for doc_id, score in ranking))
            for qid, ranking in read_trec_run(system.path).items()
        ]
    else:
        stored = read_records(system.path, system.column_names())
    collected = match_records(stored, questions, getattr(system, "duplicates", "refuse"))
    on_progress(len(questions), len(questions))
    return collected


def match_records(
    stored: list[SystemRecord], questions: list[tuple[str, str]], duplicates: str = "refuse"
) -> CollectedRecords:
    """Each question's record: the one with its query_id, else the one with its exact text. Two
    records for one question: a ConfigError naming both (duplicates "refuse"), else the first or
    the last is kept and the other counted as repeated."""
    position_of_id = {query_id: position for position, (query_id, _) in enumerate(questions)}
    position_of_text: dict[str, int] = {}
    for position, (_, question) in enumerate(questions):
        position_of_text.setdefault(question, position)
    found: dict[int, SystemRecord] = {}
    unmatched, repeated, clashes = [], [], []
    for record in stored:
        position = position_of_id.get(record.query_id) if record.query_id is not None else None
        if position is None and record.question is not None:
            position = position_of_text.get(record.question)
        name = record.query_id or (record.question or "")[:80]
        if position is None:
            unmatched.append(name)
        elif position in found:
            kept = found[position]
            clashes.append(
                f"{record.source or 'a record'}: a second record for question {questions[position][0]} "
                f"(the first is {kept.source or 'another record'})"
            )
            repeated.append(name)
            if duplicates == "last":
                query_id, question = questions[position]
                found[position] = replace(record, query_id=query_id, question=question)
        else:
            query_id, question = questions[position]
            # Named as the golden set names it (a record matched by its text may carry no id).
            found[position] = replace(record, query_id=query_id, question=question)
    if clashes and duplicates == "refuse":
        raise ConfigError(
            "records repeat a question, and which one to score is not guessed: "
            + listed_problems(clashes)
            + "; remove one of each, or set `duplicates: first` or `duplicates: last` in the system's settings"
        )
    records = [
        found.get(position) or failed_record(query_id, question, "missing", "no record for this question", None)
        for position, (query_id, question) in enumerate(questions)
    ]
    return CollectedRecords(records, unmatched, repeated)


def check_retrieval_records(system: SystemSpec) -> None:
    """A ConfigError (before any work) when a records system holds no document id at all, so a
    retrieval evaluation of it would measure nothing; its answers can still be evaluated."""
    if system.kind == "records":
        check_document_ids(read_records(system.path, system.column_names()), system.column_names(), system.path)
