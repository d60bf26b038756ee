"""Ctrl-C and SIGTERM end a command within seconds, whatever it is doing.

Each signal is seen twice. Python runs the signal's handler in the main thread: ours raises
KeyboardInterrupt; while a flow runs, Prefect's own SIGTERM handler raises its TerminationSignal
instead and marks the flow run, and its task runner then waits for the running tasks, a model call
that Python cannot interrupt among them (19-38 s and more, measured). The operating system's
signal also wakes a watcher thread (signal.set_wakeup_fd, which no Python handler replaces): it
starts a watchdog, and if the command has not exited INTERRUPT_GRACE_SECONDS later, the process
exits there and then, with 128 + the signal (130 for Ctrl-C, 143 for SIGTERM). A second signal
exits at once. Cleanups registered with `on_interrupt` (the MLflow runs left unfinished are ended
KILLED) run at the first signal in a thread of their own, and the exit waits for them up to
CLEANUP_SECONDS more. Nothing finished is lost: completed model calls are in the completion cache and
every table is written atomically, so a rerun resumes from them; the temporary Prefect server, in
its own session so that a terminal's Ctrl-C does not stop it first, ends within a second of the
command (cli/temporary_server.py).

A command that ends, interrupted or not, ends through `finish`: Python's exit steps that matter
(threads joined, atexit handlers), then `os._exit`, without the interpreter's teardown of the
modules a command loaded (1.3-1.5 s after a flow command)."""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable

INTERRUPT_GRACE_SECONDS = 3.0
CLEANUP_SECONDS = 1.5
_STOPPING_SIGNALS = (signal.SIGINT, signal.SIGTERM)
_received: list[int] = []
# Re-entrant: the main thread's signal handler may run while the main thread itself holds it.
_lock = threading.RLock()
_cleanups: list[Callable[[str], None]] = []
_cleaning: list[threading.Thread] = []


def install() -> None:
    """Handle SIGINT and SIGTERM as above (call from the main thread, before the command runs)."""
    for signum in _STOPPING_SIGNALS:
        signal.signal(signum, _on_signal)
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)
    threading.Thread(target=_watch, args=(read_end,), name="ragassay-interrupts", daemon=True).start()


def on_interrupt(cleanup: Callable[[str], None]) -> None:
    """Call `cleanup(signal name)` at the first stopping signal (from a thread: keep it short)."""
    _cleanups.append(cleanup)


def wait_for_cleanup() -> None:
    """Let the cleanups finish (at most CLEANUP_SECONDS) before the process exits."""
    for thread in _cleaning:
        thread.join(CLEANUP_SECONDS)


def exit_code() -> int | None:
    """128 + the signal that interrupted the command, or None when none did."""
    with _lock:
        return 128 + _received[0] if _received else None


def _on_signal(signum: int, frame) -> None:
    _record(signum)
    raise KeyboardInterrupt


def _watch(read_end: int) -> None:
    signals = 0
    while True:
        for signum in os.read(read_end, 64):
            if signum not in _STOPPING_SIGNALS:
                continue
            signals += 1
            if signals > 1:
                _exit_now(128 + signum)
            _record(signum)


def _record(signum: int) -> None:
    """The first stopping signal: say so, start the cleanups and the watchdog (once, whichever of
    the handler and the watcher thread comes first). The cleanup thread is started and listed
    under the lock, so the main thread, whose handler also passes here, never waits on a thread
    that is listed but not yet started."""
    with _lock:
        if _received:
            return
        _received.append(signum)
        cleaning = threading.Thread(
            target=_clean_up, args=(signal.Signals(signum).name,), name="ragassay-interrupt-cleanup", daemon=True
        )
        cleaning.start()
        _cleaning.append(cleaning)
    sys.stderr.write(
        f"\ninterrupted ({signal.Signals(signum).name}): stopping; what finished is kept, and running the "
        "command again resumes from it\n"
    )
    watchdog = threading.Timer(INTERRUPT_GRACE_SECONDS, _exit_after_cleanup, args=(128 + signum,))
    watchdog.daemon = True
    watchdog.start()


def _clean_up(reason: str) -> None:
    for cleanup in _cleanups:
        with contextlib.suppress(Exception):
            cleanup(reason)


def _exit_after_cleanup(code: int) -> None:
    wait_for_cleanup()
    _exit_now(code)


def finish(code: int | str | None) -> None:
    """End the process the way `sys.exit(code)` would once the command is done, without the
    interpreter's teardown of every module it loaded: 1.3-1.5 s after a flow command (Prefect,
    MLflow, polars, pyarrow, matplotlib), measured on the 2-core reference machine, for nothing a
    command still needs. What an exit must do still happens first, in Python's order: threads that
    are not daemons are joined with the hooks of executors (threading's shutdown), then every
    atexit handler runs (Prefect's log and event drains, the Prefect server's lease, MLflow's,
    temporary folders', logging's flush), then the streams are flushed."""
    if code is not None and not isinstance(code, int):
        sys.stderr.write(f"{code}\n")  # as sys.exit prints a message it is given
        code = 1
    threading._shutdown()  # type: ignore[attr-defined]  # what Py_Finalize calls first
    atexit._run_exitfuncs()
    _exit_now(code or 0)


def _exit_now(code: int) -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)
