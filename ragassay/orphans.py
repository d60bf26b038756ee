"""Child processes that end when the process that started them is gone.

A child started with Popen keeps running when its parent is killed (SIGKILL, or SIGTERM, which
skips atexit): an extraction worker keeps parsing. Each of our
children watches its parent instead: once it has been re-parented, it ends.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable

PARENT_POLL_SECONDS = 0.25


def end_when_orphaned(parent_pid: int, end: Callable[[], None]) -> None:
    """Call end() (from a daemon thread) within PARENT_POLL_SECONDS of parent_pid no longer being
    this process's parent."""

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(PARENT_POLL_SECONDS)
        end()

    threading.Thread(target=watch, daemon=True, name="parent-watch").start()
