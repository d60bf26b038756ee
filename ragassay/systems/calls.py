"""Calling a system under test once per question: a Python callable or an HTTP endpoint, at most
`concurrency` calls at once, retried with backoff where a later try may pass (connection errors,
timeouts, HTTP 429 and 5xx), remembered in the completion cache when they succeed and the system
says so (`version:` set, or `cache: true`; keyed on the system's settings, the request and its
version; errors are never remembered). A failed call is a record with its error kind and message,
never a lost row; a record counts its retries and the whole call's time beside the successful
attempt's. When UNREACHABLE_AFTER calls have failed to reach the system and none has reached it,
the rest are not made: their records say `skipped`, so one dead endpoint costs seconds, not
retries × questions, and the other configurations of the batch still run.

A Python target runs in a worker thread of its own, bounded by `timeout_seconds` (a sync function
as well as a coroutine): one that does not return in time is abandoned (the thread is left to
finish on its own; Python cannot stop it) and its question is a `timeout` row. Whatever it raises,
SystemExit and KeyboardInterrupt included, is that question's `exception` row.

Every text a record keeps (error messages, answers, contexts) has the system's secrets masked
(HttpSystem: each `${VAR}` value, and the values of secret headers), whatever echoed them."""

from __future__ import annotations

import asyncio
import importlib
import inspect
import json
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

from ragassay.errors import ConfigError
from ragassay.http_bounds import (
    ResponseTooLarge,
    bounded_content,
    header_secrets,
    resolved_headers,
    retry_after_seconds,
)
from ragassay.llm.cache import CompletionCache, request_key
from ragassay.redaction import mask_secrets, redact
from ragassay.systems.records import (
    Retrieved,
    SystemQuestion,
    SystemRecord,
    failed_record,
    record_from_fields,
    system_question,
)
from ragassay.systems.settings import RECORD_FIELDS, HttpSystem, PythonSystem

# Calls that all failed to reach the system before its configuration is stopped.
UNREACHABLE_AFTER = 5
_RETRY_STATUS = {429, 500, 502, 503, 504}
_BACKOFF_SECONDS = (0.5, 1.0, 2.0, 4.0, 8.0)


