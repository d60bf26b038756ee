"""Progress of long steps: a bar on an interactive terminal, and a log line every 10% of the work.
A step of fewer than LOG_STEPS_FROM items logs only its last line, where ten lines would be noise,
unless its items are slow (model calls): then a 10% line comes once SLOW_SECONDS have passed since
the last one, so a long evaluation never sits silent in a log."""

from __future__ import annotations

import logging
import sys
import time

LOG_STEPS_FROM = 100
SLOW_SECONDS = 10.0


# Lines go to the library's logger; inside a Prefect run, tasks/__init__.py forwards them to the
# run's log, so the Prefect UI shows them (the library itself never imports Prefect).
logger = logging.getLogger("ragassay")


class ProgressReporter:
    """Callable as on_progress(done, total); use as a context manager around the work."""

    def __init__(self, description: str, total: int | None = None):
        """total, when known before the first item ends, shows on the bar from the start."""
        self.description = description
        self._total = total
        self._next_log_percent = 10
        self._bar = None
        self._task_id = None
        self._started = self._last_log = time.perf_counter()

    def __enter__(self) -> ProgressReporter:
        if sys.stderr.isatty():
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self._bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TimeRemainingColumn(),
                transient=True,
            )
            self._bar.start()
            self._task_id = self._bar.add_task(self.description, total=self._total)
        return self

    def __exit__(self, *exc_info) -> None:
        if self._bar is not None:
            self._bar.stop()

    def __call__(self, done: int, total: int) -> None:
        if self._bar is not None:
            self._bar.update(self._task_id, completed=done, total=total)
        percent = 100 * done // total if total else 100
        now = time.perf_counter()
        step_due = percent >= self._next_log_percent and (
            total >= LOG_STEPS_FROM or now - self._last_log >= SLOW_SECONDS
        )
        if done == total or step_due:
            logger.info("%s: %d/%d (%d%%) after %.1fs", self.description, done, total, percent, now - self._started)
            self._next_log_percent = (percent // 10 + 1) * 10
            self._last_log = now
