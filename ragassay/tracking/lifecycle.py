"""Runs from creation to their end: every run this process creates is registered until it is
finished, so an interrupt or a cancelled flow run ends it KILLED (tagged why) instead of leaving it
RUNNING in MLflow for ever; a failed stage, or failed assertions, end a batch FAILED."""

from __future__ import annotations

import threading
from pathlib import Path

from ragassay.tracking.client import client
from ragassay.tracking.records import Batch
from ragassay.tracking.tags import TAG_FAILED_STAGE, TAG_INTERRUPTED, VERDICT_FAILED

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


def verdict_status(verdict: str | None) -> str:
    """The MLflow status a batch whose work is whole ends with: FAILED when its assertions failed
    (MLflow's runs list then shows its red mark at a glance, where a name's `failed:` prefix is
    cut off), else FINISHED. A batch that failed on its assertions is still a complete measurement:
    read.latest_batch tells it from a failed stage by its `ragassay.verdict` tag."""
    return "FAILED" if verdict == VERDICT_FAILED else "FINISHED"


def end_unfinished_runs(reason: str, status: str = "KILLED", keep_failed: bool = False) -> list[str]:
    """End every run this process started and has not finished (an interrupted or cancelled
    command's batch and the configuration run it was logging), tagged with why; what they logged
    stays. Each run is ended at most once, whoever calls first; a run that cannot be reached is
    left as it is. The ids ended, or with keep_failed the ids that could not be ended."""
    with _unfinished_lock:
        runs = list(_unfinished_runs.items())
        _unfinished_runs.clear()
    ended, failed = [], []
    for run_id, mlflow_client in runs:
        try:
            mlflow_client.set_tag(run_id, TAG_INTERRUPTED, reason)
            mlflow_client.set_terminated(run_id, status)
        except Exception:
            failed.append(run_id)
            continue
        ended.append(run_id)
    return failed if keep_failed else ended


def mark_failed(home: Path, batch: Batch, stage: str, error: str) -> None:
    """The batch's parent run ends FAILED, tagged with the stage and the error."""
    mlflow_client = client(home)
    mlflow_client.set_tag(batch.parent_run_id, TAG_FAILED_STAGE, stage)
    mlflow_client.set_tag(batch.parent_run_id, "ragassay.error", error[:5000])
    finish(mlflow_client, batch.parent_run_id, "FAILED")
