"""MLflow at the edge, the only part of ragassay that imports it: one experiment per collection
set, one parent run per batch, one child run per configuration. Each job is its own module:

- `client`: which tracking store (a new one copied from the empty store set-up migrated), MLflow's
  client, the experiments;
- `tags`: the tags ragassay's runs carry;
- `records`: what one evaluation logs and where it went, as types;
- `origin`: settings as params, where a run came from;
- `write`: batches, configuration runs, their tables and descriptions, calibration runs;
- `traces`: answer traces and their assessments;
- `views`: the links a user opens (the runs list's view of a batch, a run's filtered Traces tab);
- `lifecycle`: runs registered until finished, so an interrupt ends them KILLED;
- `read`: runs, tables and answer configurations read back;
- `local_store`: the workspace's own store file read without MLflow (look-ups in milliseconds);
- `unreachable`: a tracking store that does not take a batch (gone, refusing, locked, unwritable
  artifacts): bounded waits, a typed error with the store's reason, the batch kept, no run left
  RUNNING.

Callers use the names below (`tracking.download_table`), each imported from its module when first
used; each module's own names stay its own.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# The client's names are bound here at once: importing the submodule `client` makes the package's
# attribute `client` that module, which would hide the function of the same name. The module is
# light (MLflow is imported inside its functions).
from ragassay.tracking.client import (
    client,
    ensure_experiment,
    ensure_named_experiment,
    experiment_name,
    tracking_uri,
    ui_command,
)

# Each name and the module that defines it. A name is imported when first used (`tracking.X`, or
# `from ragassay.tracking import X`), so a look-up that needs one module (`runs list`: the store
# file's reader) does not load every other one, and polars, numpy and MLflow with them.
_DEFINED_IN = {
    "end_unfinished_runs": "lifecycle",
    "finish": "lifecycle",
    "mark_failed": "lifecycle",
    "verdict_status": "lifecycle",
    "flatten_params": "origin",
    "git_commit": "origin",
    "origin_tags": "origin",
    "AnswerConfigurationRun": "read",
    "PER_QUESTION_TABLES": "read",
    "answer_configuration_runs": "read",
    "batch_collections": "read",
    "batch_parent_table": "read",
    "batch_status": "read",
    "batch_tables": "read",
    "download_table": "read",
    "find_runs": "read",
    "get_run": "read",
    "latest_batch": "read",
    "Batch": "records",
    "BatchRecord": "records",
    "ConfigurationRecord": "records",
    "LoggedBatch": "records",
    "new_batch_id": "records",
    "ASSERTIONS_ARTIFACT": "tags",
    "DESCRIPTION_TAG": "tags",
    "MACHINE": "tags",
    "MLFLOW_PARENT": "tags",
    "TAG_BATCH": "tags",
    "TAG_COLLECTIONS": "tags",
    "TAG_INTERRUPTED": "tags",
    "TAG_KIND": "tags",
    "TAG_LABEL": "tags",
    "TAG_PREFECT_FLOW_RUN": "tags",
    "TAG_PREFECT_FLOW_RUN_URL": "tags",
    "TAG_ROLE": "tags",
    "TAG_VERDICT": "tags",
    "find_traces": "traces",
    "log_traces": "traces",
    "TrackingStoreFailed": "unreachable",
    "TrackingUnreachable": "unreachable",
    "end_failed_batch": "unreachable",
    "end_runs_left_running": "unreachable",
    "keep_report": "unreachable",
    "keep_unlogged": "unreachable",
    "store_failures_as_typed": "unreachable",
    "unlogged_folder": "unreachable",
    "VIEW_TAG_PREFIX": "views",
    "run_url": "views",
    "runs_view_columns": "views",
    "runs_view_url": "views",
    "save_runs_view": "views",
    "traces_below_url": "views",
    "ui_address": "views",
    "CALIBRATION_EXPERIMENT": "write",
    "PREVIEW_ROWS": "write",
    "describe_run": "write",
    "fitted_description": "write",
    "locate_batch": "write",
    "log_batch_record": "write",
    "log_batch_summary": "write",
    "log_calibration": "write",
    "log_configuration_run": "write",
    "log_stage_params": "write",
    "log_tables": "write",
    "log_values": "write",
    "log_verdict": "write",
    "open_batch": "write",
}

if TYPE_CHECKING:
    from ragassay.tracking.lifecycle import end_unfinished_runs, finish, mark_failed, verdict_status
    from ragassay.tracking.origin import flatten_params, git_commit, origin_tags
    from ragassay.tracking.read import (
        PER_QUESTION_TABLES,
        AnswerConfigurationRun,
        answer_configuration_runs,
        batch_collections,
        batch_parent_table,
        batch_status,
        batch_tables,
        download_table,
        find_runs,
        get_run,
        latest_batch,
    )
    from ragassay.tracking.records import Batch, BatchRecord, ConfigurationRecord, LoggedBatch, new_batch_id
    from ragassay.tracking.tags import (
        ASSERTIONS_ARTIFACT,
        DESCRIPTION_TAG,
        MACHINE,
        MLFLOW_PARENT,
        TAG_BATCH,
        TAG_COLLECTIONS,
        TAG_INTERRUPTED,
        TAG_KIND,
        TAG_LABEL,
        TAG_PREFECT_FLOW_RUN,
        TAG_PREFECT_FLOW_RUN_URL,
        TAG_ROLE,
        TAG_VERDICT,
    )
    from ragassay.tracking.traces import find_traces, log_traces
    from ragassay.tracking.unreachable import (
        TrackingStoreFailed,
        TrackingUnreachable,
        end_failed_batch,
        end_runs_left_running,
        keep_report,
        keep_unlogged,
        store_failures_as_typed,
        unlogged_folder,
    )
    from ragassay.tracking.views import (
        VIEW_TAG_PREFIX,
        run_url,
        runs_view_columns,
        runs_view_url,
        save_runs_view,
        traces_below_url,
        ui_address,
    )
    from ragassay.tracking.write import (
        CALIBRATION_EXPERIMENT,
        PREVIEW_ROWS,
        describe_run,
        fitted_description,
        locate_batch,
        log_batch_record,
        log_batch_summary,
        log_calibration,
        log_configuration_run,
        log_stage_params,
        log_tables,
        log_values,
        log_verdict,
        open_batch,
    )


def __getattr__(name: str) -> Any:
    module = _DEFINED_IN.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = [
    "ASSERTIONS_ARTIFACT",
    "CALIBRATION_EXPERIMENT",
    "DESCRIPTION_TAG",
    "MACHINE",
    "MLFLOW_PARENT",
    "PER_QUESTION_TABLES",
    "PREVIEW_ROWS",
    "TAG_BATCH",
    "TAG_COLLECTIONS",
    "TAG_INTERRUPTED",
    "TAG_KIND",
    "TAG_LABEL",
    "TAG_PREFECT_FLOW_RUN",
    "TAG_PREFECT_FLOW_RUN_URL",
    "TAG_ROLE",
    "TAG_VERDICT",
    "VIEW_TAG_PREFIX",
    "AnswerConfigurationRun",
    "Batch",
    "BatchRecord",
    "ConfigurationRecord",
    "LoggedBatch",
    "TrackingStoreFailed",
    "TrackingUnreachable",
    "answer_configuration_runs",
    "batch_collections",
    "batch_parent_table",
    "batch_status",
    "batch_tables",
    "client",
    "describe_run",
    "download_table",
    "end_failed_batch",
    "end_runs_left_running",
    "end_unfinished_runs",
    "ensure_experiment",
    "ensure_named_experiment",
    "experiment_name",
    "find_runs",
    "find_traces",
    "finish",
    "fitted_description",
    "flatten_params",
    "get_run",
    "git_commit",
    "keep_report",
    "keep_unlogged",
    "latest_batch",
    "locate_batch",
    "log_batch_record",
    "log_batch_summary",
    "log_calibration",
    "log_configuration_run",
    "log_stage_params",
    "log_tables",
    "log_traces",
    "log_values",
    "log_verdict",
    "mark_failed",
    "new_batch_id",
    "open_batch",
    "origin_tags",
    "run_url",
    "runs_view_columns",
    "runs_view_url",
    "save_runs_view",
    "store_failures_as_typed",
    "traces_below_url",
    "tracking_uri",
    "ui_address",
    "ui_command",
    "unlogged_folder",
    "verdict_status",
]
