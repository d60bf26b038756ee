"""What is logged and where it went, as types: a batch (where its runs go), the record of one
evaluation the library builds before MLflow is called, and where a logged batch is."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pydantic import BaseModel

from ragassay.work_span import WorkSpan

if TYPE_CHECKING:  # the tables' type only: a record is made where polars is loaded already
    import polars as pl


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


@dataclass(frozen=True)
class ConfigurationRecord:
    """What one configuration's child run holds: its params, metrics and tables, the traces linked
    to it (evaluation/answer_traces.QuestionTrace: one per question of an answer run), its
    description, when its work began and ended, the previews MLflow's UI shows of its tables
    (log_tables), and its verdict."""

    label: str
    params: dict[str, str]
    metrics: dict[str, float]
    tables: dict[str, pl.DataFrame]
    traces: list = field(default_factory=list)
    description: str = ""
    work_span: WorkSpan | None = None
    previews: dict[str, pl.DataFrame] = field(default_factory=dict)
    # The configuration's verdict on the assertions that name it (none: it had none).
    verdict: str | None = None


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
    # The batch's verdict and its assertions' rows (gates/assertions.assertion_rows), logged on the
    # parent when the stage owns the batch; a pipeline logs its stages' together when it ends.
    verdict: str | None = None
    assertions: list[dict] = field(default_factory=list)


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
    # Why the batch is not in MLflow (its tracking server did not answer), and the workspace
    # folder that keeps what it would have logged (tracking/unreachable.keep_unlogged); None
    # for a logged batch.
    not_logged: str | None = None
    kept_in: str | None = None
