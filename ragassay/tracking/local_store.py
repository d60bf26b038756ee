"""The workspace's own tracking store read without MLflow: its SQLite file opened read-only with
the standard library, so a look-up (`runs list`, `runs show`, the estimate's rates) answers in
milliseconds where importing MLflow and opening its store takes seconds.

Only reads, and only the five tables MLflow's SQLite store has kept the same since 1.x
(`experiments`, `runs`, `tags`, `params`, `latest_metrics`); everything ragassay writes goes
through MLflow (write.py). A store elsewhere ($MLFLOW_TRACKING_URI) is read through MLflow's
client as before (read.py). What MLflow's search returns is what this returns, run for run: the
same runs (active, in active experiments named `ragassay/...`, with a kind tag), in the same order
(newest start first, then by id), with the same tags, params and latest metrics
(tests/test_tracking.py compares the two on a real store).
"""

from __future__ import annotations

import math
import sqlite3
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path

# How long a read waits for a writer holding the database (another command logging a batch).
BUSY_SECONDS = 10.0


@dataclass(frozen=True)
class StoredRunInfo:
    """The fields of MLflow's RunInfo that ragassay reads."""

    run_id: str
    run_name: str
    experiment_id: str
    user_id: str
    lifecycle_stage: str
    status: str
    start_time: int  # milliseconds since the epoch, as MLflow keeps it
    end_time: int | None
    artifact_uri: str


@dataclass(frozen=True)
class StoredRunData:
    tags: dict[str, str] = field(default_factory=dict)
    params: dict[str, str] = field(default_factory=dict)
    metrics: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class StoredRun:
    """One run as MLflow's client gives it (`run.info`, `run.data`), read from the file."""

    info: StoredRunInfo
    data: StoredRunData


def store_file(tracking_uri: str) -> Path | None:
    """The SQLite file of a `sqlite:///` tracking URI (percent-decoded, as SQLAlchemy reads it)."""
    if not tracking_uri.startswith("sqlite:///"):
        return None
    return Path(urllib.parse.unquote(tracking_uri.removeprefix("sqlite:///")))


def _connect(path: Path) -> sqlite3.Connection:
    connection = sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro", uri=True, timeout=BUSY_SECONDS)
    connection.row_factory = sqlite3.Row
    return connection


def stored_runs(path: Path, tags: dict[str, str] | None = None, run_id: str | None = None) -> list[StoredRun]:
    """ragassay's runs in the store at `path`, newest first: active runs of active `ragassay/...`
    experiments with a non-empty kind tag, each of the `tags` given equal to its value (or the one
    run `run_id`, whatever its experiment). No file: no runs (nothing is created)."""

    if not path.is_file():
        return []
    try:
        return _read_runs(path, tags, run_id)
    except sqlite3.OperationalError as error:
        if "no such table" in str(error):  # a store MLflow created and has not set up yet: no runs
            return []
        raise


def _read_runs(path: Path, tags: dict[str, str] | None, run_id: str | None) -> list[StoredRun]:
    from ragassay.tracking.tags import TAG_KIND

    with _connect(path) as connection:
        if run_id is not None:
            rows = connection.execute(
                "SELECT * FROM runs WHERE run_uuid = ? AND lifecycle_stage = 'active'", (run_id,)
            ).fetchall()
        else:
            wanted = {TAG_KIND: None, **(tags or {})}
            conditions = " ".join(
                "AND EXISTS (SELECT 1 FROM tags t WHERE t.run_uuid = r.run_uuid AND t.key = ? AND "
                + ("t.value != ''" if value is None else "t.value = ?")
                + ")"
                for value in wanted.values()
            )
            values = [part for key, value in wanted.items() for part in ((key,) if value is None else (key, value))]
            rows = connection.execute(
                "SELECT r.* FROM runs r JOIN experiments e ON e.experiment_id = r.experiment_id "
                "WHERE r.lifecycle_stage = 'active' AND e.lifecycle_stage = 'active' "
                f"AND e.name LIKE 'ragassay/%' {conditions} ORDER BY r.start_time DESC, r.run_uuid",
                values,
            ).fetchall()
        return [_run(connection, row) for row in rows]


def _run(connection: sqlite3.Connection, row: sqlite3.Row) -> StoredRun:
    run_id = row["run_uuid"]
    tags = dict(connection.execute("SELECT key, value FROM tags WHERE run_uuid = ?", (run_id,)).fetchall())
    params = dict(connection.execute("SELECT key, value FROM params WHERE run_uuid = ?", (run_id,)).fetchall())
    metrics = {
        key: math.nan if is_nan else value
        for key, value, is_nan in connection.execute(
            "SELECT key, value, is_nan FROM latest_metrics WHERE run_uuid = ?", (run_id,)
        ).fetchall()
    }
    info = StoredRunInfo(
        run_id,
        row["name"],
        str(row["experiment_id"]),
        row["user_id"],
        row["lifecycle_stage"],
        row["status"],
        row["start_time"],
        row["end_time"],
        row["artifact_uri"],
    )
    return StoredRun(info, StoredRunData(tags, params, metrics))
