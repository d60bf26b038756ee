"""Extraction in a child process, so one hostile file cannot hang or exhaust the ingest.

Readers run C parsers (lexbor for HTML, zlib, expat) that Python cannot interrupt: a signal waits
until the parser returns, and a 4.4 MB page of 400k nested divs kept lexbor busy past 300 s while
the command ignored SIGTERM. Here every file is extracted by one long-lived worker process; the
ingest waits for each file at most the time bound ($RAGASSAY_EXTRACT_TIMEOUT seconds, default
120), then kills the worker, rejects that file as `too_slow` and starts a fresh worker for the
next. The worker's address space is capped ($RAGASSAY_EXTRACT_MEMORY_MB, default 4096), so a file
that would need more memory is rejected as `too_large` rather than swapping the machine; a worker
that dies (a crash in a C library) rejects its file as `unreadable`. The worker ends with its
parent (ragassay/orphans.py).

    python -m ragassay.ingest.isolation READ_FD WRITE_FD PARENT_PID MEMORY_BYTES   (started by IsolatedExtractor)
"""

from __future__ import annotations

import os
import subprocess
import sys
from multiprocessing.connection import Connection

from ragassay.environment import environment
from ragassay.ingest.extraction import ExtractedText, ExtractionError, extract_text

# The worker's start (Python and the readers' imports) is not part of any file's time bound.
WORKER_START_TIMEOUT_SECONDS = 120.0


class IsolatedExtractor:
    """extract_text(data, file_name) in a worker process, with a time bound per file.

    Use as a context manager; the worker starts at the first file and is stopped on exit."""

    def __init__(self, timeout: float | None = None, memory_bytes: int | None = None):
        settings = environment()
        self.timeout = settings.extract_timeout if timeout is None else timeout
        self.memory_bytes = int(settings.extract_memory_mb * 1024 * 1024) if memory_bytes is None else memory_bytes
        self._worker: subprocess.Popen | None = None
        self._to_worker: Connection | None = None
        self._from_worker: Connection | None = None

    def __enter__(self) -> IsolatedExtractor:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def __call__(self, data: bytes, file_name: str) -> ExtractedText:
        if self._worker is not None and self._worker.poll() is not None:
            self.close()  # it died between files (killed from outside): not this file's fault
        if self._worker is None:
            self._start()
        assert self._to_worker is not None and self._from_worker is not None
        try:
            self._to_worker.send((data, file_name))
            answered = self._from_worker.poll(self.timeout)
            outcome = self._from_worker.recv() if answered else None
        except (EOFError, OSError):
            outcome = ("died", None)
        if outcome is None:
            self.close()
            raise ExtractionError(
                "too_slow", f"extraction took longer than {self.timeout:g}s (RAGASSAY_EXTRACT_TIMEOUT sets the bound)"
            )
        kind, value = outcome
        if kind == "text":
            return value
        if kind == "rejected":
            raise ExtractionError(*value)
        code = self.close()
        raise ExtractionError("unreadable", f"the reader's process died (exit code {code})")

    def _start(self) -> None:
        to_worker_read, to_worker_write = os.pipe()
        from_worker_read, from_worker_write = os.pipe()
        self._worker = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "ragassay.ingest.isolation",
                str(to_worker_read),
                str(from_worker_write),
                str(os.getpid()),
                str(self.memory_bytes),
            ],
            pass_fds=(to_worker_read, from_worker_write),
            stdin=subprocess.DEVNULL,
        )
        os.close(to_worker_read)
        os.close(from_worker_write)
        self._to_worker = Connection(to_worker_write, readable=False)
        self._from_worker = Connection(from_worker_read, writable=False)
        try:
            ready = self._from_worker.poll(WORKER_START_TIMEOUT_SECONDS) and self._from_worker.recv() == "ready"
        except (EOFError, OSError):
            ready = False
        if not ready:
            code = self.close()
            raise RuntimeError(
                f"the extraction worker did not start within {WORKER_START_TIMEOUT_SECONDS:g}s (exit code {code})"
            )

    def close(self) -> int | None:
        """Stop the worker (killing it mid-file if need be); returns its exit code."""
        worker, self._worker = self._worker, None
        for connection in (self._to_worker, self._from_worker):
            if connection is not None:
                connection.close()
        self._to_worker = self._from_worker = None
        if worker is None:
            return None
        if worker.poll() is None:
            worker.kill()
        return worker.wait()


def _serve(requests: Connection, answers: Connection) -> None:
    """Say "ready", then answer (data, file_name) requests until the parent closes its end."""
    answers.send("ready")
    while True:
        try:
            data, file_name = requests.recv()
        except EOFError:
            return
        try:
            answers.send(("text", extract_text(data, file_name)))
        except ExtractionError as error:
            answers.send(("rejected", (error.reason, error.detail)))
        except MemoryError:
            answers.send(
                ("rejected", ("too_large", "extracting it needs more memory than RAGASSAY_EXTRACT_MEMORY_MB allows"))
            )
        except Exception as error:
            answers.send(("rejected", ("unreadable", f"the reader failed: {type(error).__name__}: {error}")))


if __name__ == "__main__":
    import resource

    from ragassay.orphans import end_when_orphaned

    read_fd, write_fd, parent_pid, memory_bytes = (int(argument) for argument in sys.argv[1:5])
    end_when_orphaned(parent_pid, lambda: os._exit(1))
    # The readers' libraries load before "ready", so no file's time bound pays for their import.
    import defusedxml.ElementTree  # noqa: F401
    import pypdf  # noqa: F401
    import selectolax.lexbor  # noqa: F401

    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    _serve(Connection(read_fd, writable=False), Connection(write_fd, readable=False))
