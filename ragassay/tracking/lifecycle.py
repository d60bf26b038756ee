"""Runs from creation to their end: every run this process creates is registered until it is
finished, so an interrupt or a cancelled flow run ends it KILLED (tagged why) instead of leaving it
RUNNING in MLflow for ever; a failed stage ends its batch FAILED."""

from __future__ import annotations

import threading
from pathlib import Path

from ragassay.tracking.client import client
from ragassay.tracking.records import Batch
from ragassay.tracking.tags import TAG_INTERRUPTED

# Runs this process created and has not ended yet (run id -> its client), so that an interrupt or
# a cancelled flow run can end them KILLED instead of leaving them RUNNING in MLflow for ever.
_unfinished_runs: dict[str, object] = {}

_unfinished_lock = threading.Lock()


def create_run(mlflow_client, experiment_id: str, **settings):
    run = mlflow_client.create_run(experiment_id, **settings)
    with _unfinished_lock:
        _unfinished_runs[run.info.run_id] = mlflow_client
    return run


def finish(mlflow_client, run_id: str, status: str = "FINISHED", end_time: int | None = None) -> None:
    mlflow_client.set_terminated(run_id, status, end_time=end_time)
    with _unfinished_lock:
        _unfinished_runs.pop(run_id, None)


def end_unfinished_runs(reason: str, status: str = "KILLED") -> list[str]:
    """End every run this process started and has not finished (an interrupted or cancelled
    command's batch and the configuration run it was logging), tagged with why; what they logged
    stays. Each run is ended at most once, whoever calls first; a run that cannot be reached is
    left as it is. The ids ended."""
    with _unfinished_lock:
        runs = list(_unfinished_runs.items())
        _unfinished_runs.clear()
    ended = []
    for run_id, mlflow_client in runs:
        try:
            mlflow_client.set_tag(run_id, TAG_INTERRUPTED, reason)
            mlflow_client.set_terminated(run_id, status)
        except Exception:
            continue
        ended.append(run_id)
    return ended


def mark_failed(home: Path, batch: Batch, stage: str, error: str) -> None:
    """The batch's parent run ends FAILED, tagged with the stage and the error."""
    mlflow_client = client(home)
    mlflow_client.set_tag(batch.parent_run_id, "ragassay.failed_stage", stage)
    mlflow_client.set_tag(batch.parent_run_id, "ragassay.error", error[:5000])
    finish(mlflow_client, batch.parent_run_id, "FAILED")
