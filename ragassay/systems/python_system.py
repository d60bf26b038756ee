"""`kind: python`: a Python callable `package.module:function` asked each question in a worker
thread of its own, bounded by `timeout_seconds` (a sync function as well as a coroutine): one that
does not return in time is abandoned (the thread is left to finish on its own; Python cannot stop
it) and its question is a `timeout` row. Whatever it raises, SystemExit and KeyboardInterrupt
included, is that question's `exception` row."""

from __future__ import annotations

import asyncio
import importlib
import inspect
import threading
from collections.abc import Callable
from typing import Literal

from pydantic import Field

from ragassay.errors import ConfigError
from ragassay.systems.calls import CalledSystem, CallFailure, Conversation, RetryableFailure
from ragassay.systems.columns import RecordColumns
from ragassay.systems.records import SystemRecord, record_from_fields

_TARGET = r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$"


class PythonSystem(CalledSystem, RecordColumns):
    """A Python callable `package.module:function` called with question= (and query_id=, history=,
    session= when it takes them), sync or async, returning a record's fields as a dict. In a
    conversation, history is the earlier turns as OpenAI-style messages and session names the
    conversation; clear_session, when given, is called with session= after its last turn."""

    kind: Literal["python"] = Field(description="python: a callable in this process.")
    target: str = Field(pattern=_TARGET, description="The callable as module:attribute (my_rag.app:answer).")
    clear_session: str | None = Field(
        None, pattern=_TARGET, description="A callable called with session= after each conversation's last turn."
    )

    def caller(self) -> PythonCaller:
        return PythonCaller(self)

    def session_clearer(self) -> Callable[[str], str | None] | None:
        if self.clear_session is None:
            return None
        function = imported(self.clear_session, "clear_session")
        timeout = self.timeout_seconds

        def clear(session: str) -> str | None:
            try:
                result = _in_own_thread(lambda: function(session=session), timeout)
                if inspect.isawaitable(result):
                    asyncio.run(_awaited(result))
            except _TimedOut:
                return f"{self.clear_session} did not return within {timeout:g} s"
            except BaseException as error:  # the team's code: whatever it raises is the note
                return f"{type(error).__name__}: {error}"
            return None

        return clear


def imported(target: str, setting: str) -> Callable:
    """The callable a `module:attribute` setting names; a ConfigError naming the setting when it
    cannot be imported or is not callable."""
    module_name, _, attribute = target.partition(":")
    try:
        function = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as error:
        raise ConfigError(f"{setting} {target!r} cannot be imported: {error}") from None
    if not callable(function):
        raise ConfigError(f"{setting} {target!r} is not callable")
    return function


class PythonCaller:
    """The target function, called with question= (and query_id=, history=, session= when it
    takes them) in a worker thread of its own, bounded by the timeout; a coroutine function runs
    to completion there."""

    def __init__(self, system: PythonSystem):
        self.system = system
        self.function = imported(system.target, "system target")
        self.takes = set(inspect.signature(self.function).parameters)
        self.names = system.column_names()

    def _run(self, arguments: dict):
        result = self.function(**arguments)
        return asyncio.run(_awaited(result)) if inspect.isawaitable(result) else result

    def __call__(self, query_id: str, question: str, conversation: Conversation) -> SystemRecord:
        system = self.system
        offered = {
            "query_id": query_id,
            "history": [dict(message) for message in conversation.history],
            "session": conversation.session,
        }
        arguments = {"question": question, **{name: value for name, value in offered.items() if name in self.takes}}
        try:
            result = _in_own_thread(lambda: self._run(arguments), system.timeout_seconds)
        except _TimedOut:
            raise RetryableFailure(
                "timeout", f"{system.target} did not return within {system.timeout_seconds:g} s (abandoned)"
            ) from None
        except (TimeoutError, ConnectionError) as error:
            kind = "timeout" if isinstance(error, TimeoutError) else "connection"
            # asyncio's timeouts carry no message: say whose timeout it was and ragassay's bound.
            detail = str(error) or "no message"
            raise RetryableFailure(
                kind,
                f"{system.target} raised {type(error).__name__} ({detail}) itself, within ragassay's "
                f"{system.timeout_seconds:g} s bound (timeout_seconds)",
            ) from None
        except BaseException as error:  # the team's code may raise anything, SystemExit too: its row says what
            raise CallFailure("exception", f"{type(error).__name__}: {error}") from None
        if not isinstance(result, dict):
            raise CallFailure("mapping", f"the target returned {type(result).__name__}, not a dict of record fields")
        try:
            return record_from_fields(result, self.names, f"the target's result for {query_id}")
        except ValueError as error:
            raise CallFailure("mapping", str(error)) from None

    def close(self) -> None:
        """Nothing to close: the function stays imported."""


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
