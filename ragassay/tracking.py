"""MLflow at the edge: one experiment per collection set, one parent run per batch, one child run
per configuration (a pipeline run is one batch: its stages' configurations are all children of
its parent run). Runs are tagged so `ragassay runs` can find them again, and with where they came
from (user, git commit, source, the Prefect flow run).

Tracking store: $MLFLOW_TRACKING_URI when set, else a SQLite database in the workspace
(`mlflow.db`) with artifacts under `mlartifacts/`.
"""

from __future__ import annotations

import getpass
import json
import logging
import os
import re
import shlex
import subprocess
import tempfile
import threading
import time
import urllib.parse
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import polars as pl
from pydantic import BaseModel

from ragassay import plots
from ragassay.environment import environment
from ragassay.errors import RagassayError
from ragassay.metrics.names import mlflow_key
from ragassay.redaction import redact
from ragassay.work_span import WorkSpan

TAG_BATCH = "ragassay.batch_id"
TAG_KIND = "ragassay.kind"
TAG_COLLECTIONS = "ragassay.collections"
TAG_LABEL = "ragassay.configuration"
TAG_ROLE = "ragassay.role"  # batch (parent) or configuration (child)
MLFLOW_PARENT = "mlflow.parentRunId"
TAG_PREFECT_FLOW_RUN = "ragassay.prefect.flow_run_id"
TAG_PREFECT_FLOW_RUN_URL = "ragassay.prefect.flow_run_url"
# Tables up to this many rows are also logged as JSON (`log_table`), which MLflow's UI previews;
# Parquet stays the machine-readable copy.
PREVIEW_ROWS = 2_000
# The artifact folder of the Parquet copy of every table (batches logged before it existed keep
# theirs at the top; download_table reads both).
MACHINE = "machine"
TAG_INTERRUPTED = "ragassay.interrupted"

# Runs this process created and has not ended yet (run id -> its client), so that an interrupt or
# a cancelled flow run can end them KILLED instead of leaving them RUNNING in MLflow for ever.
_unfinished_runs: dict[str, object] = {}
_unfinished_lock = threading.Lock()


def tracking_uri(home: Path) -> str:
    return os.environ.get("MLFLOW_TRACKING_URI") or _local_store_uri(home)


def _local_store_uri(home: Path) -> str:
    """The workspace's own store, `sqlite:///<home>/mlflow.db`, its path percent-encoded: SQLAlchemy
    reads a `?` as the start of the URI's query (`…/q?x/mlflow.db` would open `…/q`) and decodes
    `%XX`, so a path holding either (or `#`, a space, any non-ASCII letter) is only read back as
    itself when encoded."""
    return "sqlite:///" + urllib.parse.quote(str(home.absolute() / "mlflow.db"), safe="/")


def ui_command(home: Path) -> str:
    """The command that opens these runs in MLflow's UI, quoted for a POSIX shell."""
    uri = tracking_uri(home)
    if uri.startswith("sqlite:///"):
        return (
            f"mlflow ui --backend-store-uri {shlex.quote(uri)} "
            f"--default-artifact-root {shlex.quote((home / 'mlartifacts').absolute().as_uri())}"
        )
    return f"open {uri} in a browser"


@cache
def _quiet_mlflow() -> None:
    """MLflow's settings for ragassay, made once per process before MLflow is first used."""
    # MLflow prints "View run ... at: URL" on stdout when it talks to a tracking server, which
    # would break `--json` output; ragassay prints its own links.
    os.environ["MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT"] = "true"
    # Offline and quiet: no usage telemetry (MLflow would also write ~/.config/mlflow/telemetry.json).
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
    # A progress bar per small Parquet file is noise on the terminal of `ragassay runs`.
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
    # Its INFO lines (database migrations on first use) are not the user's business. Set after
    # MLflow is imported: its import configures its logger at INFO.
    import mlflow  # noqa: F401

    logging.getLogger("mlflow").setLevel(logging.WARNING)


def client(home: Path):
    _quiet_mlflow()
    from mlflow.tracking import MlflowClient

    home.mkdir(parents=True, exist_ok=True)
    return MlflowClient(tracking_uri=tracking_uri(home))


def experiment_name(collections: list[str]) -> str:
    return "ragassay/" + "+".join(sorted(collections))


def ensure_experiment(mlflow_client, home: Path, collections: list[str]) -> str:
    return ensure_named_experiment(mlflow_client, home, experiment_name(collections))


