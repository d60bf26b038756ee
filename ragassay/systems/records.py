"""One record per golden question from a system under test, whichever way it was obtained, and
the records files that hold them (JSON Lines or Parquet, in ragassay's field names or another
tool's through `columns:`).

A record: `query_id`, `question`, `answer` (optional), `retrieved` (ranked, best first: each
`{doc_id, text, score}`, every part optional, `doc_id` needed for retrieval metrics; or the flat
`documents` and `contexts` lists), `citations`, `refused`, `error` (the call failed) and
`latency_ms`; a turn of a conversation also `conversation_id` and `turn` (1-based). A failed call
is a record with its error, never a missing row."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path

from ragassay.errors import ConfigError, listed_problems
from ragassay.http_bounds import finite_number
from ragassay.user_files import read_jsonl, write_user_text


@dataclass(frozen=True)
class Retrieved:
    doc_id: str | None = None
    text: str | None = None
    score: float | None = None


@dataclass(frozen=True)
class SystemQuestion:
    """What a system is asked: a golden question, or a turn of a golden dialogue, which names its
    conversation and its number (a conversation's turns are asked in order, each with the
    conversation so far)."""

    query_id: str
    question: str
    conversation_id: str | None = None
    turn: int | None = None


def system_question(asked: SystemQuestion | tuple[str, str]) -> SystemQuestion:
    """A question as a SystemQuestion; a (query_id, question) pair is a single question."""
    return asked if isinstance(asked, SystemQuestion) else SystemQuestion(*asked)


@dataclass(frozen=True)
class SystemRecord:
    """What a system returned for one question (error set when the call failed)."""

    query_id: str | None
    question: str | None
    answer: str | None = None
    retrieved: tuple[Retrieved, ...] = ()
    citations: tuple[str, ...] | None = None
    refused: bool | None = None
    error: str | None = None
    error_kind: str | None = None  # timeout, http_status, connection, mapping, exception, malformed, too_large
    latency_ms: float | None = None  # the successful (or last) attempt's
    retries: int = 0  # attempts after the first (429, 5xx, timeouts, connection errors)
    call_ms: float | None = None  # the whole call: every attempt and the waits between them
    # Where the record was read from (`file:line`), to name both lines of a repeated question.
    source: str | None = field(default=None, compare=False)
    conversation_id: str | None = None  # a turn of a conversation: its conversation and number
    turn: int | None = None
    # What ragassay noticed of the call beyond its error: an earlier turn's answer missing from the
    # history it was sent (that turn's call failed), a session that could not be cleared.
    note: str | None = None

    @property
    def answered(self) -> bool:
        return self.error is None

    def as_json(self) -> dict:
        """The record in ragassay's own field names (what `--save-records` writes)."""
        return {
            "query_id": self.query_id,
            "question": self.question,
            "answer": self.answer,
            "retrieved": [{"doc_id": r.doc_id, "text": r.text, "score": r.score} for r in self.retrieved],
            "citations": list(self.citations) if self.citations is not None else None,
            "refused": self.refused,
            "error": self.error,
            "error_kind": self.error_kind,
            "latency_ms": self.latency_ms,
            "retries": self.retries,
            "call_ms": self.call_ms,
            **(
                {"conversation_id": self.conversation_id, "turn": self.turn, "note": self.note}
                if self.conversation_id is not None
                else {}
            ),
        }

    @property
    def document_ids(self) -> list[str]:
        """The ids of the retrieved documents, in rank order (items without one left out)."""
        return [item.doc_id for item in self.retrieved if item.doc_id is not None]


def failed_record(query_id: str, question: str, kind: str, message: str, latency_ms: float | None) -> SystemRecord:
    return SystemRecord(query_id, question, error=message, error_kind=kind, latency_ms=latency_ms)


def _is_number(value) -> bool:
    """A JSON number that ranks: not a bool (JSON true is no score), not NaN, infinite or too large
    for a float (http_bounds.finite_number)."""
    return finite_number(value) is not None


def _retrieved_items(items, where: str) -> list[Retrieved]:
    """A record's retrieved list (`where` names it, file:line and field): each item a doc id, or
    a mapping of doc_id, text and score of the right types; ValueError naming the item otherwise."""
    if not isinstance(items, list):
        raise ValueError(f"{where} must be a list of {{doc_id, text, score}}")
    retrieved = []
    for position, item in enumerate(items, start=1):
        if isinstance(item, str):
            item = {"doc_id": item}
        if not isinstance(item, dict) or set(item) - {"doc_id", "text", "score"}:
            raise ValueError(f"{where}[{position}] must hold doc_id, text and/or score")
        score = item.get("score")
        if score is not None and not _is_number(score):
            raise ValueError(f"{where}[{position}].score must be a finite number, not {score!r}")
        doc_id = item.get("doc_id")
        if doc_id is not None and (not isinstance(doc_id, (str, int)) or isinstance(doc_id, bool)):
            raise ValueError(f"{where}[{position}].doc_id must be a string, not {doc_id!r}")
        if item.get("text") is not None and not isinstance(item["text"], str):
            raise ValueError(f"{where}[{position}].text must be a string")
        retrieved.append(
            Retrieved(
                None if doc_id is None else str(doc_id), item.get("text"), None if score is None else float(score)
            )
        )
    return retrieved


