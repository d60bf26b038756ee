"""How many more labels would narrow a batch's corrected interval (`--target-width`): the request
read from the batch, and its table."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from rich.table import Table

from ragassay.cli.common import (
    out,
)

if TYPE_CHECKING:  # the reports' module loads numpy: imported where a command runs, not at start
    from ragassay.judge.calibration.reports import (
        LabelBudgetReport,
    )


def budget_request(home: Path, collection: str, batch: str | None, target_width: float):
    """The batch's per-question values of the label budget's metric (declared.LABEL_BUDGET_METRIC)
    for each configuration, read before the judge loads."""
    from ragassay.judge.calibration.label_budget import BudgetRequest, latest_labelled_batch
    from ragassay.judge.calibration.labelled_batches import judged_runs
    from ragassay.metrics.declared import LABEL_BUDGET_METRIC

    batch = batch or latest_labelled_batch(home, collection)
    values = {run.label: run.answers[LABEL_BUDGET_METRIC].to_list() for run in judged_runs(home, batch)}
    return BudgetRequest(batch, values, target_width)


def render_budget(budget: LabelBudgetReport) -> None:
    """How many more labels each configuration's corrected faithfulness interval needs."""
    table = Table(
        title=(
            f"labels to narrow batch {budget.batch_id}'s corrected faithfulness interval to "
            f"{budget.target_width:g} ({budget.verdicts} verdicts)"
        )
    )
    for column in ("configuration", "width now", "width at most labels", "more labels"):
        table.add_column(column, justify="right")
    for row in budget.configurations:
        if row.no_interval:
            table.add_row(
                row.configuration,
                "none",
                "",
                "no corrected interval: the labels do not yet show the judge separating the classes",
            )
            continue
        more = row.more_labels
        table.add_row(
            row.configuration,
            f"{row.current_width:.3f}",
            f"{row.floor_width:.3f}",
            "already" if more == 0 else (str(more) if more is not None else "none reach it: more questions needed"),
        )
    out.print(table)
    if budget.left_out:
        out.print(
            f"{budget.left_out} labels of collection {budget.collection} were judged by another judge and are "
            f"left out here; `ragassay judge calibrate --collection {budget.collection} --target-width "
            f"{budget.target_width:g}` asks this judge about them",
            style="yellow",
            highlight=False,
        )
    out.print(
        "labels drawn as these were (the same strata and shares); the width at most labels is what the batch's "
        "questions alone allow. A projection from today's error rates: few labels make it a rough one.",
        style="dim",
        highlight=False,
    )