def ensure_named_experiment(mlflow_client, home: Path, name: str) -> str:
    local = tracking_uri(home) == _local_store_uri(home)
    artifact_location = (home / "mlartifacts" / re.sub(r"[^A-Za-z0-9_.+-]", "_", name)).as_uri() if local else None
    experiment = mlflow_client.get_experiment_by_name(name)
    if experiment is None:
        return mlflow_client.create_experiment(name, artifact_location=artifact_location)
    if local and experiment.artifact_location != artifact_location:
        _relocate_artifacts(home, experiment.experiment_id, experiment.artifact_location, artifact_location)
    return experiment.experiment_id


def _relocate_artifacts(home: Path, experiment_id: str, stored: str, current: str) -> None:
    """Point an experiment of the workspace's own store, and its runs, at the workspace's
    mlartifacts folder again after the workspace was moved or copied (MLflow records artifact
    locations as absolute URIs, so new runs would write into the old place, recreated). MLflow has
    no API to change an experiment's location; the local store is the workspace's own SQLite
    file, so its two columns are rewritten, prefix for prefix."""
    import sqlite3

    old_root, new_root = stored.rsplit("/", 1)[0], current.rsplit("/", 1)[0]
    with sqlite3.connect(home / "mlflow.db") as database:
        database.execute(
            "UPDATE experiments SET artifact_location = ? WHERE experiment_id = ?", (current, int(experiment_id))
        )
        database.execute(
            "UPDATE runs SET artifact_uri = ? || substr(artifact_uri, ?) WHERE experiment_id = ? AND artifact_uri LIKE ?",
            (new_root, len(old_root) + 1, int(experiment_id), old_root + "/%"),
        )
    logging.getLogger("ragassay").info(
        "runs of %s now keep their artifacts in %s (was %s)", experiment_id, current, stored
    )


def flatten_params(value: object, prefix: str = "") -> dict[str, str]:
    """Nested dicts and lists as dotted MLflow params (`config.fusion.k` -> '60')."""
    if isinstance(value, dict):
        flat: dict[str, str] = {}
        for key, inner in value.items():
            flat.update(flatten_params(inner, f"{prefix}.{key}" if prefix else str(key)))
        return flat
    if isinstance(value, (list, tuple)):
        return {prefix: redact(json.dumps(list(value), default=str))}
    # A model server's URL may carry credentials: MLflow params are read by everyone who can open them.
    return {prefix: "" if value is None else redact(str(value))}


def git_commit(folder: Path) -> str | None:
    """The commit checked out in folder (where the run was started), or None outside a git repository."""
    try:
        result = subprocess.run(["git", "rev-parse", "HEAD"], cwd=folder, capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return result.stdout.strip() if result.returncode == 0 else None


def origin_tags(
    source: str, prefect_flow_run_id: str | None = None, prefect_flow_run_url: str | None = None
) -> dict[str, str]:
    """Where a run came from, as MLflow's own tags (user, source, git commit: its UI shows them)
    and the Prefect flow run that made it."""
    tags = {"mlflow.user": getpass.getuser(), "mlflow.source.name": source, "mlflow.source.type": "JOB"}
    commit = git_commit(Path.cwd())
    if commit:
        tags["mlflow.source.git.commit"] = commit
    if prefect_flow_run_id:
        tags[TAG_PREFECT_FLOW_RUN] = prefect_flow_run_id
    if prefect_flow_run_url:
        tags[TAG_PREFECT_FLOW_RUN_URL] = prefect_flow_run_url
    return tags


@dataclass(frozen=True)
class Batch:
    """Where one batch's runs go. A stage run on its own owns its batch (and finishes it); the
    stages of a pipeline share the pipeline's batch, so their params and tables on the parent
    carry the stage's name as a prefix."""

    batch_id: str
    experiment_id: str
    parent_run_id: str
    collections: tuple[str, ...]
    owned: bool = True
    origin: dict[str, str] = field(default_factory=dict)

    def prefixed(self, kind: str, name: str) -> str:
        return name if self.owned else f"{kind}/{name}"


def new_batch_id() -> str:
    return uuid.uuid4().hex[:12]


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
    experiment_id = ensure_experiment(mlflow_client, home, collections)
    batch_id = new_batch_id()
    run = _create_run(
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
) -> str:
    """A child run named `kind/label` (what differs between a batch's runs leads; the batch is in
    its tag and in its parent's name): params, metrics (MLflow-safe names) and table artifacts of
    one configuration (or of one pipeline stage), its description (Markdown) where given, and its
    start and end those of the work (work_span) where known."""
    run = _create_run(
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
            **({DESCRIPTION_TAG: description} if description else {}),
        },
    )
    run_id = run.info.run_id
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


