"""A system under test as an answer configuration: its own answer, contexts and citations for
each question, in the shape the judge scores (answer/grounding.GroundedAnswer), so faithfulness
is judged against the contexts it returned, context recall of the reference answer in those
contexts, citation precision over the documents it cites, answer relevancy and refusal both ways
as for built-in configurations. A failed call is a question with its error, in no metric."""

from __future__ import annotations

import re
from pathlib import Path

from ragassay.answer.grounding import REFUSAL_TEXT, AnsweredStatement, Citation, GroundedAnswer, Source
from ragassay.evaluation.answer_summary import AnsweredQuestion
from ragassay.evaluation.questions import EvalQuestion
from ragassay.evaluation.system_runs import system_question_of
from ragassay.llm.cache import CompletionCache
from ragassay.llm.structured import Usage
from ragassay.metrics.answers import split_statements
from ragassay.progress import ProgressReporter
from ragassay.search.followups import Exchange, history_query
from ragassay.store.workspace import collection_paths, load_documents
from ragassay.systems.doc_ids import DocIdMapper
from ragassay.systems.records import Retrieved, SystemRecord, write_records
from ragassay.systems.settings import SystemConfiguration

# How a refusal reads when the system does not say (`refused`): an empty answer, ragassay's own
# refusal text, or one of the phrases assistants decline with. Which way each was decided is kept
# on the answer (`refusal_source`: system or detected).
_DECLINES = re.compile(
    r"\b(i (do not|don't|cannot|can't) (know|answer|find)|(cannot|can't|unable to) (answer|find|determine)|"
    r"(not|no) (enough|sufficient|relevant) (information|context)|do not support an answer|"
    r"no information (about|on)|not (mentioned|covered) in the (documents|context|sources))\b",
    re.IGNORECASE,
)


def detected_refusal(answer: str | None) -> bool:
    """Whether an answer text declines to answer (when the system does not say itself)."""
    return not (answer or "").strip() or answer.strip() == REFUSAL_TEXT or bool(_DECLINES.search(answer))


def system_answers(
    home: Path,
    collections: tuple[str, ...],
    questions: list[tuple[EvalQuestion, bool]],
    configuration: SystemConfiguration,
    cache: CompletionCache | None,
) -> list[AnsweredQuestion]:
    """Each (question, answerable) answered by the system under test."""
    with ProgressReporter(f"asking {configuration.label} {len(questions)} questions", total=len(questions)) as progress:
        collected = configuration.system.collect([system_question_of(q) for q, _ in questions], cache, progress)
    mappers = {}
    for name in collections:
        paths = collection_paths(home, name)
        known = set(load_documents(paths)["doc_id"].to_list()) if paths.documents.exists() else None
        mappers[name] = DocIdMapper(configuration.doc_ids, known or None)
    # Unanswerable questions belong to no collection: their ids are mapped, not checked.
    unchecked = DocIdMapper(configuration.doc_ids, None)
    return [
        answered_question(question, answerable, record, mappers.get(question.query_collection, unchecked))
        for (question, answerable), record in zip(questions, collected.records)
    ]


def answered_question(
    question: EvalQuestion, answerable: bool, record: SystemRecord, mapper: DocIdMapper
) -> AnsweredQuestion:
    """One record as the judge reads an answer: statements from its answer text, numbered sources
    from its contexts, its citations pointing at the sources of the documents they name."""
    seconds = (record.latency_ms or 0.0) / 1000
    if not record.answered:
        empty = GroundedAnswer(question.question, "refused", reason="no answer", contexts_returned=False)
        return AnsweredQuestion(
            question,
            answerable,
            empty,
            Usage(),
            seconds,
            f"{record.error_kind}: {record.error}",
            record.retries,
            note=record.note,
        )
    sources = [
        Source(
            number=number,
            collection=question.query_collection,
            doc_id=mapper.one(item.doc_id) if item.doc_id else "",
            chunk_id=item.doc_id or "",
            char_start=0,
            char_end=len(item.text),
            page=None,
            text=item.text,
        )
        for number, item in enumerate((item for item in record.retrieved if item.text), start=1)
    ]
    refused = record.refused if record.refused is not None else detected_refusal(record.answer)
    cited_sources = {}
    for source in sources:
        cited_sources.setdefault(source.doc_id, source)
    citations = [
        Citation(s.number, s.doc_id, s.chunk_id, s.char_start, s.char_end, s.text)
        for cited in dict.fromkeys(mapper.one(c) for c in (record.citations or ()))
        if (s := cited_sources.get(cited)) is not None
    ]
    answer = GroundedAnswer(
        question=question.question,
        outcome="refused" if refused else "answered",
        reason="the system declined" if record.refused else ("declined, by its text" if refused else "answered"),
        statements=[] if refused else [AnsweredStatement(text, []) for text in split_statements(record.answer)],
        sources=sources,
        answer_citations=[] if refused else citations,
        contexts_returned=bool(sources),
        refusal_source="system" if record.refused is not None else "detected",
        # A follow-up is judged as asked in its conversation: with the dialogue's earlier questions
        # (what the system searched is its own).
        in_context=history_query([Exchange(asked) for asked in question.history], question.question)
        if question.history
        else None,
    )
    return AnsweredQuestion(question, answerable, answer, Usage(), seconds, retries=record.retries, note=record.note)


def answer_records(answered: list[AnsweredQuestion]) -> list[SystemRecord]:
    """Any answer configuration's answers as records (answer, the contexts it was given, the
    documents it cites, whether it declined), readable again as `kind: records`."""
    records = []
    for a in answered:
        turn = {"conversation_id": a.question.dialogue_id, "turn": a.question.turn, "note": a.note}
        if a.error is not None:
            kind, _, message = a.error.partition(": ")
            records.append(
                SystemRecord(a.question.query_id, a.question.question, error=message, error_kind=kind, **turn)
            )
            continue
        cited = [c.doc_id for s in a.answer.statements for c in s.citations] + [
            c.doc_id for c in a.answer.answer_citations
        ]
        records.append(
            SystemRecord(
                query_id=a.question.query_id,
                question=a.question.question,
                answer=a.answer.prose,
                retrieved=tuple(Retrieved(s.doc_id or None, s.text, None) for s in a.answer.sources),
                citations=tuple(dict.fromkeys(cited)),
                refused=a.answer.outcome == "refused",
                latency_ms=round(a.seconds * 1000, 3),
                **turn,
            )
        )
    return records


def save_answer_records(folder: Path, answered: dict[str, list[AnsweredQuestion]]) -> list[Path]:
    """Each configuration's answers as `<folder>/<label>.jsonl`."""
    return [write_records(folder / f"{label}.jsonl", answer_records(items)) for label, items in answered.items()]
