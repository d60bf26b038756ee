"""Progress of long steps: a bar on an interactive terminal, and a log line every 10% of the work
(only the last one for steps of fewer than LOG_STEPS_FROM items, where ten lines would be noise)."""

from __future__ import annotations

import logging
import sys
import time

LOG_STEPS_FROM = 100


def _logger() -> logging.Logger | logging.LoggerAdapter:
    from prefect.exceptions import MissingContextError
    from prefect.logging import get_run_logger

    try:
        return get_run_logger()
    except MissingContextError:
        return logging.getLogger("ragassay")


class ProgressReporter:
    """Callable as on_progress(done, total); use as a context manager around the work."""

    def __init__(self, description: str):
        self.description = description
        self._next_log_percent = 10
        self._bar = None
        self._task_id = None
        self._started = time.perf_counter()

    def __enter__(self) -> "ProgressReporter":
        if sys.stderr.isatty():
            from rich.progress import Progress

            self._bar = Progress(transient=True)
            self._bar.start()
            self._task_id = self._bar.add_task(self.description, total=None)
        return self

    def __exit__(self, *exc_info) -> None:
        if self._bar is not None:
            self._bar.stop()

    def __call__(self, done: int, total: int) -> None:
        if self._bar is not None:
            self._bar.update(self._task_id, completed=done, total=total)
        percent = 100 * done // total if total else 100
        if done == total or (total >= LOG_STEPS_FROM and percent >= self._next_log_percent):
            elapsed = time.perf_counter() - self._started
            _logger().info("%s: %d/%d (%d%%) after %.1fs", self.description, done, total, percent, elapsed)
            self._next_log_percent = (percent // 10 + 1) * 10