# MLflow's runs list opens showing no metric (its default columns are Source, Models and Dataset).
# A saved view (MLflow's "shared view state": an experiment tag its UI reads when the page's URL
# carries `viewStateShareKey=KEY`) opens it on one batch with its headline metrics as the first
# columns. One view per batch, keyed by the batch id.
VIEW_TAG_PREFIX = "mlflow.sharedViewState."


def runs_view_columns(metrics: dict[str, dict[str, float]]) -> list[str]:
    """The runs list's columns for a batch's headline metrics (configuration -> metric -> value):
    each metric once, in the order the stage gives them, its corrected value right after it and
    interval bounds left to the tables (MLflow's column key: metrics.`name`)."""
    names = [
        n for n in dict.fromkeys(n for values in metrics.values() for n in values) if not n.endswith(("_low", "_high"))
    ]
    order = {name: position for position, name in enumerate(n for n in names if not n.endswith("_corrected"))}
    names.sort(key=lambda n: (order.get(n.removesuffix("_corrected"), len(order)), n.endswith("_corrected")))
    return [f"metrics.`{mlflow_key(name)}`" for name in names]


def save_runs_view(mlflow_client, batch: Batch, kind: str, columns: list[str]) -> None:
    """Save (or extend, when a pipeline's second stage logs into the batch) the batch's view of
    the runs list (runs_view_url opens it): its configurations' runs grouped by stage, the
    evaluation stages' groups open, newest first, these columns first. Grouped, because MLflow
    folds child runs under their parent and a shared view cannot unfold them; a group's header
    row shows MLflow's average of its runs, marked "(average)"."""
    key = VIEW_TAG_PREFIX + batch.batch_id
    stored = mlflow_client.get_experiment(batch.experiment_id).tags.get(key)
    earlier = json.loads(stored) if stored else {}
    selected = list(dict.fromkeys([*earlier.get("selectedColumns", []), *columns]))
    state = {
        "searchFilter": f"tags.`{TAG_BATCH}` = '{batch.batch_id}' and tags.`{TAG_ROLE}` = 'configuration'",
        "orderByKey": "attributes.start_time",
        "orderByAsc": False,
        "selectedColumns": selected,
        "columnOrder": selected,
        "groupBy": {"aggregateFunction": "average", "groupByKeys": [{"mode": "tag", "groupByData": TAG_KIND}]},
        # MLflow names a group `tag.KEY.VALUE`; only the groups named here start open.
        "groupsExpanded": {**earlier.get("groupsExpanded", {}), f"tag.{TAG_KIND}.{kind}": True},
    }
    mlflow_client.set_experiment_tag(batch.experiment_id, key, json.dumps(state))


def ui_address(home: Path) -> str:
    """MLflow's UI for this store: the tracking server, or for a local store where the user's
    `mlflow ui` serves it ($RAGASSAY_MLFLOW_UI_URL; by default where ui_command's does)."""
    uri = tracking_uri(home)
    return (uri if uri.startswith(("http://", "https://")) else environment().mlflow_ui_url).rstrip("/")


def runs_view_url(home: Path, batch: Batch) -> str:
    """The batch's view of the runs list (save_runs_view) in MLflow's UI."""
    return f"{ui_address(home)}/#/experiments/{batch.experiment_id}/runs?viewStateShareKey={batch.batch_id}"


def traces_below_url(home: Path, experiment_id: str, run_id: str, assessment: str, below: float = 1) -> str:
    """A run's Traces tab showing only the questions whose `assessment` score is below `below`
    (MLflow's UI reads its filters from the page's `filter` parameter, COLUMN::OPERATOR::VALUE::NAME)."""
    condition = urllib.parse.quote(f"ASSESSMENT::<::{below:g}::{assessment}", safe="")
    return f"{ui_address(home)}/#/experiments/{experiment_id}/runs/{run_id}/traces?filter={condition}"