def record_from_fields(values: dict, names: dict[str, str], where: str) -> SystemRecord:
    """A record from a mapping in the names `names` gives ({record field: its name there});
    ValueError naming `where` and the field when a value has the wrong shape."""

    def value(name: str):
        return values.get(names[name])

    def strings(name: str) -> list[str] | None:
        items = value(name)
        if items is None:
            return None
        if not isinstance(items, list) or not all(
            isinstance(item, (str, int)) and not isinstance(item, bool) for item in items
        ):
            raise ValueError(f"{where}: {names[name]} must be a list of strings")
        return [str(item) for item in items]

    retrieved_value = value("retrieved")
    if retrieved_value is not None:
        retrieved = _retrieved_items(retrieved_value, f"{where}: {names['retrieved']}")
    else:
        documents, contexts = strings("documents") or [], strings("contexts") or []
        retrieved = [
            Retrieved(
                documents[i] if i < len(documents) else None,
                contexts[i] if i < len(contexts) else None,
            )
            for i in range(max(len(documents), len(contexts)))
        ]
    refused = value("refused")
    if refused is not None and not isinstance(refused, bool):
        raise ValueError(f"{where}: {names['refused']} must be true or false")
    latency = value("latency_ms")
    if latency is not None and not _is_number(latency):
        raise ValueError(f"{where}: {names['latency_ms']} must be a number of milliseconds")
    answer, question, query_id = value("answer"), value("question"), value("query_id")
    for name, text in (("answer", answer), ("question", question)):
        if text is not None and not isinstance(text, str):
            raise ValueError(f"{where}: {names[name]} must be a string")
    error = value("error")
    citations = strings("citations")
    conversation, turn = _conversation_turn(value("conversation_id"), value("turn"), names, where)
    return SystemRecord(
        query_id=None if query_id is None else str(query_id),
        question=question,
        answer=answer,
        retrieved=tuple(retrieved),
        citations=None if citations is None else tuple(citations),
        refused=refused,
        error=None if error in (None, "") else str(error),
        # The kind a ragassay-written record kept; any other failed record's is "recorded".
        error_kind=None if error in (None, "") else str(values.get("error_kind") or "recorded"),
        latency_ms=None if latency is None else float(latency),
        conversation_id=conversation,
        turn=turn,
        note=values.get("note") if isinstance(values.get("note"), str) else None,
    )


def _conversation_turn(conversation, turn, names: dict[str, str], where: str) -> tuple[str | None, int | None]:
    """A record's conversation id and turn number, both or neither; ValueError naming the field."""
    if conversation is not None and (not isinstance(conversation, (str, int)) or isinstance(conversation, bool)):
        raise ValueError(f"{where}: {names['conversation_id']} must be a string")
    if turn is not None and (type(turn) is not int or turn < 1):
        raise ValueError(f"{where}: {names['turn']} must be a whole number from 1")
    if (conversation is None) != (turn is None):
        raise ValueError(f"{where}: a turn names both {names['conversation_id']} and {names['turn']}")
    return (None if conversation is None else str(conversation)), turn


def read_records(path: Path, names: dict[str, str]) -> list[SystemRecord]:
    """The records of a JSON Lines or Parquet file; a ConfigError naming the file and line (at most
    20 problems, then a count) when any record is malformed."""
    if path.suffix == ".parquet":
        if not path.is_file():
            raise ConfigError(f"records file {path} does not exist")
        try:
            import polars as pl  # only for a Parquet file of records

            rows = pl.read_parquet(path).to_dicts()
        except Exception as error:  # polars raises several types for a file that is not Parquet
            raise ConfigError(f"records file {path} is not readable Parquet: {error}") from None
        numbered = [(f"{path} row {number}", row) for number, row in enumerate(rows, start=1)]
    else:
        numbered = []
        problems = []
        for where, row in read_jsonl(path, "records file"):
            if isinstance(row, ValueError):
                problems.append(f"{where}: not JSON ({row})")
            elif not isinstance(row, dict):
                problems.append(f"{where}: a record must be a JSON object")
            else:
                numbered.append((where, row))
        if problems:
            raise ConfigError(f"records file {path} has malformed lines: " + listed_problems(problems))
    records, problems = [], []
    for where, row in numbered:
        try:
            record = record_from_fields(row, names, where)
        except ValueError as error:
            problems.append(str(error))
            continue
        if record.query_id is None and record.question is None and record.conversation_id is None:
            problems.append(
                f"{where}: has neither {names['query_id']!r} nor {names['question']!r} (the question), so it matches "
                "no golden question; name the columns that hold them with `columns:`"
            )
        records.append(replace(record, source=where))
    if problems:
        raise ConfigError(f"records file {path} has malformed records: " + listed_problems(problems))
    return records


def write_records(path: Path, records: list[SystemRecord]) -> Path:
    """The records as JSON Lines in ragassay's field names (readable again as `kind: records`)."""
    text = "".join(json.dumps(r.as_json(), ensure_ascii=False) + "\n" for r in records)
    write_user_text(path, text, "the saved records")
    return path


def check_document_ids(records: list[SystemRecord], names: dict[str, str], path: Path) -> None:
    """ConfigError when not one record of a records file names a retrieved document: a retrieval
    evaluation of it would score every question 0 without measuring anything. (A file of failed
    records only is its coverage's problem, reported as such.)"""
    answered = [record for record in records if record.answered]
    if not answered or any(record.document_ids for record in answered):
        return
    raise ConfigError(
        f"records file {path}: no record holds document ids (field {names['documents']!r}, or doc_id in "
        f"{names['retrieved']!r}), so its retrieval cannot be scored; name the field that holds them with "
        "`columns: {documents: FIELD}`, or evaluate its answers alone with `ragassay eval answers`"
    )
