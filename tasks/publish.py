"""Where a run came from and what it shows in the Prefect UI: the origin tags every MLflow run of a
flow run carries (with the flow run's id and page), and the table and Markdown artifacts an
evaluation publishes on its flow run."""

from __future__ import annotations

import re
from collections.abc import Callable

from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.runtime import flow_run
from prefect.settings import PREFECT_UI_URL

from ragassay import tracking
from ragassay.gates.assertions import AssertionResult, assertion_rows, batch_verdict, failed_assertions_text
from ragassay.work_span import WorkSpan


def flow_run_url(flow_run_id: str | None) -> str | None:
    """The flow run's page in the Prefect UI; None when no UI is configured (an ephemeral server)."""
    ui = PREFECT_UI_URL.value()
    return f"{ui.rstrip('/')}/runs/flow-run/{flow_run_id}" if ui and flow_run_id else None


def run_origin(source: str) -> dict[str, str]:
    """MLflow origin tags for a run made inside this flow run (a pipeline's stages carry the
    pipeline's flow run: the one a user opens in the Prefect UI)."""
    flow_run_id = flow_run.root_flow_run_id or flow_run.id
    return tracking.origin_tags(source, flow_run_id, flow_run_url(flow_run_id))


def flow_run_line() -> str:
    """The current flow run as a Markdown line (a link when Prefect's UI has an address), for an
    MLflow description: the way back from MLflow to Prefect."""
    flow_run_id = flow_run.root_flow_run_id or flow_run.id
    if flow_run_id is None:
        return ""
    url = flow_run_url(flow_run_id)
    return f"\nPrefect flow run [{flow_run_id}]({url})\n" if url else f"\nPrefect flow run `{flow_run_id}`\n"


def _stage_key(stage: str, collection_names: list[str]) -> str:
    """The start of a stage's artifact keys (Prefect's keys: lowercase letters, digits and
    dashes): `retrieval-sample`."""
    return re.sub(r"[^a-z0-9-]+", "-", f"{stage}-{'-'.join(collection_names)}".lower()).strip("-")


def publish(stage: str, collection_names: list[str], table: list[dict], markdown: str, description: str) -> None:
    """A table artifact (when there is a table) and a Markdown artifact on the current flow run,
    under keys that stay the same from run to run (`retrieval-sample-metrics`,
    `retrieval-sample-report`), so the UI shows their history."""
    key = _stage_key(stage, collection_names)
    if table:
        create_table_artifact(table=table, key=f"{key}-metrics", description=description)
    create_markdown_artifact(markdown=markdown, key=f"{key}-report", description=description)


def publish_verdict(stage: str, collection_names: list[str], assertions: list[AssertionResult]) -> None:
    """The assertions' rows (each one's text, configuration, metric, bound, measured value, outcome
    and reason) as a table artifact on the current flow run, `<stage>-<collections>-assertions`;
    none without assertions."""
    if assertions:
        create_table_artifact(
            table=assertion_rows(assertions),
            key=f"{_stage_key(stage, collection_names)}-assertions",
            description=f"{batch_verdict(assertions)}: {failed_assertions_text(assertions) or 'every assertion held'}",
        )


def stage_batch(
    home,
    collections: list[str],
    kind: str,
    params: dict[str, str],
    batch: tracking.Batch | None,
    source: str,
    labels: list[str] = (),
    work_spans: dict[str, WorkSpan] | None = None,
) -> tracking.Batch:
    """The batch a stage logs into: a new one of its own (finished by the stage, `batch.owned`;
    started when the first of its configurations' work did), or the pipeline's, whose parent then
    gets the stage's params under the stage's name. The stage's flow run is named and tagged
    after it (name_flow_run)."""
    if batch is None:
        started = min((span.started_ms for span in (work_spans or {}).values()), default=None)
        batch = tracking.open_batch(home, collections, kind, params, run_origin(source), started_ms=started)
    else:
        tracking.log_stage_params(tracking.client(home), batch, kind, params)
    name_flow_run(kind, collections, batch.batch_id, labels)
    return batch


def log_or_keep(
    home, collections: list[str], record_of: Callable[[str], tracking.BatchRecord], **staging
) -> tracking.LoggedBatch:
    """A stage's record (record_of(batch id)) logged into its batch (stage_batch with staging:
    kind, params, batch, source, labels, work_spans); when the tracking server does not answer,
    kept in the workspace instead (tracking.keep_unlogged), so the results computed are printed
    and kept, never lost with the server."""
    staged, record = staging["batch"], None
    try:
        with tracking.store_failures_as_typed(home):
            staged = stage_batch(home, collections, **staging)
            record = record_of(staged.batch_id)
            return tracking.log_batch_record(home, staged, record)
    except tracking.TrackingStoreFailed as error:
        batch_id = staged.batch_id if staged is not None else tracking.new_batch_id()
        record = record if record is not None else record_of(batch_id)
        kept = tracking.keep_unlogged(home, collections, record, staged, str(error))
        tracking.end_failed_batch(home, kept.kept_in, str(error))
        return kept


def name_flow_run(kind: str, collections: list[str], batch_id: str, labels: list[str] = ()) -> None:
    """The current flow run named after what it did and its MLflow batch (`pipeline-sample-2b97…`,
    not Prefect's random `normal-ape`) and tagged `collection:NAME`, `batch:ID` and
    `configuration:LABEL`, so that Prefect's runs list finds a batch's runs by tag."""
    from prefect import get_client

    if flow_run.id is None:
        return
    tags = {f"collection:{name}" for name in collections} | {f"batch:{batch_id}"}
    tags |= {f"configuration:{label}" for label in labels}
    with get_client(sync_client=True) as client:
        current = client.read_flow_run(flow_run.id)
        client.update_flow_run(
            flow_run.id, name=f"{kind}-{'-'.join(collections)}-{batch_id}", tags=sorted(set(current.tags) | tags)
        )
