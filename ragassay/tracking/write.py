"""Writing batches: one parent run per batch, one child run per configuration (a pipeline run is
one batch: its stages' configurations are all children of its parent run), their params, metrics,
tables, descriptions and pictures; and a judge calibration's run."""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

import polars as pl

from ragassay import plots
from ragassay.metrics.names import mlflow_key
from ragassay.tracking.client import (
    client,
    ensure_experiment,
    ensure_named_experiment,
    experiment_name,
    tracking_uri,
    ui_command,
)
from ragassay.tracking.lifecycle import create_run, finish, verdict_status
from ragassay.tracking.records import Batch, BatchRecord, LoggedBatch, new_batch_id
from ragassay.tracking.tags import (
    ASSERTIONS_ARTIFACT,
    DESCRIPTION_TAG,
    MACHINE,
    MLFLOW_PARENT,
    TAG_BATCH,
    TAG_COLLECTIONS,
    TAG_KIND,
    TAG_LABEL,
    TAG_ROLE,
    TAG_VERDICT,
)
from ragassay.tracking.traces import log_traces
from ragassay.tracking.unreachable import end_runs_left_running
from ragassay.tracking.views import run_url, runs_view_columns, runs_view_url, save_runs_view
from ragassay.work_span import WorkSpan

# The artifact that holds a run's whole Markdown report (its description may show only the start).
REPORT_ARTIFACT = "report.md"
# The most characters MLflow keeps of a tag's value, a run's description included
# (mlflow.utils.validation.MAX_TAG_VAL_LENGTH; named here so that importing this module does not
# import MLflow, and checked against it in tests/test_tracking.py).
DESCRIPTION_LIMIT = 8000

# Tables up to this many rows are also logged as JSON (`log_table`), which MLflow's UI previews;
# Parquet stays the machine-readable copy.
PREVIEW_ROWS = 2_000


def open_batch(
    home: Path,
    collections: list[str],
    kind: str,
    params: dict[str, str],
    origin: dict[str, str],
    owned: bool = True,
    started_ms: int | None = None,
) -> Batch:
    """The parent run of a new batch, named `kind-batchid`, with its params; started when its
    work began (started_ms) where the batch is opened after the work."""
    mlflow_client = client(home)
    # Runs an earlier batch left RUNNING when its store refused to end them are ended first.
    end_runs_left_running(home, mlflow_client)
    experiment_id = ensure_experiment(mlflow_client, home, collections)
    batch_id = new_batch_id()
    run = create_run(
        mlflow_client,
        experiment_id,
        start_time=started_ms,
        run_name=f"{kind}-{batch_id}",
        tags={TAG_BATCH: batch_id, TAG_KIND: kind, TAG_COLLECTIONS: ",".join(collections), TAG_ROLE: "batch", **origin},
    )
    batch = Batch(batch_id, experiment_id, run.info.run_id, tuple(collections), owned, origin)
    log_values(mlflow_client, batch.parent_run_id, params, {})
    return batch


def log_stage_params(mlflow_client, batch: Batch, kind: str, params: dict[str, str]) -> None:
    """A stage's shared settings on the batch's parent run (prefixed by the stage in a pipeline)."""
    log_values(mlflow_client, batch.parent_run_id, {batch.prefixed(kind, k): v for k, v in params.items()}, {})


def log_configuration_run(
    mlflow_client,
    batch: Batch,
    kind: str,
    label: str,
    params: dict[str, str],
    metrics: dict[str, float],
    artifacts: dict[str, pl.DataFrame],
    description: str = "",
    work_span: WorkSpan | None = None,
    previews: dict[str, pl.DataFrame] | None = None,
    verdict: str | None = None,
) -> str:
    """A child run named `kind/label` (what differs between a batch's runs leads; the batch is in
    its tag and in its parent's name): params, metrics (MLflow-safe names) and table artifacts of
    one configuration (or of one pipeline stage), its description (Markdown) where given, its
    start and end those of the work (work_span) where known, and its verdict where given."""
    shown = fitted_description(description) if description else None
    run = create_run(
        mlflow_client,
        batch.experiment_id,
        start_time=work_span.started_ms if work_span else None,
        run_name=f"{kind}/{label}",
        tags={
            TAG_BATCH: batch.batch_id,
            TAG_KIND: kind,
            TAG_COLLECTIONS: ",".join(batch.collections),
            TAG_LABEL: label,
            TAG_ROLE: "configuration",
            MLFLOW_PARENT: batch.parent_run_id,
            **batch.origin,
            **({DESCRIPTION_TAG: shown} if shown else {}),
            **({TAG_VERDICT: verdict} if verdict else {}),
        },
    )
    run_id = run.info.run_id
    if description and shown != description:  # cut to fit: the whole description beside it
        mlflow_client.log_text(run_id, description, REPORT_ARTIFACT)
    log_values(mlflow_client, run_id, params, metrics)
    log_tables(mlflow_client, run_id, artifacts, previews)
    finish(mlflow_client, run_id, end_time=work_span.ended_ms if work_span else None)
    return run_id


