"""A tracking store that does not take a batch (a server gone, a server refusing the credentials,
an SQLite database another process keeps locked, an artifact folder that cannot be written): its
failure told as one typed error naming the store and its own reason, and the batch kept in the
workspace instead.

MLflow's client retries a request 7 times over about four minutes, each up to 120 s, and then
raises a bare MlflowException; an evaluation whose server died while it judged waited for minutes
and then lost the results it had computed. The waits are now seconds (client.BOUNDED_MLFLOW_WAITS;
the environment may set MLflow's own variables to wait longer), the error is TrackingStoreFailed
(TrackingUnreachable when the store did not answer), and the batch's record is written under
`<workspace>/unlogged/<batch>/<stage>/` (its tables as Parquet, its params, metrics and
assertions as JSON, its report as Markdown) for the command to print and point at. The runs the
batch had opened are ended FAILED where the store still lets them be; those it does not are
listed in the kept folder (`unended_runs.json`) and ended by the next batch opened in the
workspace (end_runs_left_running). Rerunning the same command once the store takes writes again
logs the batch: answers, verdicts and systems' replies come from the workspace's completion
cache, so nothing is asked again."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ragassay.errors import RagassayError, environment_problem
from ragassay.tracking.client import experiment_name, tracking_uri, ui_command
from ragassay.tracking.records import Batch, BatchRecord, LoggedBatch, new_batch_id

UNLOGGED_FOLDER = "unlogged"


class TrackingStoreFailed(RagassayError):
    """The MLflow tracking store did not take what was logged (it did not answer, refused the
    request, was locked, or could not write an artifact); the message names it and its reason."""


class TrackingUnreachable(TrackingStoreFailed):
    """The MLflow tracking server did not answer (refused, timed out, or failing on its side
    through every retry); the message names it."""


# How MLflow and SQLite say a store refused a write, as a reason a person reads.
_REFUSALS = (
    (re.compile(r"database is locked", re.I), "its SQLite database is locked by another process"),
    (re.compile(r"\b(401|Unauthorized|UNAUTHENTICATED)\b"), "it refused the credentials (401 Unauthorized)"),
    (re.compile(r"\b(403|Forbidden|PERMISSION_DENIED)\b"), "it refused the request (403 Forbidden)"),
)


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


def refusal_cause(error: BaseException) -> str | None:
    """How the tracking store refused a write, in a few words with its own message, when error (or
    what it arose from) is MLflow's or SQLite's refusal (a locked database, 401, 403) or the
    environment's (an artifact folder that cannot be written, a read-only or full disk); else
    None (a bug is not the store's doing)."""
    from mlflow.exceptions import MlflowException

    problem = environment_problem(error)
    if problem is not None:
        return problem
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        text = " ".join(str(current).split())
        for pattern, reason in _REFUSALS:
            if pattern.search(text):
                return f"{reason}: {text[:300]}"
        if isinstance(current, MlflowException):
            return f"MLflow refused it: {text[:300]}"
        current = current.__cause__ or current.__context__
    return None


@contextmanager
def store_failures_as_typed(home: Path, doing: str = "take the batch") -> Iterator[None]:
    """Within it, the tracking store not answering is TrackingUnreachable naming it, and refusing a
    request (a locked database, 401, 403, an artifact folder it cannot write) TrackingStoreFailed
    with its own reason (`doing`: what it did not do, for the message); credentials in either are
    masked."""
    try:
        yield
    except TrackingStoreFailed:
        raise
    except Exception as error:
        from ragassay.redaction import redact

        cause = unreachable_cause(error)
        if cause is not None:
            raise TrackingUnreachable(
                f"the MLflow tracking server {redact(tracking_uri(home))} did not answer "
                f"({cause}; MLflow tried {os.environ.get('MLFLOW_HTTP_REQUEST_MAX_RETRIES', '7')} more times)"
            ) from None  # the cause is in the message, masked; MLflow's own text may echo credentials
        refused = refusal_cause(error)
        if refused is None:
            raise
        raise TrackingStoreFailed(
            redact(f"the MLflow tracking store {tracking_uri(home)} did not {doing}: {refused}")
        ) from None


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


UNENDED_RUNS = "unended_runs.json"


def end_failed_batch(home: Path, kept_in: str, reason: str) -> None:
    """The runs this process opened and did not end, ended FAILED with why (no batch stays RUNNING);
    those the store does not let end now are listed in the kept folder for the next batch to end."""
    from ragassay.tracking.lifecycle import end_unfinished_runs

    left = end_unfinished_runs(f"not logged: {reason}"[:5000], "FAILED", keep_failed=True)
    if left:
        (Path(kept_in) / UNENDED_RUNS).write_text(json.dumps(left), encoding="utf-8")


def end_runs_left_running(home: Path, mlflow_client) -> list[str]:
    """The runs earlier batches could not end when their store refused them (UNENDED_RUNS in
    `unlogged/`), ended FAILED now; each list removed once its runs are ended (or gone). The ids ended."""
    ended = []
    for listed in sorted((home / UNLOGGED_FOLDER).glob(f"*/*/{UNENDED_RUNS}")):
        try:
            run_ids = json.loads(listed.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        for run_id in run_ids:
            try:
                if mlflow_client.get_run(run_id).info.status == "RUNNING":
                    mlflow_client.set_terminated(run_id, "FAILED")
                    ended.append(run_id)
            except Exception:  # a run the store lost or still refuses: left for the next batch
                return ended
        listed.unlink(missing_ok=True)
    return ended


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
