"""The tracking store and its experiments: which store (`$MLFLOW_TRACKING_URI` when set, else the
workspace's SQLite `mlflow.db` with artifacts under `mlartifacts/`), MLflow's client made quiet, one
experiment per collection set (moved back into the workspace after the workspace moved).

A new workspace's store is copied from an empty store migrated once at set-up. MLflow creates a
SQLite store by running every one of its schema migrations (alembic, about 60 steps): 1 to 2 s on
the reference machine, paid by the first command of every new workspace and by every test that
makes one. The set-up command migrates one empty store per MLflow version into the environment
(`<sys.prefix>/share/ragassay/mlflow-<version>.db`, `write_store_template`), and a new workspace's
store starts as a copy of it (tens of milliseconds). The copy is the store MLflow would have made,
less its Default experiment: MLflow records that experiment's artifact folder under the directory
it was created in, so the template keeps no experiment, and MLflow adds the Default experiment on
first open, where it would have. MLflow checks the copy's schema revision on every open
(`_verify_schema`), as it does any store's; a template is named by the MLflow version that wrote
it, so an upgraded MLflow finds none and migrates as before. Without a template (ragassay
installed without the set-up command) nothing changes.
"""

from __future__ import annotations

import logging
import os
import re
import shlex
import sqlite3
import sys
import tempfile
import urllib.parse
from functools import cache
from importlib.metadata import version
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
    # only through retries. One at a time; once open, the store is MLflow's cached one. A new
    # store starts as a copy of the one set-up migrated (write_store_template), not migrated again.
    from ragassay.store.locks import collection_lock

    with collection_lock(home / "locks" / "mlflow-store.lock", name="the workspace's MLflow store"):
        seed_new_store(home / "mlflow.db")
        return MlflowClient(tracking_uri=uri)


def store_template_path() -> Path:
    """Where this environment keeps the empty store of the installed MLflow version."""
    return Path(sys.prefix) / "share" / "ragassay" / f"mlflow-{version('mlflow')}.db"


def write_store_template() -> Path:
    """Migrate an empty store with the installed MLflow and keep it as the template (once: an
    existing template is left as it is). Returns its path."""
    target = store_template_path()
    if target.exists():
        return target
    quiet_mlflow()
    from mlflow.tracking import MlflowClient

    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as folder:
        database = Path(folder) / "mlflow.db"
        # Any call makes MLflow create and migrate the store; the artifact root is never written.
        MlflowClient(tracking_uri=f"sqlite:///{database}").search_experiments()
        with sqlite3.connect(database) as store:
            store.execute("DELETE FROM experiment_tags")
            store.execute("DELETE FROM experiments")
        with sqlite3.connect(database) as store:
            store.execute("VACUUM")
        os.replace(database, target)  # whole or not at all: a reader never sees half a template
    return target


def seed_new_store(database: Path) -> bool:
    """Start a store that does not exist yet as a copy of the template; False (and nothing done)
    when the store exists or there is no template. The caller holds the store's lock."""
    from ragassay.store.tables import copy_if_absent

    return copy_if_absent(store_template_path(), database)


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
