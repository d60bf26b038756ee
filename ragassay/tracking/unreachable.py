"""A tracking server that goes away: its failure told as one typed error naming the server, and
a batch it could not take kept in the workspace instead.

MLflow's client retries a request 7 times over about four minutes, each up to 120 s, and then
raises a bare MlflowException; an evaluation whose server died while it judged waited for minutes
and then lost the results it had computed. The waits are now seconds (client.BOUNDED_MLFLOW_WAITS;
the environment may set MLflow's own variables to wait longer), the error is TrackingUnreachable,
and the batch's record is written under `<workspace>/unlogged/<batch>/<stage>/` (its tables as
Parquet, its params, metrics and assertions as JSON, its report as Markdown) for the command to
print and point at. Rerunning the same command once the server is back logs the batch: answers,
verdicts and systems' replies come from the workspace's completion cache, so nothing is asked
again."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ragassay.errors import RagassayError
from ragassay.tracking.client import experiment_name, tracking_uri, ui_command
from ragassay.tracking.records import Batch, BatchRecord, LoggedBatch, new_batch_id

UNLOGGED_FOLDER = "unlogged"


class TrackingUnreachable(RagassayError):
    """The MLflow tracking server did not answer (refused, timed out, or failing on its side
    through every retry); the message names it."""


def unreachable_cause(error: BaseException) -> str | None:
    """How the tracking server did not answer, in a few words ("Connection refused", "timed out
    after 30 s", "kept failing on its side"), when error (or what it arose from) is that: a refused
    or reset connection, a timeout, or retries spent on its 5xx replies; else None. MLflow raises
    these as an MlflowException made while handling requests' own error, so the chain is walked."""
    import requests

    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        # Retries spent on timeouts end as a ConnectionError that names them.
        if isinstance(current, requests.exceptions.Timeout) or "timed out" in str(current):
            return f"timed out after {os.environ.get('MLFLOW_HTTP_REQUEST_TIMEOUT', '120')} s"
        if isinstance(current, requests.exceptions.RetryError):
            return "kept failing on its side through every retry"
        if isinstance(current, requests.exceptions.ConnectionError):
            said = re.search(r"\[Errno -?\d+\] ([^'\")\]]+)", str(current))
            return said.group(1).strip() if said else "the connection failed"
        current = current.__cause__ or current.__context__
    return None


@contextmanager
def unreachable_as_typed(home: Path) -> Iterator[None]:
    """Within it, the tracking server not answering is TrackingUnreachable naming the server."""
    try:
        yield
    except TrackingUnreachable:
        raise
    except Exception as error:
        cause = unreachable_cause(error)
        if cause is None:
            raise
        from ragassay.redaction import redact

        raise TrackingUnreachable(
            f"the MLflow tracking server {redact(tracking_uri(home))} did not answer "
            f"({cause}; MLflow tried {os.environ.get('MLFLOW_HTTP_REQUEST_MAX_RETRIES', '7')} more times)"
        ) from error


def keep_unlogged(
    home: Path, collections: list[str], record: BatchRecord, batch: Batch | None, reason: str
) -> LoggedBatch:
    """What could not be logged, written under `<home>/unlogged/<batch>/<kind>/`: each configuration's
    params, metrics and verdict in `<label>.json` and its tables as `<label>/<table>.parquet`, the
    batch's own tables, headline and assertions in `batch.json` and `batch/`. Where the batch is
    (not in MLflow), with why."""
    batch_id = batch.batch_id if batch is not None else new_batch_id()
    folder = unlogged_folder(home, batch_id) / record.kind
    folder.mkdir(parents=True, exist_ok=True)
    for index, configuration in enumerate(record.configurations):
        # A label is the user's text: the file is named by its position, the label kept inside.
        name = f"configuration-{index + 1}"
        _write_tables(folder / name, configuration.tables)
        _write_json(
            folder / f"{name}.json",
            {
                "label": configuration.label,
                "params": configuration.params,
                "metrics": configuration.metrics,
                "verdict": configuration.verdict,
            },
        )
    _write_tables(folder / "batch", record.tables)
    _write_json(
        folder / "batch.json",
        {
            "kind": record.kind,
            "batch_id": batch_id,
            "headline": record.headline,
            "parent_metrics": record.parent_metrics,
            "verdict": record.verdict,
            "assertions": record.assertions,
            "not_logged": reason,
        },
    )
    return LoggedBatch(
        batch_id=batch_id,
        experiment=experiment_name(collections),
        experiment_id=batch.experiment_id if batch is not None else "",
        parent_run_id="",
        run_ids={},
        tracking_uri=tracking_uri(home),
        ui_command=ui_command(home),
        not_logged=reason,
        kept_in=str(folder),
    )


def unlogged_folder(home: Path, batch_id: str) -> Path:
    """Where a batch its tracking server did not take is kept: a folder per batch, a folder per
    stage in it (a pipeline's stages share its batch)."""
    return home / UNLOGGED_FOLDER / batch_id


def keep_report(kept_in: str, markdown: str) -> None:
    """The batch's Markdown report beside what keep_unlogged wrote."""
    Path(kept_in).mkdir(parents=True, exist_ok=True)
    (Path(kept_in) / "report.md").write_text(markdown, encoding="utf-8")


def _write_tables(folder: Path, tables: dict) -> None:
    if not tables:
        return
    folder.mkdir(parents=True, exist_ok=True)
    for index, (name, table) in enumerate(tables.items()):
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in name) or f"table-{index + 1}"
        table.write_parquet(folder / f"{safe}.parquet")


def _write_json(path: Path, payload: dict) -> None:
    path.write_text(json.dumps(payload, indent=2, default=str), encoding="utf-8")
