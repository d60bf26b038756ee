"""The names ragassay's runs carry in MLflow: its tags (found again by `ragassay runs`), MLflow's own
tags it sets, and the artifact folder of the tables' Parquet copies."""

from __future__ import annotations

TAG_BATCH = "ragassay.batch_id"

TAG_KIND = "ragassay.kind"

TAG_COLLECTIONS = "ragassay.collections"

TAG_LABEL = "ragassay.configuration"

TAG_ROLE = "ragassay.role"  # batch (parent) or configuration (child)

MLFLOW_PARENT = "mlflow.parentRunId"

TAG_PREFECT_FLOW_RUN = "ragassay.prefect.flow_run_id"

TAG_PREFECT_FLOW_RUN_URL = "ragassay.prefect.flow_run_url"

TAG_INTERRUPTED = "ragassay.interrupted"

# A batch's verdict on its parent (passed, failed, or none without assertions), and a configuration
# run's verdict on its own assertions; the parent's `assertions.json` artifact holds each one.
TAG_VERDICT = "ragassay.verdict"
# The verdict of a batch whose assertions failed (gates/assertions.FAILED).
VERDICT_FAILED = "failed"
# On a batch a stage failed in: which stage (its later stages' tables are missing).
TAG_FAILED_STAGE = "ragassay.failed_stage"
ASSERTIONS_ARTIFACT = "assertions.json"

# The tag MLflow's UI shows as a run's description (Markdown).
DESCRIPTION_TAG = "mlflow.note.content"

# The artifact folder of the Parquet copy of every table (batches logged before it existed keep
# theirs at the top; download_table reads both).
MACHINE = "machine"