@dataclass(frozen=True)
class ConfigurationRecord:
    """What one configuration's child run holds: its params, metrics and tables, the traces linked
    to it (evaluation/answer_traces.QuestionTrace: one per question of an answer run), its
    description, when its work began and ended, and the previews MLflow's UI shows of its tables
    (log_tables)."""

    label: str
    params: dict[str, str]
    metrics: dict[str, float]
    tables: dict[str, pl.DataFrame]
    traces: list = field(default_factory=list)
    description: str = ""
    work_span: WorkSpan | None = None
    previews: dict[str, pl.DataFrame] = field(default_factory=dict)


@dataclass(frozen=True)
class BatchRecord:
    """Everything one evaluation logs, decided by the library before MLflow is called: a child run
    per configuration, and on the batch's parent each configuration's headline metrics (as
    `kind/label/metric`), further parent metrics, the batch's tables and its pictures. Any kind
    of configuration logs through this one record."""

    kind: str
    configurations: list[ConfigurationRecord]
    headline: dict[str, dict[str, float]]
    parent_metrics: dict[str, float]
    tables: dict[str, pl.DataFrame]
    figures: dict[str, object]


class LoggedBatch(BaseModel):
    """Where a logged batch is: ids, the experiment, and how to open it."""

    batch_id: str
    experiment: str
    experiment_id: str = ""
    parent_run_id: str
    run_ids: dict[str, str]
    tracking_uri: str
    ui_command: str
    mlflow_url: str | None = None
    # The runs list on this batch with its headline metrics as columns (save_runs_view); None
    # where no view was saved (a stage that logged no configurations' metrics).
    runs_view_url: str | None = None


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
        )
        for c in record.configurations
    }
    for c in record.configurations:
        if c.traces:
            log_traces(home, batch.experiment_id, run_ids[c.label], c.traces)
    if record.parent_metrics:
        log_values(mlflow_client, batch.parent_run_id, {}, record.parent_metrics)
    log_batch_summary(mlflow_client, batch, record.kind, record.headline, record.tables, record.figures)
    save_runs_view(mlflow_client, batch, record.kind, runs_view_columns(record.headline))
    if batch.owned:
        finish(mlflow_client, batch.parent_run_id)
    return locate_batch(home, batch, run_ids).model_copy(update={"runs_view_url": runs_view_url(home, batch)})


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


# Only one thread of a process points MLflow's tracing at a store at a time (its trace export
# follows the process's tracking URI).
_tracing_lock = threading.Lock()


@contextmanager
def _tracing_into(uri: str):
    """MLflow's traces exported to this store while the block runs. MLflow's trace export follows
    its process-wide tracking URI (and `set_tracking_uri` also writes MLFLOW_TRACKING_URI into the
    environment), so both are put back as they were afterwards. The same store is what
    tracking_uri gives meanwhile, so other threads of the run are not led astray."""
    import mlflow
    from mlflow.tracking import is_tracking_uri_set

    environment = os.environ.get("MLFLOW_TRACKING_URI")
    previous = mlflow.get_tracking_uri() if is_tracking_uri_set() else None
    with _tracing_lock:
        mlflow.set_tracking_uri(uri)
        try:
            yield
            mlflow.flush_trace_async_logging()
        finally:
            mlflow.set_tracking_uri(previous)
            if environment is not None:
                os.environ["MLFLOW_TRACKING_URI"] = environment


def log_traces(home: Path, experiment_id: str, run_id: str, traces: list) -> list[str]:
    """Each QuestionTrace (evaluation/answer_traces.py) as an MLflow trace in the experiment,
    linked to the run (its Traces tab lists them), then its scores as feedback assessments.
    Returns the trace ids."""
    _quiet_mlflow()
    from mlflow.entities import AssessmentError, AssessmentSource, Feedback
    from mlflow.tracing.client import TracingClient

    uri = tracking_uri(home)
    mlflow_client = client(home)
    trace_ids = []
    with _tracing_into(uri):
        for trace in traces:
            root = trace.root
            span = mlflow_client.start_trace(
                name=root.name,
                span_type=root.span_type,
                inputs=root.inputs,
                attributes=root.attributes,
                tags=trace.tags,
                experiment_id=experiment_id,
                run_id=run_id,
            )
            for child in root.children:
                _log_span(mlflow_client, span.trace_id, span.span_id, child)
            mlflow_client.end_trace(span.trace_id, outputs=root.outputs)
            trace_ids.append(span.trace_id)
    tracing = TracingClient(uri)
    for trace_id, trace in zip(trace_ids, traces):
        for feedback in trace.feedback:
            tracing.log_assessment(
                trace_id,
                Feedback(
                    name=feedback.name,
                    value=feedback.value,
                    source=AssessmentSource(source_type=feedback.source_type, source_id=feedback.source_id),
                    rationale=feedback.rationale,
                    error=AssessmentError(error_code="NOT_SCORED", error_message=feedback.error)
                    if feedback.error
                    else None,
                ),
            )
    return trace_ids


