"""MLflow at the edge: one experiment per collection set, one parent run per batch, one child run
per configuration. Runs are tagged so `ragassay runs` can find them again.

Tracking store: $MLFLOW_TRACKING_URI when set, else a SQLite database in the workspace
(`mlflow.db`) with artifacts under `mlartifacts/`.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import time
from pathlib import Path

import polars as pl

from ragassay.metrics.names import mlflow_key

TAG_BATCH = "ragassay.batch_id"
TAG_KIND = "ragassay.kind"
TAG_COLLECTIONS = "ragassay.collections"
TAG_LABEL = "ragassay.configuration"
TAG_ROLE = "ragassay.role"  # batch (parent) or configuration (child)
MLFLOW_PARENT = "mlflow.parentRunId"


def tracking_uri(home: Path) -> str:
    return os.environ.get("MLFLOW_TRACKING_URI") or f"sqlite:///{home / 'mlflow.db'}"


def ui_command(home: Path) -> str:
    """The command that opens these runs in MLflow's UI."""
    uri = tracking_uri(home)
    if uri.startswith("sqlite:///"):
        return f"mlflow ui --backend-store-uri {uri} --default-artifact-root {(home / 'mlartifacts').as_uri()}"
    return f"open {uri} in a browser"


def client(home: Path):
    from mlflow.tracking import MlflowClient

    home.mkdir(parents=True, exist_ok=True)
    return MlflowClient(tracking_uri=tracking_uri(home))


def experiment_name(collections: list[str]) -> str:
    return "ragassay/" + "+".join(sorted(collections))


def ensure_experiment(mlflow_client, home: Path, collections: list[str]) -> str:
    return ensure_named_experiment(mlflow_client, home, experiment_name(collections))


def ensure_named_experiment(mlflow_client, home: Path, name: str) -> str:
    experiment = mlflow_client.get_experiment_by_name(name)
    if experiment is not None:
        return experiment.experiment_id
    artifact_location = None
    if tracking_uri(home).startswith("sqlite:///"):
        folder = re.sub(r"[^A-Za-z0-9_.+-]", "_", name)
        artifact_location = (home / "mlartifacts" / folder).as_uri()
    return mlflow_client.create_experiment(name, artifact_location=artifact_location)


def flatten_params(value: object, prefix: str = "") -> dict[str, str]:
    """Nested dicts and lists as dotted MLflow params (`config.fusion.k` -> '60')."""
    if isinstance(value, dict):
        flat: dict[str, str] = {}
        for key, inner in value.items():
            flat.update(flatten_params(inner, f"{prefix}.{key}" if prefix else str(key)))
        return flat
    if isinstance(value, (list, tuple)):
        return {prefix: json.dumps(list(value), default=str)}
    return {prefix: "" if value is None else str(value)}


def start_batch(mlflow_client, experiment_id: str, batch_id: str, kind: str, collections: list[str], params: dict[str, str]) -> str:
    """The parent run of a batch."""
    from mlflow.entities import Param

    run = mlflow_client.create_run(
        experiment_id,
        run_name=f"{kind}-{batch_id}",
        tags={TAG_BATCH: batch_id, TAG_KIND: kind, TAG_COLLECTIONS: ",".join(collections), TAG_ROLE: "batch"},
    )
    if params:
        mlflow_client.log_batch(run.info.run_id, params=[Param(k, v) for k, v in params.items()])
    return run.info.run_id


def log_configuration_run(
    mlflow_client,
    experiment_id: str,
    parent_run_id: str,
    batch_id: str,
    kind: str,
    collections: list[str],
    label: str,
    params: dict[str, str],
    metrics: dict[str, float],
    artifacts: dict[str, pl.DataFrame],
) -> str:
    """A child run: params, metrics (MLflow-safe names) and Parquet artifacts of one configuration."""
    run = mlflow_client.create_run(
        experiment_id,
        run_name=label,
        tags={
            TAG_BATCH: batch_id,
            TAG_KIND: kind,
            TAG_COLLECTIONS: ",".join(collections),
            TAG_LABEL: label,
            TAG_ROLE: "configuration",
            MLFLOW_PARENT: parent_run_id,
        },
    )
    run_id = run.info.run_id
    log_values(mlflow_client, run_id, params, metrics)
    log_tables(mlflow_client, run_id, artifacts)
    mlflow_client.set_terminated(run_id, "FINISHED")
    return run_id


