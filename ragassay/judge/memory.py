"""The judge's memory of one evaluation: each judgement kept by the digest of its request, so an
identical judgement (the same statement and context in two configurations) costs one call, and
threads asking the same request at once wait for one answer."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable
from dataclasses import replace

from ragassay.llm.structured import Structured, Usage


class JudgementMemory:
    """Results kept by request for the memory's lifetime (the judge's: one evaluation). A result
    recalled comes back marked `reused`, with zero cost. A thread asking for a request that is
    being asked now waits for that answer instead of asking again, so concurrent judging makes the
    calls sequential judging makes; when that call failed, the waiting thread asks itself."""

    def __init__(self) -> None:
        self._kept: dict[str, Structured] = {}
        self._in_flight: dict[str, threading.Event] = {}
        self._lock = threading.Lock()

    def recall_or_ask(self, request: list, ask: Callable[[], Structured]) -> Structured:
        """The result kept for request (any JSON-able list naming it whole), else ask()'s, kept."""
        key = hashlib.sha256(json.dumps(request, sort_keys=True).encode()).hexdigest()
        with self._lock:
            kept, asking = self._kept.get(key), self._in_flight.get(key)
            if kept is None and asking is None:
                self._in_flight[key] = threading.Event()
        if asking is not None:
            asking.wait()  # then kept, or (when that call failed) asked again by this thread
            return self.recall_or_ask(request, ask)
        if kept is not None:
            return replace(kept, usage=Usage(), completions=[], reused=True)
        try:
            result = ask()
            with self._lock:
                self._kept[key] = result
        finally:
            with self._lock:
                self._in_flight.pop(key).set()
        return result
