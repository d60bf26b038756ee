"""Child processes that end when the process that started them is gone, and whether a process
still runs (`process_alive`: a claim's or a lease's holder).

A child started with Popen keeps running when its parent is killed (SIGKILL, or SIGTERM, which
skips atexit): an extraction worker keeps parsing. Each of our
children watches its parent instead: once it has been re-parented, it ends.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

PARENT_POLL_SECONDS = 0.25


def end_when_orphaned(parent_pid: int, end: Callable[[], None]) -> None:
    """Call end() (from a daemon thread) within PARENT_POLL_SECONDS of parent_pid no longer being
    this process's parent."""

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(PARENT_POLL_SECONDS)
        end()

    threading.Thread(target=watch, daemon=True, name="parent-watch").start()


def process_alive(pid: int) -> bool:
    """Whether process `pid` runs: a zombie (exited, not yet reaped by its parent) does not, and
    neither does pid 0 or below."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        # /proc/PID/stat: "pid (name) state ...": the state follows the last ")".
        state = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8").rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state != "Z"
