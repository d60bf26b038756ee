"""Progress lines: only the last for a small fast step, every 10% for a slow one (model calls)."""

from __future__ import annotations

import logging

import pytest

from ragassay import progress
from ragassay.progress import ProgressReporter


@pytest.mark.parametrize(("slow_seconds", "lines"), [(3600.0, 1), (0.0, 5)])
def test_small_steps_log_each_tenth_only_when_slow(monkeypatch, caplog, slow_seconds, lines):
    monkeypatch.setattr(progress, "SLOW_SECONDS", slow_seconds)
    with caplog.at_level(logging.INFO, logger="ragassay"), ProgressReporter("judging 5 answers") as report:
        for done in range(1, 6):
            report(done, 5)
    logged = [r.getMessage() for r in caplog.records if r.getMessage().startswith("judging 5 answers")]
    assert len(logged) == lines and logged[-1].startswith("judging 5 answers: 5/5 (100%)")
