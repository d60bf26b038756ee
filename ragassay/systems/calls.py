"""Calling a system under test once per question: a Python callable or an HTTP endpoint, at most
`concurrency` calls at once, retried with backoff where a later try may pass (connection errors,
timeouts, HTTP 429 and 5xx), remembered in the completion cache when they succeed and the system
says so (`version:` set, or `cache: true`; keyed on the system's settings, the request and its
version; errors are never remembered). A failed call is a record with its error kind and message, never a lost row.
When the first UNREACHABLE_AFTER calls all fail to reach the system, the rest are not made: their
records say `skipped`, so one dead endpoint costs seconds, not retries × questions, and the other
configurations of the batch still run."""

from __future__ import annotations

import asyncio
import importlib
import inspect
import json
import os
import re
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

from ragassay.errors import ConfigError
from ragassay.llm.cache import CompletionCache, request_key
from ragassay.redaction import redact
from ragassay.systems.records import SystemRecord, failed_record, record_from_fields
from ragassay.systems.settings import RECORD_FIELDS, HttpSystem, PythonSystem

# Calls that all failed to reach the system before its configuration is stopped.
UNREACHABLE_AFTER = 5
_RETRY_STATUS = {429, 500, 502, 503, 504}
_BACKOFF_SECONDS = (0.5, 1.0, 2.0, 4.0, 8.0)


class _Retryable(Exception):
    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


class _Failed(Exception):
    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


def call_system(
    system: HttpSystem | PythonSystem,
    questions: list[tuple[str, str]],
    cache: CompletionCache | None,
    on_progress: Callable[[int, int], None] = lambda done, total: None,
) -> list[SystemRecord]:
    """One record per (query_id, question), in their order."""
    call = _http_caller(system) if system.kind == "http" else _python_caller(system)
    identity = "system:" + json.dumps(
        system.model_dump(mode="json", exclude={"cache", "concurrency", "max_retries", "timeout_seconds"}),
        sort_keys=True,
    )
    records: list[SystemRecord | None] = [None] * len(questions)
    lock, done, unreachable = threading.Lock(), [0], [0]

    def one(position: int) -> None:
        query_id, question = questions[position]
        key = request_key(identity, "system-call", query_id=query_id, question=question)
        remembered = cache.get(key) if cache is not None and system.remembers_calls else None
        if remembered is not None:
            record = record_from_fields(remembered, _OWN_NAMES, "cached call")
        else:
            if unreachable[0] >= UNREACHABLE_AFTER and done[0] == unreachable[0]:
                record = failed_record(
                    query_id,
                    question,
                    "skipped",
                    f"not asked: the first {UNREACHABLE_AFTER} calls found the system unreachable",
                    None,
                )
            else:
                record = _with_retries(system, call, query_id, question)
                if record.answered and cache is not None and system.remembers_calls:
                    cache.put(key, record.as_json())
        with lock:
            records[position] = record
            done[0] += 1
            unreachable[0] += record.error_kind == "connection"
            on_progress(done[0], len(questions))

    try:
        with ThreadPoolExecutor(max_workers=system.concurrency) as pool:
            list(pool.map(one, range(len(questions))))
    finally:
        getattr(call, "close", lambda: None)()
    return records


def _with_retries(system, call, query_id: str, question: str) -> SystemRecord:
    for attempt in range(system.max_retries + 1):
        started = time.perf_counter()
        try:
            values = call(query_id, question)
            latency = (time.perf_counter() - started) * 1000
        except _Retryable as error:
            latency = (time.perf_counter() - started) * 1000
            if attempt < system.max_retries:
                time.sleep(_BACKOFF_SECONDS[min(attempt, len(_BACKOFF_SECONDS) - 1)])
                continue
            return failed_record(query_id, question, error.kind, str(error), latency)
        except _Failed as error:
            return failed_record(query_id, question, error.kind, str(error), (time.perf_counter() - started) * 1000)
        return _record(values, query_id, question, latency)
    raise AssertionError("unreachable")


def _record(values: SystemRecord | dict, query_id: str, question: str, latency: float) -> SystemRecord:
    if isinstance(values, SystemRecord):
        record = values
    else:
        record = record_from_fields(values, _OWN_NAMES, f"question {query_id}")
    return replace(record, query_id=query_id, question=question, latency_ms=round(latency, 3))


_OWN_NAMES = {name: name for name in RECORD_FIELDS}