def log_values(mlflow_client, run_id: str, params: dict[str, str], metrics: dict[str, float]) -> None:
    from mlflow.entities import Metric, Param

    now = int(time.time() * 1000)
    mlflow_client.log_batch(
        run_id,
        params=[Param(k, v) for k, v in params.items()],
        metrics=[Metric(mlflow_key(k), float(v), now, 0) for k, v in metrics.items()],
    )


def log_tables(mlflow_client, run_id: str, tables: dict[str, pl.DataFrame]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        for name, table in tables.items():
            path = Path(folder) / f"{name}.parquet"
            table.write_parquet(path)
            mlflow_client.log_artifact(run_id, str(path))


def finish(mlflow_client, run_id: str, status: str = "FINISHED") -> None:
    mlflow_client.set_terminated(run_id, status)


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
    runs = mlflow_client.search_runs(experiments, " and ".join(filters), order_by=["attributes.start_time DESC"], max_results=5000)
    if collection:
        runs = [r for r in runs if collection in r.data.tags.get(TAG_COLLECTIONS, "").split(",")]
    return list(runs)


def _quote(value: str) -> str:
    return value.replace("'", "")


def download_table(home: Path, run_id: str, name: str) -> pl.DataFrame | None:
    """A Parquet artifact of a run, or None when the run has none of that name."""
    # A progress bar per small Parquet file is noise on the terminal of `ragassay runs`.
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
    import mlflow.artifacts
    from mlflow.exceptions import MlflowException

    with tempfile.TemporaryDirectory() as folder:
        try:
            path = mlflow.artifacts.download_artifacts(
                run_id=run_id, artifact_path=f"{name}.parquet", dst_path=folder, tracking_uri=tracking_uri(home)
            )
        except (MlflowException, OSError):
            return None
        return pl.read_parquet(path)


CALIBRATION_EXPERIMENT = "ragassay/judge-calibration"


def log_calibration(home: Path, kind: str, params: dict[str, str], metrics: dict[str, float], rows: pl.DataFrame, confusion: dict[str, int] | None) -> str:
    """One run in the judge-calibration experiment: the judge and labels as params, the agreement
    figures as metrics, every row as a Parquet artifact, and (for support verdicts) a
    confusion-matrix picture."""
    mlflow_client = client(home)
    experiment_id = ensure_named_experiment(mlflow_client, home, CALIBRATION_EXPERIMENT)
    run = mlflow_client.create_run(experiment_id, run_name=f"{kind}-{params.get('judge_model', '')}", tags={TAG_KIND: kind, TAG_ROLE: "calibration"})
    run_id = run.info.run_id
    log_values(mlflow_client, run_id, params, {k: v for k, v in metrics.items() if v is not None})
    log_tables(mlflow_client, run_id, {"rows": rows})
    if confusion is not None:
        mlflow_client.log_figure(run_id, _confusion_figure(confusion, params.get("judge_model", "")), "confusion_matrix.png")
    mlflow_client.set_terminated(run_id, "FINISHED")
    return run_id


def _confusion_figure(confusion: dict[str, int], title: str):
    import matplotlib

    matplotlib.use("Agg")  # no display: the picture only goes to a file
    from matplotlib.figure import Figure

    classes = ("supported", "unsupported")
    counts = [[confusion[f"{label}_judged_{verdict}"] for verdict in classes] for label in classes]
    figure = Figure(figsize=(4.2, 3.6))
    axes = figure.subplots()
    axes.imshow(counts, cmap="Blues")
    for row, line in enumerate(counts):
        for column, count in enumerate(line):
            axes.text(column, row, str(count), ha="center", va="center", fontsize=14)
    axes.set_xticks([0, 1], [f"judged {c}" for c in classes])
    axes.set_yticks([0, 1], [f"labelled {c}" for c in classes])
    axes.set_title(title, fontsize=9)
    figure.tight_layout()
    return figure