def find_traces(home: Path, run_id: str, filter_string: str | None = None) -> list:
    """The traces linked to a run (all of them, page by page), with their spans and assessments."""
    from mlflow.tracing.client import TracingClient

    _quiet_mlflow()
    tracing = TracingClient(tracking_uri(home))
    experiment_id = client(home).get_run(run_id).info.experiment_id
    found, token = [], None
    while True:
        page = tracing.search_traces(
            locations=[experiment_id], run_id=run_id, filter_string=filter_string, page_token=token
        )
        found += list(page)
        token = page.token
        if not token:
            return found


def _log_span(mlflow_client, trace_id: str, parent_id: str, record) -> None:
    span = mlflow_client.start_span(
        record.name, trace_id, parent_id, span_type=record.span_type, inputs=record.inputs, attributes=record.attributes
    )
    for child in record.children:
        _log_span(mlflow_client, trace_id, span.span_id, child)
    mlflow_client.end_span(trace_id, span.span_id, outputs=record.outputs)


# The tag MLflow's UI shows as a run's description (Markdown).
DESCRIPTION_TAG = "mlflow.note.content"


def describe_run(home: Path, run_id: str, markdown: str) -> None:
    """A run's description in MLflow's UI, and the same Markdown as its `report.md` artifact."""
    mlflow_client = client(home)
    mlflow_client.set_tag(run_id, DESCRIPTION_TAG, markdown)
    mlflow_client.log_text(run_id, markdown, "report.md")


def mark_failed(home: Path, batch: Batch, stage: str, error: str) -> None:
    """The batch's parent run ends FAILED, tagged with the stage and the error."""
    mlflow_client = client(home)
    mlflow_client.set_tag(batch.parent_run_id, "ragassay.failed_stage", stage)
    mlflow_client.set_tag(batch.parent_run_id, "ragassay.error", error[:5000])
    finish(mlflow_client, batch.parent_run_id, "FAILED")


def run_url(home: Path, batch: Batch, run_id: str | None = None) -> str | None:
    """The run's page in MLflow's UI when the tracking store is a server (None for a local file
    store: `ui_command` says how to open it)."""
    uri = tracking_uri(home)
    if not uri.startswith(("http://", "https://")):
        return None
    return f"{uri.rstrip('/')}/#/experiments/{batch.experiment_id}/runs/{run_id or batch.parent_run_id}"


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


def _create_run(mlflow_client, experiment_id: str, **settings):
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


def find_runs(home: Path, batch_id: str | None = None, collection: str | None = None, role: str | None = None) -> list:
    """ragassay's runs, newest first, optionally of one batch, collection or role."""
    mlflow_client = client(home)
    experiments = [e.experiment_id for e in mlflow_client.search_experiments() if e.name.startswith("ragassay/")]
    if not experiments:
        return []
    filters = [f"tags.`{TAG_KIND}` != ''"]
    if batch_id:
        filters.append(f"tags.`{TAG_BATCH}` = '{_quote(batch_id)}'")
    if role:
        filters.append(f"tags.`{TAG_ROLE}` = '{_quote(role)}'")
    runs = mlflow_client.search_runs(
        experiments, " and ".join(filters), order_by=["attributes.start_time DESC"], max_results=5000
    )
    if collection:
        runs = [r for r in runs if collection in r.data.tags.get(TAG_COLLECTIONS, "").split(",")]
    return list(runs)


def _quote(value: str) -> str:
    return value.replace("'", "")


