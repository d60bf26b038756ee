"""Model calls remembered on disk by exactly what was asked, so an unchanged evaluation re-run
re-uses every answer, verdict and generated question instead of asking the model again.

The key of a call is the sha256 of everything that decides its output: the model's identity
(`cache_identity`: its id, the GGUF file's size and modification time or the catalog file's
sha256, and llama-cpp-python's version), the call kind, the exact messages (so the question, the
retrieved chunks' text and the prompt's wording are all in it), the JSON schema or the one-word
options, max_tokens, temperature and seed. Change any of them and the call is asked again; nothing
is ever served for a request that differs. Token counts are remembered the same way, so a run
whose every call is remembered never loads the model.

One SQLite file per workspace (`cache/completions.sqlite`): concurrent writers (two flow runs,
several workers) are serialized by SQLite; a write that loses a race keeps the first value, which
is the same value.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path

from ragassay.llm.completion import ChatModel, Completion, OptionProbabilities

# Bump when what a cached value means changes; older entries are then never read.
CACHE_FORMAT = 1


def request_key(identity: str, kind: str, **request) -> str:
    """The cache key of one request: sha256 over the model identity, the kind and the request."""
    text = json.dumps([CACHE_FORMAT, identity, kind, request], sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


class CompletionCache:
    """A key -> JSON value store in one SQLite file."""

    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._lock = threading.Lock()
        self._connection = sqlite3.connect(path, timeout=60, check_same_thread=False, isolation_level=None)
        self._connection.execute("PRAGMA journal_mode=WAL")
        self._connection.execute(
            "CREATE TABLE IF NOT EXISTS calls (key TEXT PRIMARY KEY, value TEXT NOT NULL, created REAL NOT NULL)"
        )

    def get(self, key: str) -> dict | int | None:
        with self._lock:
            row = self._connection.execute("SELECT value FROM calls WHERE key = ?", (key,)).fetchone()
        return None if row is None else json.loads(row[0])

    def put(self, key: str, value: dict | int) -> None:
        with self._lock:
            self._connection.execute(
                "INSERT OR IGNORE INTO calls (key, value, created) VALUES (?, ?, ?)",
                (key, json.dumps(value), time.time()),
            )

    def close(self) -> None:
        with self._lock:
            self._connection.close()


def _completion_value(completion: Completion) -> dict:
    return {
        "text": completion.text,
        "prompt_tokens": completion.prompt_tokens,
        "completion_tokens": completion.completion_tokens,
        "seconds": completion.seconds,
    }


def _remembered(value: dict) -> Completion:
    """A completion served from the cache: what it cost when it was asked is kept in
    `saved_seconds`; it cost nothing now."""
    return Completion(
        value["text"],
        value["prompt_tokens"],
        value["completion_tokens"],
        0.0,
        cached=True,
        saved_seconds=value["seconds"],
    )


class CachedChatModel:
    """A ChatModel whose calls go through a CompletionCache. The model itself is loaded (by
    `load`) only when a call is not remembered."""

    def __init__(
        self,
        model_id: str,
        identity: str,
        context_size: int,
        load: Callable[[], ChatModel],
        cache: CompletionCache,
        concurrency: int = 1,
    ):
        self.model_id = model_id
        self.identity = identity
        self.context_size = context_size
        self.concurrency = concurrency
        self._load = load
        self._cache = cache

    @property
    def model(self) -> ChatModel:
        return self._load()

    def complete(self, messages, schema, max_tokens, temperature, seed) -> Completion:
        key = request_key(
            self.identity,
            "complete",
            messages=messages,
            schema=schema,
            max_tokens=max_tokens,
            temperature=temperature,
            seed=seed,
        )
        stored = self._cache.get(key)
        if stored is not None:
            return _remembered(stored)
        completion = self.model.complete(messages, schema, max_tokens, temperature, seed)
        self._cache.put(key, _completion_value(completion))
        return completion

    def count_tokens(self, text: str) -> int:
        key = request_key(self.identity, "tokens", text=text)
        stored = self._cache.get(key)
        if stored is not None:
            return int(stored)
        count = self.model.count_tokens(text)
        self._cache.put(key, count)
        return count

    def option_probabilities(self, messages, options) -> OptionProbabilities:
        key = request_key(self.identity, "options", messages=messages, options={k: list(v) for k, v in options.items()})
        stored = self._cache.get(key)
        if stored is not None:
            return OptionProbabilities(stored["probabilities"], stored["coverage"], _remembered(stored["completion"]))
        answer = self.model.option_probabilities(messages, options)
        self._cache.put(
            key,
            {
                "probabilities": answer.probabilities,
                "coverage": answer.coverage,
                "completion": _completion_value(answer.completion),
            },
        )
        return answer