def log_batch_summary(
    mlflow_client,
    batch: Batch,
    kind: str,
    metrics: dict[str, dict[str, float]],
    tables: dict[str, pl.DataFrame],
    figures: dict[str, object],
) -> None:
    """What the batch's parent shows: each configuration's headline metrics as
    `kind/label/metric` (so the experiment's chart view has them), the batch's tables, and its
    pictures under `plots/`."""
    flat = {
        f"{kind}/{label}/{mlflow_key(name)}": value
        for label, values in metrics.items()
        for name, value in values.items()
    }
    log_values(mlflow_client, batch.parent_run_id, {}, flat)
    log_tables(
        mlflow_client, batch.parent_run_id, {batch.prefixed(kind, name): table for name, table in tables.items()}
    )
    for name, figure in figures.items():
        mlflow_client.log_figure(batch.parent_run_id, figure, f"plots/{name}.png")


def log_batch_record(home: Path, batch: Batch, record: BatchRecord) -> LoggedBatch:
    """Log a record into its batch (one child run per configuration, the summary on the parent),
    finishing the batch when the stage owns it."""
    mlflow_client = client(home)
    run_ids = {
        c.label: log_configuration_run(
            mlflow_client,
            batch,
            record.kind,
            c.label,
            c.params,
            c.metrics,
            c.tables,
            c.description,
            c.work_span,
            c.previews,
            c.verdict,
        )
        for c in record.configurations
    }
    for c in record.configurations:
        if c.traces:
            log_traces(home, batch.experiment_id, run_ids[c.label], c.traces)
    if record.parent_metrics:
        log_values(mlflow_client, batch.parent_run_id, {}, record.parent_metrics)
    log_batch_summary(mlflow_client, batch, record.kind, record.headline, record.tables, record.figures)
    logged = {key for c in record.configurations for key in c.metrics}
    save_runs_view(mlflow_client, batch, record.kind, runs_view_columns(record.headline, logged))
    if batch.owned:
        log_verdict(mlflow_client, batch, record.kind, record.verdict, record.assertions)
        finish(mlflow_client, batch.parent_run_id, verdict_status(record.verdict))
    return locate_batch(home, batch, run_ids).model_copy(update={"runs_view_url": runs_view_url(home, batch)})


def log_verdict(mlflow_client, batch: Batch, kind: str, verdict: str | None, assertions: list[dict]) -> None:
    """A batch's verdict on its parent run: the `ragassay.verdict` tag, the `assertions.json`
    artifact (each assertion's row), and, for a verdict on assertions, the start of the run's name
    (`failed: pipeline-2b97…`), which MLflow's runs list shows without any column chosen (its
    narrow name column cuts a name's end)."""
    if verdict is None:
        return
    mlflow_client.set_tag(batch.parent_run_id, TAG_VERDICT, verdict)
    mlflow_client.log_dict(batch.parent_run_id, {"verdict": verdict, "assertions": assertions}, ASSERTIONS_ARTIFACT)
    if assertions:
        mlflow_client.set_tag(batch.parent_run_id, "mlflow.runName", f"{verdict}: {kind}-{batch.batch_id}")


def locate_batch(home: Path, batch: Batch, run_ids: dict[str, str] | None = None) -> LoggedBatch:
    """Where a batch is (and its configurations' runs, when given)."""
    return LoggedBatch(
        batch_id=batch.batch_id,
        experiment=experiment_name(list(batch.collections)),
        experiment_id=batch.experiment_id,
        parent_run_id=batch.parent_run_id,
        run_ids=run_ids or {},
        tracking_uri=tracking_uri(home),
        ui_command=ui_command(home),
        mlflow_url=run_url(home, batch),
    )


def describe_run(home: Path, run_id: str, markdown: str) -> None:
    """A run's description in MLflow's UI (fitted_description), and the whole Markdown as its
    `report.md` artifact."""
    mlflow_client = client(home)
    mlflow_client.set_tag(run_id, DESCRIPTION_TAG, fitted_description(markdown))
    mlflow_client.log_text(run_id, markdown, REPORT_ARTIFACT)


def fitted_description(markdown: str, limit: int = DESCRIPTION_LIMIT) -> str:
    """What a run's description shows of a Markdown report: all of it when it fits a tag (MLflow
    keeps at most `limit` characters of one and cuts a longer one wherever the limit falls, mid
    table or mid number, with only a warning in the log); otherwise the report up to the last
    heading that fits, then a line naming the `report.md` artifact that holds all of it."""
    if len(markdown) <= limit:
        return markdown
    note = (
        f"\n\n*This description shows the report's first sections: the whole report ({len(markdown):,} "
        f"characters; MLflow keeps {limit:,} here) is this run's `{REPORT_ARTIFACT}` artifact.*\n"
    )
    room = limit - len(note)
    # Cut before a heading, so no section is left half; a first section longer than the limit
    # is cut at a line's end, so no row or line is.
    cut = markdown.rfind("\n#", 0, room)
    if cut <= 0:
        cut = max(markdown.rfind("\n", 0, room), 0)
    return markdown[:cut].rstrip() + note


