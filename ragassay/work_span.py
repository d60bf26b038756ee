"""When a piece of work began and ended, in milliseconds since the epoch (MLflow's unit). Kept
apart from tracking, which imports MLflow (and with it matplotlib), so that the flows that time
their work import nothing heavy."""

from __future__ import annotations

import time
from dataclasses import dataclass


@dataclass(frozen=True)
class WorkSpan:
    """When a configuration's (or a stage's) work began and ended: its child run is logged after
    the work, so the run's start and end are set to these, and MLflow's Duration column says how
    long the work took."""

    started_ms: int
    ended_ms: int

    @classmethod
    def since(cls, started_ms: int) -> WorkSpan:
        return cls(started_ms, now_ms())


def now_ms() -> int:
    return time.time_ns() // 1_000_000
