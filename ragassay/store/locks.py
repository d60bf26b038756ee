"""One writer per collection at a time. Every change to a collection's tables (ingest, delete,
golden add/delete, generation, BEIR import, the embedding cache, the index swap) reads, changes
and writes inside `collection_lock`, so two processes writing the same collection take turns
instead of one silently overwriting the other's work.

The lock is an advisory `flock` on `<home>/locks/<collection>.lock` (outside the collection's
folder, so taking it never makes an empty collection appear). The kernel releases it when its
holder exits, however it exits, so a killed writer never leaves a stale lock. The holder writes
who it is into the file; a writer that waits longer than the timeout ($RAGASSAY_LOCK_TIMEOUT
seconds, default 600) fails with CollectionBusy naming the holder. Re-entrant within a process.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ragassay.environment import environment
from ragassay.errors import RagassayError

_POLL_SECONDS = 0.05
_held: dict[Path, int] = {}
_guard = threading.RLock()


class CollectionBusy(RagassayError):
    """Another process holds a collection's write lock for longer than we may wait."""


@contextmanager
def collection_lock(lock_file: Path, timeout: float | None = None, name: str | None = None) -> Iterator[None]:
    """Hold the collection's write lock for the block (waiting up to timeout seconds). The same
    lock serializes other shared things (the workspace's MLflow store, temporary Prefect
    servers' database), named in the timeout's error by name."""
    timeout = environment().lock_timeout if timeout is None else timeout
    with _guard:
        if lock_file in _held:
            _held[lock_file] += 1
            try:
                yield
            finally:
                _held[lock_file] -= 1
            return
        lock_file.parent.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(lock_file, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            _acquire(descriptor, lock_file, timeout, name or f"collection {lock_file.stem!r}")
            holder = {
                "pid": os.getpid(),
                "host": socket.gethostname(),
                "command": " ".join(sys.argv)[:300],
                "since": time.time(),
            }
            os.ftruncate(descriptor, 0)
            os.pwrite(descriptor, json.dumps(holder).encode(), 0)
            _held[lock_file] = 1
            try:
                yield
            finally:
                del _held[lock_file]
                fcntl.flock(descriptor, fcntl.LOCK_UN)
        finally:
            os.close(descriptor)


def _acquire(descriptor: int, lock_file: Path, timeout: float, name: str) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise CollectionBusy(
                    f"{name} is being written by {_holder(lock_file)}; "
                    f"gave up after {timeout:g}s (RAGASSAY_LOCK_TIMEOUT sets how long to wait)"
                ) from None
            time.sleep(_POLL_SECONDS)


def _holder(lock_file: Path) -> str:
    try:
        holder = json.loads(lock_file.read_text() or "{}")
    except (OSError, ValueError):
        return "another process"
    if not holder:
        return "another process"
    return f"process {holder.get('pid')} on {holder.get('host')} ({holder.get('command', '')!r}, for {time.time() - holder.get('since', time.time()):.0f}s)"
