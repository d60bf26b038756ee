"""Reading back what was logged: ragassay's runs by batch, collection or role, a run's tables, a
batch's per-question tables and answer configurations, the newest comparable batch."""

from __future__ import annotations

import tempfile
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ragassay.errors import RagassayError
from ragassay.tracking.client import client, quiet_mlflow, tracking_uri
from ragassay.tracking.local_store import store_file, stored_runs

if TYPE_CHECKING:
    import polars as pl

from ragassay.tracking.tags import (
    MACHINE,
    TAG_BATCH,
    TAG_COLLECTIONS,
    TAG_FAILED_STAGE,
    TAG_KIND,
    TAG_LABEL,
    TAG_ROLE,
    TAG_VERDICT,
    VERDICT_FAILED,
)


def find_runs(home: Path, batch_id: str | None = None, collection: str | None = None, role: str | None = None) -> list:
    """ragassay's runs, newest first, optionally of one batch, collection or role: read from the
    workspace's own store file without MLflow (local_store.py) where that is the store."""
    path = store_file(tracking_uri(home))
    if path is not None:
        home.mkdir(parents=True, exist_ok=True)  # a workspace path that is a file fails here, as MLflow's would
        wanted = {key: value for key, value in ((TAG_BATCH, batch_id), (TAG_ROLE, role)) if value}
        runs = stored_runs(path, wanted)
        return [r for r in runs if not collection or collection in r.data.tags.get(TAG_COLLECTIONS, "").split(",")]
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


def get_run(home: Path, run_id: str):
    """One run by id (any experiment), or None when the store has no such run."""
    path = store_file(tracking_uri(home))
    if path is not None:
        home.mkdir(parents=True, exist_ok=True)
        found = stored_runs(path, run_id=run_id)
        return found[0] if found else None
    from mlflow.exceptions import MlflowException

    try:
        return client(home).get_run(run_id)
    except MlflowException:
        return None


def _quote(value: str) -> str:
    return value.replace("'", "")


def download_table(home: Path, run_id: str, name: str) -> pl.DataFrame | None:
    """A table a run logged (its Parquet copy), or None when the run has none of that name."""
    import polars as pl

    quiet_mlflow()
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


@dataclass(frozen=True)
class AnswerConfigurationRun:
    """One answer configuration run of a batch read back: its label, its answers and judgments
    tables (None when the run lacks one), and the judge it was scored with, parsed from the run's
    params (judge model id, support prompt version, support threshold: NaN where not logged)."""

    label: str
    answers: pl.DataFrame | None
    judgments: pl.DataFrame | None
    judge_model: str
    prompt_version: str
    support_threshold: float


def answer_configuration_runs(home: Path, batch_id: str) -> list[AnswerConfigurationRun]:
    """Each answer configuration run of a batch, in the order they were logged (RagassayError
    naming the folder when its artifacts folder is gone)."""
    runs = []
    for run in reversed(find_runs(home, batch_id=batch_id, role="configuration")):
        if run.data.tags.get(TAG_KIND) != "answers":
            continue
        answers = download_table(home, run.info.run_id, "answers")
        judgments = download_table(home, run.info.run_id, "judgments")
        if answers is None and judgments is None:
            _check_artifacts_present(run, batch_id)
        params = run.data.params
        runs.append(
            AnswerConfigurationRun(
                label=run.data.tags.get(TAG_LABEL, ""),
                answers=answers,
                judgments=judgments,
                judge_model=params.get("judge_model_id", ""),
                # Before judge_verdict_version was logged, the support prompt's version named it.
                prompt_version=params.get("judge_verdict_version") or params.get("prompt_version.support", ""),
                support_threshold=float(params.get("judge_support_threshold", "nan")),
            )
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
    """The newest finished batch over the same collections, other than `excluding` (the default
    candidate). One still RUNNING (its process killed while it logged) or FAILED in a stage is never
    chosen: its tables may be half there. One FAILED on its assertions alone is whole, and chosen."""
    for run in find_runs(home, role="batch"):
        batch = run.data.tags.get(TAG_BATCH)
        whole = run.info.status == "FINISHED" or (
            run.info.status == "FAILED"
            and run.data.tags.get(TAG_VERDICT) == VERDICT_FAILED
            and TAG_FAILED_STAGE not in run.data.tags
        )
        if (
            batch != excluding
            and whole
            and run.data.tags.get(TAG_COLLECTIONS) == collections
            and run.data.tags.get(TAG_KIND) in ("retrieval", "answers", "pipeline")
        ):
            return batch
    return None


def batch_status(home: Path, batch_id: str) -> str | None:
    """A batch's parent run's MLflow status (FINISHED, RUNNING, FAILED, KILLED); None when unknown."""
    runs = find_runs(home, batch_id=batch_id, role="batch")
    return runs[0].info.status if runs else None


def batch_collections(home: Path, batch_id: str) -> str | None:
    runs = find_runs(home, batch_id=batch_id, role="batch")
    return runs[0].data.tags.get(TAG_COLLECTIONS) if runs else None