def download_table(home: Path, run_id: str, name: str) -> pl.DataFrame | None:
    """A table a run logged (its Parquet copy), or None when the run has none of that name."""
    _quiet_mlflow()
    import mlflow.artifacts
    from mlflow.exceptions import MlflowException

    with tempfile.TemporaryDirectory() as folder:
        for artifact_path in (f"{MACHINE}/{name}.parquet", f"{name}.parquet"):
            try:
                path = mlflow.artifacts.download_artifacts(
                    run_id=run_id, artifact_path=artifact_path, dst_path=folder, tracking_uri=tracking_uri(home)
                )
            except (MlflowException, OSError):
                continue
            return pl.read_parquet(path)
        return None


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
) -> str:
    """One calibration run: the judge and labels as params, the agreement figures as metrics,
    every row as a Parquet artifact, and (for support verdicts) a confusion-matrix picture. In the
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
    run = _create_run(
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
    finish(mlflow_client, run_id)
    return run_id


# The per-question table each kind of configuration run keeps, for comparing batches.
PER_QUESTION_TABLES = {"retrieval": "per_question", "answers": "answers"}


def batch_tables(home: Path, batch_id: str) -> dict[str, dict[str, pl.DataFrame]]:
    """The per-question tables of a batch's configuration runs: {kind: {label: table}} (a pipeline
    batch holds both kinds). Empty when there is no such batch."""
    tables: dict[str, dict[str, pl.DataFrame]] = {}
    for run in find_runs(home, batch_id=batch_id, role="configuration"):
        kind, label = run.data.tags.get(TAG_KIND), run.data.tags.get(TAG_LABEL)
        if kind in PER_QUESTION_TABLES and label not in tables.get(kind, {}):
            table = download_table(home, run.info.run_id, PER_QUESTION_TABLES[kind])
            if table is None:
                _check_artifacts_present(run, batch_id)
                continue
            tables.setdefault(kind, {})[label] = table
    return tables


def _check_artifacts_present(run, batch_id: str) -> None:
    """RagassayError naming the folder when a run's artifacts are kept locally and the folder is
    gone (mlartifacts/ deleted or moved): its tables are missing, which is not a batch without
    results."""
    uri = run.info.artifact_uri or ""
    if not uri.startswith("file:"):
        return
    folder = Path(urllib.parse.unquote(urllib.parse.urlparse(uri).path))
    if not folder.exists():
        raise RagassayError(
            f"batch {batch_id}'s run {run.data.tags.get(TAG_KIND)}/{run.data.tags.get(TAG_LABEL)} ({run.info.run_id}) "
            f"keeps its tables in {folder}, which does not exist: restore that folder (mlartifacts/ of the "
            "workspace), or run the batch again"
        )


def answer_configuration_runs(home: Path, batch_id: str) -> list[dict]:
    """Each answer configuration run of a batch, in the order they were logged: its label, params
    and its answers and judgments tables (None when the run lacks one; RagassayError naming the
    folder when its artifacts folder is gone)."""
    runs = []
    for run in reversed(find_runs(home, batch_id=batch_id, role="configuration")):
        if run.data.tags.get(TAG_KIND) != "answers":
            continue
        answers = download_table(home, run.info.run_id, "answers")
        judgments = download_table(home, run.info.run_id, "judgments")
        if answers is None and judgments is None:
            _check_artifacts_present(run, batch_id)
        runs.append(
            {
                "label": run.data.tags.get(TAG_LABEL),
                "params": dict(run.data.params),
                "answers": answers,
                "judgments": judgments,
            }
        )
    return runs


def batch_parent_table(home: Path, batch_id: str, name: str) -> pl.DataFrame | None:
    """A table logged on a batch's parent run (an answer evaluation inside a pipeline prefixes its
    tables with `answers/`); None when the batch has no such table."""
    for run in find_runs(home, batch_id=batch_id, role="batch"):
        for candidate in (name, f"answers/{name}"):
            table = download_table(home, run.info.run_id, candidate)
            if table is not None:
                return table
    return None


def latest_batch(home: Path, collections: str, excluding: str) -> str | None:
    """The newest batch over the same collections, other than `excluding` (the default candidate)."""
    for run in find_runs(home, role="batch"):
        batch = run.data.tags.get(TAG_BATCH)
        if (
            batch != excluding
            and run.data.tags.get(TAG_COLLECTIONS) == collections
            and run.data.tags.get(TAG_KIND) in ("retrieval", "answers", "pipeline")
        ):
            return batch
    return None


def batch_collections(home: Path, batch_id: str) -> str | None:
    runs = find_runs(home, batch_id=batch_id, role="batch")
    return runs[0].data.tags.get(TAG_COLLECTIONS) if runs else None
