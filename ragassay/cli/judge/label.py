"""`ragassay judge label`: a seeded sample of a batch's verdicts for people to label, in the terminal
or as a file, and the labels imported back."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import typer

from ragassay.cli.common import EXIT_OK, dumped, emit, fail, out
from ragassay.cli.judge.app import judge_app
from ragassay.cli.judge.budget import render_budget
from ragassay.cli.judge.terminal import label_in_terminal, review_in_terminal
from ragassay.cli.options import JSON_OPTION
from ragassay.errors import ConfigError, RagassayError

if TYPE_CHECKING:  # the reports' module loads numpy: imported where a command runs, not at start
    from ragassay.judge.calibration.labelled_batches import LabelImport
    from ragassay.judge.calibration.reports import (
        LabelBudgetReport,
    )


@judge_app.command("label")
def judge_label(
    batch: str | None = typer.Option(None, "--batch", help="The answer evaluation's batch whose verdicts to label."),
    count: int = typer.Option(60, "--count", min=2, help="Statements in the sample (half of each verdict)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the sample: the same batch, count and seed give the same one."),
    who: str | None = typer.Option(None, "--who", help="Who labels (default: your user name)."),
    export: Path | None = typer.Option(
        None, "--export", help="Write the sample to this JSONL (or .csv) file to label elsewhere, and stop."
    ),
    import_file: Path | None = typer.Option(
        None, "--import", help="Store the labels of a filled-in exported sample (JSONL or .csv)."
    ),
    replace: bool = typer.Option(
        False, "--replace", help="With --import: replace a label the same person gave an item before."
    ),
    collection: str | None = typer.Option(
        None,
        "--collection",
        "-c",
        help="With --import: the file holds labelled statements in the calibration shape ({context, statement, "
        "label, question?}, JSONL), written elsewhere; store them as this collection's labels.",
    ),
    target_width: float | None = typer.Option(
        None,
        "--target-width",
        min=0.001,
        max=1.0,
        help="When labelling stops: how many more labels would narrow the batch's corrected faithfulness "
        "interval to this width (from the verdicts stored with the labels).",
    ),
    review: bool = typer.Option(
        False,
        "--review",
        help="List the labels you gave this sample (in any earlier session) and go through them, changing any.",
    ),
    as_json: bool = JSON_OPTION,
) -> None:
    """Label a seeded sample of an answer batch's judged statements, one key each: s supported,
    u unsupported, k skip, z undo, q quit, space and b page a long context (run the same command
    again to resume; --review to change earlier labels). The judge's verdict is not shown. Labels
    are stored in each question's collection; answer evaluations then correct the judged metrics
    with them (`ragassay judge calibrate --collection` reports the judge against them)."""
    import getpass
    import sys

    from ragassay.config import workspace_home
    from ragassay.judge.calibration import labels as labelling
    from ragassay.judge.calibration.labelled_batches import import_labels, import_outside_labels, judged_runs

    try:
        home = workspace_home()
        person = who or getpass.getuser()
        if import_file is not None:
            if batch is not None or export is not None or review or target_width is not None:
                raise ConfigError(
                    "--import takes the batch and sample from the file: give no --batch, --export, --review or "
                    "--target-width"
                )
            summary = (
                import_outside_labels(home, import_file, collection, person, replace, _now())
                if collection is not None
                else import_labels(home, import_file, person, replace, _now())
            )
            emit(as_json, summary.model_dump(), lambda: _render_import(summary))
            raise typer.Exit(EXIT_OK)
        if collection is not None:
            raise ConfigError("--collection goes with --import FILE (labels in the calibration shape)")
        if batch is None:
            raise ConfigError("give --batch BATCH_ID (an answer evaluation's batch), or --import FILE")
        runs = judged_runs(home, batch)
        items = labelling.draw_sample(batch, runs, count, seed)
        if review and export is not None:
            raise ConfigError("--review goes through your labels in the terminal; give it without --export")
        if export is not None:
            _export_sample(home, batch, runs, items, export, target_width, as_json)
        if not sys.stdin.isatty():
            raise ConfigError(
                "judge label asks one key per statement and needs a terminal; label elsewhere with --export FILE, "
                "then --import FILE"
            )
        if review:
            summary = review_in_terminal(labelling.LabelReview(home, items, person, _now))
        else:
            summary = label_in_terminal(labelling.LabellingSession(home, items, person, _now))
        budgets = _stored_budgets(home, batch, runs, labelling.collections_of(items), target_width)
        if budgets:
            summary["budgets"] = dumped(budgets)
    except RagassayError as error:
        fail(error)
    emit(as_json, summary, lambda: [render_budget(budget) for budget in budgets])
    raise typer.Exit(EXIT_OK)


def _export_sample(
    home: Path, batch: str, runs: list, items: list, export: Path, target_width: float | None, as_json: bool
) -> NoReturn:
    """`judge label --export`: the sample written to a file to label elsewhere (with the label
    budgets when --target-width is given), then exit."""
    from ragassay.judge.calibration import labels as labelling

    collections = labelling.collections_of(items)
    written = labelling.export_sample(items, export, _stored_labels(home, collections))
    summary = {"exported": written, "path": str(export), "sample_id": items[0].sample_id}
    budgets = _stored_budgets(home, batch, runs, collections, target_width)
    if budgets:
        summary["budgets"] = dumped(budgets)

    def render_export() -> None:
        out.print(f"wrote {written} statements to label to {export}", highlight=False)
        for budget in budgets:
            render_budget(budget)

    emit(as_json, summary, render_export)
    raise typer.Exit(EXIT_OK)


def _stored_budgets(
    home: Path, batch: str, runs: list, collections: list[str], target_width: float | None
) -> list[LabelBudgetReport]:
    """The label budget of each of the sample's collections, from the verdicts its labels hold
    (none without a target width)."""
    from ragassay.judge.calibration.label_budget import BudgetRequest, stored_verdict_budget
    from ragassay.metrics.declared import LABEL_BUDGET_METRIC

    if target_width is None:
        return []

    request = BudgetRequest(
        batch, {run.label: run.answers[LABEL_BUDGET_METRIC].to_list() for run in runs}, target_width
    )
    judge = runs[0]
    return [
        stored_verdict_budget(
            home, collection, request, judge.judge_model, judge.prompt_version, judge.support_threshold
        )
        for collection in collections
    ]


def _now():
    from datetime import UTC, datetime

    return datetime.now(UTC)


def _stored_labels(home: Path, collections: list[str]):
    from ragassay.judge.calibration.labelled_statements import collection_labels

    return collection_labels(home, collections)


def _render_import(summary: LabelImport) -> None:
    out.print(
        f"{summary.added} labels added, {summary.replaced} replaced, {summary.unchanged} already stored "
        f"(collections: {', '.join(summary.collections) or 'none'})",
        highlight=False,
    )