def log_values(mlflow_client, run_id: str, params: dict[str, str], metrics: dict[str, float]) -> None:
    from mlflow.entities import Metric, Param

    now = int(time.time() * 1000)
    # MLflow takes at most 100 params and 1000 metrics per call.
    params = [Param(k, v[:6000]) for k, v in params.items()]
    metrics = [Metric(mlflow_key(k), float(v), now, 0) for k, v in metrics.items() if v is not None]
    for start in range(0, max(len(params), len(metrics), 1), 100):
        mlflow_client.log_batch(run_id, params=params[start : start + 100], metrics=metrics[start : start + 100])


def log_tables(
    mlflow_client, run_id: str, tables: dict[str, pl.DataFrame], previews: dict[str, pl.DataFrame] | None = None
) -> None:
    """Each table as Parquet under `machine/` (for programs: `download_table`; MLflow's UI cannot
    preview Parquet), and the small ones as JSON beside it at the top, which MLflow's UI shows as
    a table: the table itself, or its preview where one is given (the same rows, columns in the
    order a person reads them). A name may hold a folder (`retrieval/comparisons`)."""
    previews = previews or {}
    with tempfile.TemporaryDirectory() as folder:
        for name, table in tables.items():
            folder_name, _, file_name = name.rpartition("/")
            path = Path(folder) / f"{file_name}.parquet"
            table.write_parquet(path)
            mlflow_client.log_artifact(run_id, str(path), artifact_path="/".join(filter(None, (MACHINE, folder_name))))
            if table.height <= PREVIEW_ROWS:
                shown = previews.get(name, table)
                mlflow_client.log_table(run_id, data=_json_columns(shown), artifact_file=f"{name}.json")


def _json_columns(table: pl.DataFrame) -> dict[str, list]:
    """The table as columns of JSON values (nested values written as JSON text)."""

    def plain(value):
        return value if value is None or isinstance(value, (str, int, float, bool)) else json.dumps(value, default=str)

    return {name: [plain(value) for value in table[name].to_list()] for name in table.columns}


CALIBRATION_EXPERIMENT = "ragassay/judge-calibration"


def log_calibration(
    home: Path,
    kind: str,
    params: dict[str, str],
    metrics: dict[str, float],
    rows: pl.DataFrame,
    confusion: dict[str, int] | None,
    collection: str | None = None,
    batches: list[str] = (),
    figures: dict | None = None,
) -> str:
    """One calibration run: the judge and labels as params, the agreement figures as metrics,
    every row as a Parquet artifact, (for support verdicts) a confusion-matrix picture and a
    reliability diagram, and any other figures given (named PNGs: the aligned judge's agreement
    before and after alignment). In the
    judge-calibration experiment, or, for a collection's own labels, in the collection's
    experiment beside its batches (tagged with the batches the labels were sampled from)."""
    mlflow_client = client(home)
    experiment_id = (
        ensure_experiment(mlflow_client, home, [collection])
        if collection
        else ensure_named_experiment(mlflow_client, home, CALIBRATION_EXPERIMENT)
    )
    tags = {TAG_KIND: kind, TAG_ROLE: "calibration"}
    if collection:
        tags |= {TAG_COLLECTIONS: collection, "ragassay.label_batches": ",".join(batches)}
    run = create_run(
        mlflow_client,
        experiment_id,
        run_name=f"{kind}-{collection + '-' if collection else ''}{params.get('judge_model', '')}",
        tags=tags,
    )
    run_id = run.info.run_id
    log_values(mlflow_client, run_id, params, {k: v for k, v in metrics.items() if v is not None})
    log_tables(mlflow_client, run_id, {"rows": rows})
    if confusion is not None:
        mlflow_client.log_figure(
            run_id, plots.confusion_figure(confusion, params.get("judge_model", "")), "confusion_matrix.png"
        )
        readable = rows.filter(
            pl.col("p_supported").is_not_null() & pl.col("verdict").is_in(["supported", "unsupported"])
        )
        mlflow_client.log_figure(
            run_id,
            plots.reliability_figure(
                [label == "supported" for label in readable["label"]],
                readable["p_supported"].to_list(),
                float(params["support_threshold"]),
                f"P(supported) against people's labels\n{params.get('judge_model', '').split('@')[0][:60]}",
            ),
            "reliability_diagram.png",
        )
    for name, figure in (figures or {}).items():
        mlflow_client.log_figure(run_id, figure, f"{name}.png")
    finish(mlflow_client, run_id)
    return run_id