def _python_caller(system: PythonSystem):
    """The target function, called with question= (and query_id= when it takes it); a coroutine
    function runs to completion in the calling thread."""
    module_name, _, attribute = system.target.partition(":")
    try:
        function = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as error:
        raise ConfigError(f"system target {system.target!r} cannot be imported: {error}") from None
    if not callable(function):
        raise ConfigError(f"system target {system.target!r} is not callable")
    takes_query_id = "query_id" in inspect.signature(function).parameters
    names = system.column_names()

    def call(query_id: str, question: str) -> SystemRecord:
        arguments = {"question": question, **({"query_id": query_id} if takes_query_id else {})}
        try:
            result = function(**arguments)
            if inspect.isawaitable(result):
                result = asyncio.run(_awaited(result, system.timeout_seconds))
        except (TimeoutError, ConnectionError) as error:
            kind = "timeout" if isinstance(error, TimeoutError) else "connection"
            raise _Retryable(kind, f"{type(error).__name__}: {error}") from None
        except Exception as error:  # the team's code may raise anything: that question's row says what
            raise _Failed("exception", f"{type(error).__name__}: {error}") from None
        if not isinstance(result, dict):
            raise _Failed("mapping", f"the target returned {type(result).__name__}, not a dict of record fields")
        try:
            return record_from_fields(result, names, f"the target's result for {query_id}")
        except ValueError as error:
            raise _Failed("mapping", str(error)) from None

    return call


async def _awaited(awaitable, timeout: float):
    return await asyncio.wait_for(awaitable, timeout)


_VARIABLE = re.compile(r"\$\{(\w+)\}")


def resolved_headers(headers: dict[str, str]) -> dict[str, str]:
    """Headers with each ${VAR} taken from the environment; a ConfigError naming a variable that
    is not set (its value is never shown)."""
    missing = sorted({v for value in headers.values() for v in _VARIABLE.findall(value)} - set(os.environ))
    if missing:
        raise ConfigError(f"the system's headers name ${{{missing[0]}}}, which is not set in the environment")
    return {name: _VARIABLE.sub(lambda match: os.environ[match[1]], value) for name, value in headers.items()}


def _substituted(value, query_id: str, question: str):
    """The body template with {{question}} and {{query_id}} (or [[question]] and [[query_id]],
    which Prefect's own templating in prefect.yaml leaves alone) filled in every string."""
    if isinstance(value, str):
        for placeholder, filled in (("question", question), ("query_id", query_id)):
            value = value.replace(f"{{{{{placeholder}}}}}", filled).replace(f"[[{placeholder}]]", filled)
        return value
    if isinstance(value, dict):
        return {key: _substituted(item, query_id, question) for key, item in value.items()}
    if isinstance(value, list):
        return [_substituted(item, query_id, question) for item in value]
    return value


def _http_caller(system: HttpSystem):
    import httpx
    from jsonpath_ng.ext import parse

    headers = resolved_headers(system.headers)
    paths = {name: (path, parse(path)) for name, path in system.response.model_dump(exclude_none=True).items()}
    client = httpx.Client(timeout=system.timeout_seconds, headers=headers)
    url = redact(system.url)

    def call(query_id: str, question: str) -> dict:
        body = _substituted(system.body, query_id, question) if system.body is not None else None
        try:
            if system.method == "GET":
                response = client.get(system.url, params=body)
            else:
                response = client.request(system.method, system.url, json=body)
        except httpx.TimeoutException:
            raise _Retryable("timeout", f"no response from {url} within {system.timeout_seconds:g} s") from None
        except httpx.TransportError as error:
            raise _Retryable("connection", f"{url}: {type(error).__name__}: {error}") from None
        if response.status_code in _RETRY_STATUS:
            raise _Retryable("http_status", f"HTTP {response.status_code} from {url}")
        if response.status_code >= 400:
            raise _Failed("http_status", f"HTTP {response.status_code} from {url}")
        try:
            document = response.json()
        except ValueError:
            raise _Failed("malformed", f"the response from {url} is not JSON: {response.text[:120]!r}") from None
        return _read_response(document, paths)

    call.close = client.close
    return call


def _read_response(document, paths: dict) -> dict:
    """The record's fields found by their JSONPaths; _Failed naming a JSONPath whose first field is
    missing from the response (a path into an empty list matches nothing and is an empty list)."""
    found = {}
    for name, (text, expression) in paths.items():
        values = [match.value for match in expression.find(document)]
        if not values and not _starts_in(document, text):
            raise _Failed("mapping", f"response.{name} {text} matched nothing in the response")
        found[name] = values
    record: dict = {}
    if "answer" in found:
        record["answer"] = found["answer"][0] if found["answer"] else None
    if "refused" in found:
        record["refused"] = found["refused"][0] if found["refused"] else None
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


def _starts_in(document, path: str) -> bool:
    """Whether the first field a JSONPath names ($.sources[*].id: sources) is in the response."""
    match = re.match(r"^\$\.?([A-Za-z_][\w-]*)", path)
    return isinstance(document, dict) and match is not None and match[1] in document
