"""The label budget (`judge calibrate --target-width`): how many more labels, drawn as the stored
ones were, would narrow each configuration's corrected faithfulness interval to a width."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import polars as pl

from ragassay.errors import ConfigError
from ragassay.judge.calibration.labelled_statements import collection_labels
from ragassay.judge.calibration.labels import (
    current_probabilities,
    label_strata,
)
from ragassay.judge.calibration.reports import (
    ConfigurationBudget,
    LabelBudgetReport,
)
from ragassay.metrics.declared import LABEL_BUDGET_METRIC
from ragassay.metrics.judge_error import LabelStratum
from ragassay.metrics.label_need import labels_for_width


@dataclass(frozen=True)
class BudgetRequest:
    """What `--target-width` asks a label budget for: one batch's per-question faithfulness of
    each configuration, and the width its corrected interval should narrow to."""

    batch_id: str
    values: dict[str, list[float | None]]  # per configuration, the per-question values of LABEL_BUDGET_METRIC
    target_width: float


def latest_labelled_batch(home: Path, collection: str) -> str:
    """The batch the collection's latest label was sampled from (ConfigError when none was)."""
    labels = collection_labels(home, [collection]).filter(pl.col("batch_id") != "").sort("labelled_at")
    if labels.height == 0:
        raise ConfigError(
            f"collection {collection!r} has no labels sampled from a batch (imported labels stand for no batch's "
            "statements): give --batch BATCH_ID of an answer batch for the budget"
        )
    return labels["batch_id"][-1]


def label_budget(strata: list[LabelStratum], request: BudgetRequest, seed: int = 0) -> LabelBudgetReport:
    """Per configuration of the batch, how many more labels (drawn as these were) would narrow
    its corrected faithfulness interval to the target width (metrics/label_need.labels_for_width);
    `more_labels` is the most any configuration needs."""
    rows = []
    for label, values in request.values.items():
        budget = labels_for_width(values, strata, request.target_width, seed)
        rows.append(
            ConfigurationBudget(configuration=label, **budget.model_dump())
            if budget
            else ConfigurationBudget(configuration=label, no_interval=True)
        )
    reachable = [row.more_labels for row in rows if row.more_labels is not None]
    return LabelBudgetReport(
        batch_id=request.batch_id,
        target_width=request.target_width,
        metric=LABEL_BUDGET_METRIC,
        configurations=rows,
        more_labels=max(reachable) if reachable and len(reachable) == len(rows) else None,
    )


def stored_verdict_budget(
    home: Path, collection: str, request: BudgetRequest, judge_model: str, prompt_version: str, support_threshold: float
) -> LabelBudgetReport:
    """label_budget from the verdicts stored with the collection's labels by the batch's judge
    (same model, prompt and threshold), without asking a model: what `judge label --target-width`
    shows as labels are given. `left_out` counts labels another judge gave (their verdicts by
    this judge are unknown until `judge calibrate --collection` asks it)."""
    labels = collection_labels(home, [collection]).filter(pl.col("label") != "skipped")
    same = labels.filter(
        (pl.col("judge_model") == judge_model)
        & (pl.col("prompt_version") == prompt_version)
        & (pl.col("support_threshold") == support_threshold)
    )
    probabilities = current_probabilities(same, judge_model, prompt_version, lambda row: None)
    verdicts = {item: None if p is None else p >= support_threshold for item, p in probabilities.items()}
    budget = label_budget(label_strata(same, verdicts), request)
    return budget.model_copy(
        update={
            "collection": collection,
            "verdicts": "stored plain",
            "left_out": labels["item_id"].n_unique() - same["item_id"].n_unique(),
        }
    )
