"""The tracking store and its experiments: which store (`$MLFLOW_TRACKING_URI` when set, else the
workspace's SQLite `mlflow.db` with artifacts under `mlartifacts/`), MLflow's client made quiet, one
experiment per collection set (moved back into the workspace after the workspace moved)."""

from __future__ import annotations

import logging
import os
import re
import shlex
import urllib.parse
from functools import cache
from pathlib import Path


def tracking_uri(home: Path) -> str:
    return os.environ.get("MLFLOW_TRACKING_URI") or local_store_uri(home)


def local_store_uri(home: Path) -> str:
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


# MLflow's request bounds as ragassay sets them (unless the environment already does): three
# retries over about 7 s (urllib3's backoff 0, 2, 4 s with MLflow's jitter of up to 1 s), each
# request at most 30 s. A server restarting within that is not noticed; a dead one costs seconds.
BOUNDED_MLFLOW_WAITS = {
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "3",
    "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
    "MLFLOW_HTTP_REQUEST_TIMEOUT": "30",
}


@cache
def quiet_mlflow() -> None:
    """MLflow's settings for ragassay, made once per process before MLflow is first used."""
    # MLflow prints "View run ... at: URL" on stdout when it talks to a tracking server, which
    # would break `--json` output; ragassay prints its own links.
    os.environ["MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT"] = "true"
    # Offline and quiet: no usage telemetry (MLflow would also write ~/.config/mlflow/telemetry.json).
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
    # A progress bar per small Parquet file is noise on the terminal of `ragassay runs`.
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
    # A tracking server that went away costs seconds, not MLflow's four minutes a request
    # (tracking/unreachable.py says what happens then).
    for name, value in BOUNDED_MLFLOW_WAITS.items():
        os.environ.setdefault(name, value)
    # Its INFO lines (database migrations on first use) are not the user's business. Set after
    # MLflow is imported: its import configures its logger at INFO.
    import mlflow  # noqa: F401

    logging.getLogger("mlflow").setLevel(logging.WARNING)


def client(home: Path):
    quiet_mlflow()
    from mlflow.tracking import MlflowClient

    home.mkdir(parents=True, exist_ok=True)
    uri = tracking_uri(home)
    if uri != local_store_uri(home):
        return MlflowClient(tracking_uri=uri)
    # MLflow creates (or migrates) a SQLite store's tables when a process first opens it; commands
    # starting at once on a new workspace raced on that ("table ... already exists") and lived
    # only through retries. One at a time; once open, the store is MLflow's cached one.
    from ragassay.store.locks import collection_lock

    with collection_lock(home / "locks" / "mlflow-store.lock", name="the workspace's MLflow store"):
        return MlflowClient(tracking_uri=uri)


def experiment_name(collections: list[str]) -> str:
    return "ragassay/" + "+".join(sorted(collections))


def ensure_experiment(mlflow_client, home: Path, collections: list[str]) -> str:
    return ensure_named_experiment(mlflow_client, home, experiment_name(collections))


def ensure_named_experiment(mlflow_client, home: Path, name: str) -> str:
    local = tracking_uri(home) == local_store_uri(home)
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