class _Retryable(Exception):
    def __init__(self, kind: str, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.kind = kind
        self.retry_after = retry_after  # seconds the system asked to wait (Retry-After)


class _Failed(Exception):
    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class _Conversation:
    """What a call is sent besides its question: the conversation so far as OpenAI-style messages,
    the session id (fresh for each evaluation), and, for a turn, its conversation and number."""

    history: tuple[dict, ...] = ()
    session: str = ""
    conversation_id: str | None = None
    turn: int | None = None


def _conversation_units(questions: list[SystemQuestion]) -> list[list[int]]:
    """Positions asked together in order: each conversation's turns (by turn number), each single
    question alone; in the order each first appears."""
    units: dict[str, list[int]] = {}
    for position, question in enumerate(questions):
        key = f"c:{question.conversation_id}" if question.conversation_id is not None else f"q:{position}"
        units.setdefault(key, []).append(position)
    return [sorted(unit, key=lambda position: questions[position].turn or 0) for unit in units.values()]


def call_system(
    system: HttpSystem | PythonSystem,
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
        getattr(caller.call, "close", lambda: None)()
    return caller.records


def _history_after(history: list[dict], question: SystemQuestion, record: SystemRecord) -> list[dict]:
    """The conversation after a turn: its question, and its answer when its call succeeded."""
    answer = [{"role": "assistant", "content": record.answer or ""}] if record.answered else []
    return [*history, {"role": "user", "content": question.question}, *answer]


class _Caller:
    """One call_system's state: the system's call and session clearer, the records so far, and
    whether the system has been reached (shared by the threads asking)."""

    def __init__(self, system, asked: list[SystemQuestion], cache: CompletionCache | None, on_progress):
        self.system, self.asked, self.cache, self.on_progress = system, asked, cache, on_progress
        self.secrets = system_secrets(system) if system.kind == "http" else frozenset()
        self.call = _http_caller(system) if system.kind == "http" else _python_caller(system)
        self.clear = _session_clearer(system)
        settings = system.model_dump(mode="json", exclude={"cache", "concurrency", "max_retries", "timeout_seconds"})
        if system.kind == "http":
            # The headers as written (a dump shows SecretStr as stars): a changed header is another
            # system; the key is a sha256, so a literal value in it is not readable from the cache.
            settings["headers"] = system.header_templates()
        self.identity = "system:" + json.dumps(settings, sort_keys=True)
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

    def ask(self, question: SystemQuestion, conversation: _Conversation, read_cache: bool) -> tuple[SystemRecord, bool]:
        """One call (or its remembered record), retried as _with_retries does, secrets masked; and
        whether the system was called (so a session may have been opened)."""
        key = self.key_of(question, list(conversation.history))
        remembered = self.cache.get(key) if read_cache and self.remembers else None
        if remembered is not None:
            record = record_from_fields(remembered, _OWN_NAMES, "cached call")
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
            found.append(record_from_fields(remembered, _OWN_NAMES, "cached call"))
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
            self.records[unit[0]], called = self.ask(first, _Conversation(session=session), read_cache=True)
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
            conversation = _Conversation(tuple(history), session, question.conversation_id, question.turn)
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


def _with_retries(system, call, query_id: str, question: str, conversation: _Conversation) -> SystemRecord:
    """The call, tried again after a retryable failure (waiting what the system's Retry-After
    asks, bounded by the timeout, else the backoff); latency_ms is the last attempt's, call_ms the
    whole call's with its waits, retries the attempts after the first."""
    call_started = time.perf_counter()
    for attempt in range(system.max_retries + 1):
        started = time.perf_counter()
        try:
            values = call(query_id, question, conversation)
            latency = (time.perf_counter() - started) * 1000
        except _Retryable as error:
            latency = (time.perf_counter() - started) * 1000
            if attempt < system.max_retries:
                backoff = _BACKOFF_SECONDS[min(attempt, len(_BACKOFF_SECONDS) - 1)]
                wait = backoff if error.retry_after is None else min(error.retry_after, system.timeout_seconds)
                time.sleep(wait)
                continue
            record = failed_record(query_id, question, error.kind, str(error), latency)
        except _Failed as error:
            record = failed_record(query_id, question, error.kind, str(error), (time.perf_counter() - started) * 1000)
        else:
            try:
                record = _record(values, query_id, question, latency)
            except ValueError as error:  # a field of the wrong type: this question's mapping error
                record = failed_record(query_id, question, "mapping", str(error), latency)
        return replace(record, retries=attempt, call_ms=round((time.perf_counter() - call_started) * 1000, 3))
    raise AssertionError("unreachable")


def system_secrets(system: HttpSystem) -> frozenset[str]:
    """The values no text may show (http_bounds.header_secrets of the system's headers)."""
    return header_secrets(system.header_templates(), system.is_secret_header)


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
        record = record_from_fields(values, _OWN_NAMES, f"question {query_id}")
    return replace(record, query_id=query_id, question=question, latency_ms=round(latency, 3))


_OWN_NAMES = {name: name for name in RECORD_FIELDS}


def _python_caller(system: PythonSystem):
    """The target function, called with question= (and query_id= when it takes it) in a worker
    thread of its own, bounded by the timeout; a coroutine function runs to completion there."""
    module_name, _, attribute = system.target.partition(":")
    try:
        function = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as error:
        raise ConfigError(f"system target {system.target!r} cannot be imported: {error}") from None
    if not callable(function):
        raise ConfigError(f"system target {system.target!r} is not callable")
    takes = set(inspect.signature(function).parameters)
    names = system.column_names()

    def run(arguments: dict):
        result = function(**arguments)
        return asyncio.run(_awaited(result)) if inspect.isawaitable(result) else result

    def call(query_id: str, question: str, conversation: _Conversation) -> SystemRecord:
        offered = {
            "query_id": query_id,
            "history": [dict(message) for message in conversation.history],
            "session": conversation.session,
        }
        arguments = {"question": question, **{name: value for name, value in offered.items() if name in takes}}
        try:
            result = _in_own_thread(lambda: run(arguments), system.timeout_seconds)
        except _TimedOut:
            raise _Retryable(
                "timeout", f"{system.target} did not return within {system.timeout_seconds:g} s (abandoned)"
            ) from None
        except (TimeoutError, ConnectionError) as error:
            kind = "timeout" if isinstance(error, TimeoutError) else "connection"
            # asyncio's timeouts carry no message: say whose timeout it was and ragassay's bound.
            detail = str(error) or "no message"
            raise _Retryable(
                kind,
                f"{system.target} raised {type(error).__name__} ({detail}) itself, within ragassay's "
                f"{system.timeout_seconds:g} s bound (timeout_seconds)",
            ) from None
        except (
            BaseException
        ) as error:  # the team's code may raise anything, SystemExit too: that question's row says what
            raise _Failed("exception", f"{type(error).__name__}: {error}") from None
        if not isinstance(result, dict):
            raise _Failed("mapping", f"the target returned {type(result).__name__}, not a dict of record fields")
        try:
            return record_from_fields(result, names, f"the target's result for {query_id}")
        except ValueError as error:
            raise _Failed("mapping", str(error)) from None

    return call


class _TimedOut(Exception):
    pass


def _in_own_thread(function: Callable[[], object], timeout: float):
    """function() in a daemon thread; its result, or what it raised (BaseException
    included); _TimedOut when it has not returned within timeout seconds (it is left running: a
    thread cannot be stopped, and as a daemon it does not hold the process at exit)."""
    outcome: dict = {}

    def target() -> None:
        try:
            outcome["result"] = function()
        except BaseException as error:  # handed to the caller, which makes it the question's row
            outcome["error"] = error

    worker = threading.Thread(target=target, daemon=True, name="system-under-test")
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        raise _TimedOut()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["result"]


async def _awaited(awaitable):
    return await awaitable


# Placeholders a body template may hold: text, and lists (a conversation's messages).
_TEXT_PLACEHOLDERS = ("question", "query_id", "session", "conversation_id", "turn")
_LIST_PLACEHOLDERS = ("history", "messages")


def _fills(query_id: str, question: str, conversation: _Conversation) -> dict[str, str | list]:
    """What each placeholder of a body template stands for in one call."""
    history = [dict(message) for message in conversation.history]
    return {
        "question": question,
        "query_id": query_id,
        "session": conversation.session,
        "conversation_id": conversation.conversation_id or "",
        "turn": "" if conversation.turn is None else str(conversation.turn),
        "history": history,
        "messages": [*history, {"role": "user", "content": question}],
    }


def _substituted(value, fills: dict[str, str | list]):
    """The body template with every {{name}} (or [[name]], which Prefect's own templating in
    prefect.yaml leaves alone) filled in every string: a string that is only {{history}} or
    {{messages}} becomes the list of messages, one that holds it among other text its JSON."""
    if isinstance(value, str):
        for name in _LIST_PLACEHOLDERS:
            if value.strip() in (f"{{{{{name}}}}}", f"[[{name}]]"):
                return fills[name]
        for name in (*_TEXT_PLACEHOLDERS, *_LIST_PLACEHOLDERS):
            filled = fills[name] if isinstance(fills[name], str) else json.dumps(fills[name], ensure_ascii=False)
            value = value.replace(f"{{{{{name}}}}}", filled).replace(f"[[{name}]]", filled)
        return value
    if isinstance(value, dict):
        return {key: _substituted(item, fills) for key, item in value.items()}
    if isinstance(value, list):
        return [_substituted(item, fills) for item in value]
    return value


def _session_clearer(system: HttpSystem | PythonSystem) -> Callable[[str], str | None] | None:
    """The function that clears a session (its problem as text, None when cleared), or None when
    the system says no way to clear one."""
    if system.clear_session is None:
        return None
    if system.kind == "python":
        module_name, _, attribute = system.clear_session.partition(":")
        try:
            function = getattr(importlib.import_module(module_name), attribute)
        except (ImportError, AttributeError) as error:
            raise ConfigError(f"clear_session {system.clear_session!r} cannot be imported: {error}") from None

        def clear_python(session: str) -> str | None:
            try:
                result = _in_own_thread(lambda: function(session=session), system.timeout_seconds)
                if inspect.isawaitable(result):
                    asyncio.run(_awaited(result))
            except _TimedOut:
                return f"{system.clear_session} did not return within {system.timeout_seconds:g} s"
            except BaseException as error:  # the team's code: whatever it raises is the note
                return f"{type(error).__name__}: {error}"
            return None

        return clear_python
    import httpx

    request = system.clear_session
    headers = resolved_headers(system.header_templates())

    def clear_http(session: str) -> str | None:
        fills = _fills("", "", _Conversation(session=session))
        url = _substituted(request.url, fills)
        body = _substituted(request.body, fills) if request.body is not None else None
        try:
            response = httpx.request(request.method, url, json=body, headers=headers, timeout=system.timeout_seconds)
        except httpx.HTTPError as error:
            return f"{redact(url)}: {type(error).__name__}: {error}"
        return None if response.status_code < 400 else f"HTTP {response.status_code} from {redact(url)}"

    return clear_http


def _http_caller(system: HttpSystem):
    import httpx
    from jsonpath_ng.ext import parse

    headers = resolved_headers(system.header_templates())
    secrets = system_secrets(system)
    paths = {name: (path, parse(path)) for name, path in system.response.model_dump(exclude_none=True).items()}
    client = httpx.Client(timeout=system.timeout_seconds, headers=headers, follow_redirects=system.follow_redirects)
    url = redact(system.url)

    def call(query_id: str, question: str, conversation: _Conversation) -> dict:
        fills = _fills(query_id, question, conversation)
        body = _substituted(system.body, fills) if system.body is not None else None
        deadline = time.monotonic() + system.timeout_seconds
        request = (
            client.build_request("GET", system.url, params=body)
            if system.method == "GET"
            else client.build_request(system.method, system.url, json=body)
        )
        timeout = _Retryable("timeout", f"no whole response from {url} within {system.timeout_seconds:g} s")
        try:
            response = client.send(request, stream=True)
            try:
                content = bounded_content(response, deadline, system.max_response_bytes)
            finally:
                response.close()
        except ResponseTooLarge as error:
            raise _Failed("too_large", f"the response from {url} is {error} (max_response_bytes)") from None
        except httpx.TimeoutException:
            raise timeout from None
        except httpx.TooManyRedirects:
            raise _Failed(
                "http_status", f"{url} redirects in a loop (more than {client.max_redirects} redirects)"
            ) from None
        except httpx.TransportError as error:
            raise _Retryable("connection", f"{url}: {type(error).__name__}: {error}") from None
        if content is None:
            raise timeout
        if response.status_code in _RETRY_STATUS:
            raise _Retryable(
                "http_status",
                f"HTTP {response.status_code} from {url}",
                retry_after_seconds(response.headers.get("Retry-After")),
            )
        if response.is_redirect:
            target = redact(response.headers.get("Location", "nowhere"))
            raise _Failed(
                "http_status",
                f"HTTP {response.status_code} redirect from {url} to {target} (not followed; set "
                "`follow_redirects: true` to follow it, or give the final URL)",
            )
        if response.status_code >= 400:
            raise _Failed("http_status", f"HTTP {response.status_code} from {url}")
        try:
            document = _lists_cut(json.loads(content))
        except (ValueError, RecursionError):
            # Masked before it is cut: a secret cut in two would no longer match its value.
            shown = mask_secrets(content.decode("utf-8", errors="replace"), secrets)[:120]
            raise _Failed("malformed", f"the response from {url} is not JSON: {shown!r}") from None
        record = _read_response(document, paths)
        if time.monotonic() > deadline:
            raise timeout
        return record

    call.close = client.close
    return call


# The most items of any list in a response that its JSONPaths read: past any max rank (a ranking
# of 1,000,000 ids took 24 s a call to read), so the reading stays within the call's time.
MAX_LIST_ITEMS = 10_000


def _lists_cut(value):
    """A parsed response with every list cut to its first MAX_LIST_ITEMS items."""
    if isinstance(value, list):
        return [_lists_cut(item) for item in value[:MAX_LIST_ITEMS]]
    if isinstance(value, dict):
        return {key: _lists_cut(item) for key, item in value.items()}
    return value


def _read_response(document, paths: dict) -> dict:
    """The record's fields found by their JSONPaths; _Failed naming a JSONPath that matches nothing
    in the response at any depth (a path into an empty list matches nothing and is an empty
    list), or a value of the wrong type for its field."""
    found = {}
    for name, (text, expression) in paths.items():
        values = [match.value for match in expression.find(document)]
        if not values:
            reason = _why_nothing(expression, document)
            if reason is not None:
                raise _Failed("mapping", f"response.{name} {text} matched nothing in the response: {reason}")
        found[name] = values
    record: dict = {}
    for name in ("answer", "refused"):
        if name in found:
            value = found[name][0] if found[name] else None
            wanted = str if name == "answer" else bool
            if value is not None and not isinstance(value, wanted):
                raise _Failed(
                    "mapping",
                    f"response.{name} {paths[name][0]} is {type(value).__name__} {value!r}, not "
                    + ("a string" if name == "answer" else "true or false"),
                )
            record[name] = value
    for name in ("documents", "citations"):
        for value in found.get(name, []):
            if not isinstance(value, (str, int)) or isinstance(value, bool):
                raise _Failed(
                    "mapping", f"response.{name} {paths[name][0]} matched {type(value).__name__} {value!r}, not an id"
                )
    if "citations" in found:
        record["citations"] = [str(value) for value in found["citations"]]
    documents, contexts, scores = found.get("documents"), found.get("contexts"), found.get("scores")
    if documents is not None or contexts is not None:
        count = max(len(documents or []), len(contexts or []))
        record["retrieved"] = [
            {
                **({"doc_id": str(documents[i])} if documents and i < len(documents) else {}),
                **({"text": contexts[i]} if contexts and i < len(contexts) else {}),
                **({"score": scores[i]} if scores and i < len(scores) else {}),
            }
            for i in range(count)
        ]
    return record


def _why_nothing(expression, document) -> str | None:
    """Why a JSONPath that matched nothing did not, or None when it reached an empty list (a
    system that found nothing): the deepest part of the path that matches, and what it matched."""
    from jsonpath_ng.jsonpath import Child, Root

    node = expression
    while isinstance(node, Child):
        node = node.left
        if isinstance(node, Root):
            return "its first field is not in the response"
        values = [match.value for match in node.find(document)]
        if values:
            if all(isinstance(value, list) and not value for value in values):
                return None
            kinds = sorted({type(value).__name__ for value in values})
            return f"its part {node} matches {len(values)} value(s) ({', '.join(kinds)}), the rest of the path none"
    return "no part of the response matches it"
