"""Calling a system under test once per question (CalledSystem: the kinds that are asked, such as
a Python callable or an HTTP endpoint, each in its own module), at most `concurrency` calls at once, retried with backoff where a later try may pass (connection errors,
timeouts, HTTP 429 and 5xx), remembered in the completion cache when they succeed and the system
says so (`version:` set, or `cache: true`; keyed on the system's settings, the request and its
version; errors are never remembered). A failed call is a record with its error kind and message,
never a lost row; a record counts its retries and the whole call's time beside the successful
attempt's. When UNREACHABLE_AFTER calls have failed to reach the system and none has reached it,
the rest are not made: their records say `skipped`, so one dead endpoint costs seconds, not
retries × questions, and the other configurations of the batch still run.

Every text a record keeps (error messages, answers, contexts) has the system's secrets masked
(CalledSystem.secrets: an HTTP system's `${VAR}` values and secret headers), whatever echoed them."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Protocol

from pydantic import Field

from ragassay.llm.cache import CompletionCache, request_key
from ragassay.redaction import mask_secrets
from ragassay.systems.columns import OWN_NAMES
from ragassay.systems.kind import CollectedRecords, Progress, SystemKind
from ragassay.systems.records import (
    Retrieved,
    SystemQuestion,
    SystemRecord,
    failed_record,
    record_from_fields,
    system_question,
)

# Calls that all failed to reach the system before its configuration is stopped.
UNREACHABLE_AFTER = 5
_BACKOFF_SECONDS = (0.5, 1.0, 2.0, 4.0, 8.0)


class RetryableFailure(Exception):
    """A call that failed in a way a later try may pass (no connection, a timeout, 429, a 5xx):
    kind is the record's error kind."""

    def __init__(self, kind: str, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.kind = kind
        self.retry_after = retry_after  # seconds the system asked to wait (Retry-After)


class CallFailure(Exception):
    """A call that failed for good (a wrong response, the team's code raising): kind is the
    record's error kind."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class Conversation:
    """What a call is sent besides its question: the conversation so far as OpenAI-style messages,
    the session id (fresh for each evaluation), and, for a turn, its conversation and number."""

    history: tuple[dict, ...] = ()
    session: str = ""
    conversation_id: str | None = None
    turn: int | None = None


class SystemCaller(Protocol):
    """One kind's way to ask its system a question: the record's fields (a dict in the kind's
    names, or a SystemRecord), RetryableFailure or CallFailure when the call fails; close() when
    the evaluation is done with it."""

    def __call__(self, query_id: str, question: str, conversation: Conversation) -> dict | SystemRecord: ...

    def close(self) -> None: ...


class CalledSystem(SystemKind):
    """A kind whose system is asked question by question: how many calls at once, retries, the
    cache (what every such kind shares). A subclass says how to ask (`caller`) and, when its
    system keeps sessions, how to clear one (`session_clearer`)."""

    concurrency: int = Field(1, ge=1, le=64, description="Calls in flight at once.")
    timeout_seconds: float = Field(
        30.0,
        gt=0,
        description="The most one call may take: connecting, sending, receiving and reading the response "
        "together; past it the try is a timeout.",
    )
    max_retries: int = Field(3, ge=0, le=10, description="Tries after the first, with backoff.")
    cache: bool | None = Field(
        None,
        description="Remember successful calls. Default: only under a `version:`, since a system can change "
        "behind unchanged settings (a new deploy) and remembered calls would then be stale.",
    )
    version: str | None = Field(None, description="Bump to call the system again with unchanged settings.")

    @property
    def remembers_calls(self) -> bool:
        return self.cache if self.cache is not None else self.version is not None

    def caller(self) -> SystemCaller:
        raise NotImplementedError(f"system kind {self.kind!r} does not say how it is called")

    def session_clearer(self) -> Callable[[str], str | None] | None:
        """The function that clears a session (its problem as text, None when cleared), or None
        when the system keeps none or says no way to clear one."""
        return None

    def cache_identity(self) -> dict:
        """What makes two systems the same for the cache: its settings, without those that only
        say how it is called."""
        return self.model_dump(mode="json", exclude={"cache", "concurrency", "max_retries", "timeout_seconds"})

    def collect(
        self, questions: list[SystemQuestion], cache: CompletionCache | None, on_progress: Progress
    ) -> CollectedRecords:
        return CollectedRecords(call_system(self, questions, cache, on_progress), [], [])


def _conversation_units(questions: list[SystemQuestion]) -> list[list[int]]:
    """Positions asked together in order: each conversation's turns (by turn number), each single
    question alone; in the order each first appears."""
    units: dict[str, list[int]] = {}
    for position, question in enumerate(questions):
        key = f"c:{question.conversation_id}" if question.conversation_id is not None else f"q:{position}"
        units.setdefault(key, []).append(position)
    return [sorted(unit, key=lambda position: questions[position].turn or 0) for unit in units.values()]


def call_system(
    system: CalledSystem,
    questions: list[SystemQuestion | tuple[str, str]],
    cache: CompletionCache | None,
    on_progress: Callable[[int, int], None] = lambda done, total: None,
) -> list[SystemRecord]:
    """One record per question ((query_id, question) pairs, or SystemQuestions), in their order.

    A conversation's turns are asked one after another, each sent the conversation so far: its
    earlier questions, and the answers of those whose calls succeeded (a turn whose call failed
    leaves its answer out, and each later turn's record says so in its `note`). Conversations and
    single questions go `concurrency` at a time. After a conversation's last turn (or a single
    question asked of the system) its session is cleared where the system says how
    (`clear_session`); a failure to clear is noted on that record.
    A conversation is served from the cache whole or asked again whole."""
    caller = _Caller(system, [system_question(question) for question in questions], cache, on_progress)
    try:
        with ThreadPoolExecutor(max_workers=system.concurrency) as pool:
            list(pool.map(caller.ask_unit, _conversation_units(caller.asked)))
    finally:
        caller.call.close()
    return caller.records


def _history_after(history: list[dict], question: SystemQuestion, record: SystemRecord) -> list[dict]:
    """The conversation after a turn: its question, and its answer when its call succeeded."""
    answer = [{"role": "assistant", "content": record.answer or ""}] if record.answered else []
    return [*history, {"role": "user", "content": question.question}, *answer]


class _Caller:
    """One call_system's state: the system's call and session clearer, the records so far, and
    whether the system has been reached (shared by the threads asking)."""

    def __init__(self, system: CalledSystem, asked: list[SystemQuestion], cache: CompletionCache | None, on_progress):
        self.system, self.asked, self.cache, self.on_progress = system, asked, cache, on_progress
        self.secrets = system.secrets()
        self.call = system.caller()
        self.clear = system.session_clearer()
        self.identity = "system:" + json.dumps(system.cache_identity(), sort_keys=True)
        self.records: list[SystemRecord | None] = [None] * len(asked)
        self.lock, self.done = threading.Lock(), 0
        # Calls that could not connect, and whether any call reached the system: once enough have
        # failed to connect and none got through, the endpoint is down and the rest are skipped.
        self.unreachable, self.reached = 0, False
        # Sessions are new for each evaluation: a system that keeps state starts every conversation clean.
        self.evaluation = uuid.uuid4().hex[:12]
        self.remembers = cache is not None and system.remembers_calls

    def key_of(self, question: SystemQuestion, history: list[dict]) -> str:
        """A call's cache key; a turn's holds the conversation it was sent (not the session id)."""
        sent = {"history": history} if question.conversation_id is not None else {}
        return request_key(self.identity, "system-call", query_id=question.query_id, question=question.question, **sent)

    def counted(self, called: bool = False, record: SystemRecord | None = None) -> None:
        with self.lock:
            self.done += 1
            if called:
                self.unreachable += record.error_kind == "connection"
                self.reached = self.reached or record.error_kind != "connection"
            self.on_progress(self.done, len(self.asked))

    def ask(self, question: SystemQuestion, conversation: Conversation, read_cache: bool) -> tuple[SystemRecord, bool]:
        """One call (or its remembered record), retried as _with_retries does, secrets masked; and
        whether the system was called (so a session may have been opened)."""
        key = self.key_of(question, list(conversation.history))
        remembered = self.cache.get(key) if read_cache and self.remembers else None
        if remembered is not None:
            record = record_from_fields(remembered, OWN_NAMES, "cached call")
            self.counted()
            return record, False
        with self.lock:
            skip = self.unreachable >= UNREACHABLE_AFTER and not self.reached
        if skip:
            reason = f"not asked: {UNREACHABLE_AFTER} calls found the system unreachable and none reached it"
            record = failed_record(question.query_id, question.question, "skipped", reason, None)
            self.counted()
            return record, False
        asked = _with_retries(self.system, self.call, question.query_id, question.question, conversation)
        record = _masked(asked, self.secrets)
        if record.answered and self.remembers:
            self.cache.put(key, record.as_json())
        self.counted(True, record)
        return record, True

    def remembered_conversation(self, unit: list[int]) -> list[SystemRecord] | None:
        """Every turn of a conversation from the cache, or None when one is not there: then the
        whole conversation is asked again, since a system that keeps sessions must see its turns
        in order (a turn asked after remembered ones would reach an empty session)."""
        if not self.remembers:
            return None
        found, history = [], []
        for position in unit:
            question = self.asked[position]
            remembered = self.cache.get(self.key_of(question, history))
            if remembered is None:
                return None
            found.append(record_from_fields(remembered, OWN_NAMES, "cached call"))
            history = _history_after(history, question, found[-1])
        return found

    def ask_unit(self, unit: list[int]) -> None:
        """A single question, or a conversation's turns in order (from the cache when all of them
        are there), then its session cleared."""
        first = self.asked[unit[0]]
        if first.conversation_id is None:
            # A single question has a session of its own too, cleared after it: a system that
            # keeps sessions would otherwise hold one for every question of every nightly run.
            session = self._session(first)
            self.records[unit[0]], called = self.ask(first, Conversation(session=session), read_cache=True)
            if called:
                self._clear(session, unit[0])
            return
        remembered = self.remembered_conversation(unit)
        if remembered is not None:
            for position, record in zip(unit, remembered, strict=True):
                question = self.asked[position]
                self.records[position] = replace(record, conversation_id=question.conversation_id, turn=question.turn)
                self.counted()
            return
        self._converse(unit, self._session(first))

    def _session(self, first: SystemQuestion) -> str:
        return f"ragassay-{self.evaluation}-{first.conversation_id or first.query_id}"

    def _converse(self, unit: list[int], session: str) -> None:
        """A conversation asked turn after turn (its failed turns' answers left out of the history,
        said in each later turn's note), then its session cleared."""
        history: list[dict] = []
        missing: list[str] = []
        for position in unit:
            question = self.asked[position]
            conversation = Conversation(tuple(history), session, question.conversation_id, question.turn)
            record, _ = self.ask(question, conversation, read_cache=False)
            note = (
                f"the answers of turns {', '.join(missing)} are not in the history it was sent: their calls failed"
                if missing
                else None
            )
            self.records[position] = replace(
                record, conversation_id=question.conversation_id, turn=question.turn, note=note
            )
            history = _history_after(history, question, record)
            missing += [] if record.answered else [str(question.turn)]
        self._clear(session, unit[-1])

    def _clear(self, session: str, position: int) -> None:
        """The session cleared where the system says how; a failure noted on the record at position."""
        problem = self.clear(session) if self.clear is not None else None
        if problem is not None:
            last = self.records[position]
            cleared = f"its session could not be cleared: {mask_secrets(problem, self.secrets)}"
            self.records[position] = replace(last, note=f"{last.note}; {cleared}" if last.note else cleared)


def _with_retries(
    system: CalledSystem, call: SystemCaller, query_id: str, question: str, conversation: Conversation
) -> SystemRecord:
    """The call, tried again after a retryable failure (waiting what the system's Retry-After
    asks, bounded by the timeout, else the backoff); latency_ms is the last attempt's, call_ms the
    whole call's with its waits, retries the attempts after the first."""
    call_started = time.perf_counter()
    for attempt in range(system.max_retries + 1):
        started = time.perf_counter()
        try:
            values = call(query_id, question, conversation)
            latency = (time.perf_counter() - started) * 1000
        except RetryableFailure as error:
            latency = (time.perf_counter() - started) * 1000
            if attempt < system.max_retries:
                backoff = _BACKOFF_SECONDS[min(attempt, len(_BACKOFF_SECONDS) - 1)]
                wait = backoff if error.retry_after is None else min(error.retry_after, system.timeout_seconds)
                time.sleep(wait)
                continue
            record = failed_record(query_id, question, error.kind, str(error), latency)
        except CallFailure as error:
            record = failed_record(query_id, question, error.kind, str(error), (time.perf_counter() - started) * 1000)
        else:
            try:
                record = _record(values, query_id, question, latency)
            except ValueError as error:  # a field of the wrong type: this question's mapping error
                record = failed_record(query_id, question, "mapping", str(error), latency)
        return replace(record, retries=attempt, call_ms=round((time.perf_counter() - call_started) * 1000, 3))
    raise AssertionError("unreachable")


def _masked(record: SystemRecord, secrets: frozenset[str]) -> SystemRecord:
    """The record with every secret masked in each text it keeps."""
    if not secrets:
        return record

    def text(value: str | None) -> str | None:
        return None if value is None else mask_secrets(value, secrets)

    return replace(
        record,
        error=text(record.error),
        answer=text(record.answer),
        retrieved=tuple(Retrieved(text(r.doc_id), text(r.text), r.score) for r in record.retrieved),
        citations=None if record.citations is None else tuple(text(c) for c in record.citations),
    )


def _record(values: SystemRecord | dict, query_id: str, question: str, latency: float) -> SystemRecord:
    if isinstance(values, SystemRecord):
        record = values
    else:
        record = record_from_fields(values, OWN_NAMES, f"question {query_id}")
    return replace(record, query_id=query_id, question=question, latency_ms=round(latency, 3))
