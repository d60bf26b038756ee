"""`ragassay judge calibrate`: how far to trust a judge model, measured on human labels."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import typer
from rich.table import Table

from ragassay.cli.common import (
    EXIT_OK,
    JSON_OPTION,
    JUDGE_API_KEY_ENV_OPTION,
    JUDGE_BACKEND_OPTION,
    JUDGE_MODEL_OPTION,
    JUDGE_NAME_OPTION,
    JUDGE_PATH_OPTION,
    JUDGE_URL_OPTION,
    dumped,
    emit,
    fail,
    judge_override,
    out,
)
from ragassay.errors import ConfigError, RagassayError

if TYPE_CHECKING:  # the reports' module loads numpy: imported where a command runs, not at start
    from ragassay.judge.calibration.labelled_batches import LabelImport
    from ragassay.judge.calibration.reports import (
        AlignmentSummary,
        CollectionCalibration,
        LabelBudgetReport,
        PairwiseCalibration,
        SupportCalibration,
    )

judge_app = typer.Typer(help="Measure how far to trust a judge model.", no_args_is_help=True)


@judge_app.command("calibrate")
def judge_calibrate(
    labels: Path | None = typer.Option(
        None,
        "--labels",
        help="JSONL of {context, statement, label: supported|unsupported} written by people; with --collection, "
        "also the judge as that collection's evaluations use it (its aligned judge), on labels not among its own.",
    ),
    collection: str | None = typer.Option(
        None,
        "--collection",
        "-c",
        help="Instead: the labels people gave this collection's verdicts (`ragassay judge label`).",
    ),
    pairwise: Path | None = typer.Option(
        None,
        "--pairwise",
        help="Instead: measure position bias on answer pairs built from this golden JSONL (question, reference_answer).",
    ),
    max_items: int | None = typer.Option(
        None, "--max-items", min=1, help="Judge a seeded sample of at most this many rows (pairs)."
    ),
    seed: int = typer.Option(0, "--seed", help="Seed of the sample and of the bootstrap interval."),
    target_width: float | None = typer.Option(
        None,
        "--target-width",
        min=0.001,
        max=1.0,
        help="With --collection: how many more labels would narrow a batch's corrected faithfulness interval "
        "to this width.",
    ),
    batch: str | None = typer.Option(
        None, "--batch", help="With --target-width: the batch (default: the one the latest label came from)."
    ),
    judge_model: str | None = JUDGE_MODEL_OPTION,
    judge_backend: str | None = JUDGE_BACKEND_OPTION,
    judge_path: Path | None = JUDGE_PATH_OPTION,
    judge_url: str | None = JUDGE_URL_OPTION,
    judge_name: str | None = JUDGE_NAME_OPTION,
    judge_api_key_env: str | None = JUDGE_API_KEY_ENV_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """How far to trust a judge: its support verdicts against human labels (accuracy, balanced
    accuracy, Cohen's kappa with a bootstrap 95% interval, per-class precision and recall,
    confusion matrix, unreadable rate, seconds per verdict), or with --pairwise the share of
    pairwise verdicts that flip when the answers swap places. Logged as an MLflow run in the
    ragassay/judge-calibration experiment; with --collection, in the collection's experiment
    beside its batches, with the sensitivity and specificity the judge-corrected estimates use."""
    from ragassay import tracking
    from ragassay.config import workspace_home
    from ragassay.config_errors import parse_config
    from ragassay.judge.calibration.calibrate import CalibrationRequest, calibrate
    from ragassay.judge.calibration.log import log_calibration_report
    from ragassay.judge.calibration.reports import CollectionCalibration
    from ragassay.llm.settings import DEFAULT_JUDGE_BACKEND, ChatModelConfig
    from ragassay.store.workspace import collection_paths

    try:
        _check_calibrate_options(labels, collection, pairwise, target_width, batch)
        settings = judge_override(judge_model, judge_backend, judge_path, judge_url, judge_name, judge_api_key_env) or {
            "backend": DEFAULT_JUDGE_BACKEND
        }
        config = parse_config(ChatModelConfig, **settings)
        home = workspace_home()
        if collection is not None:
            collection_paths(home, collection)  # a missing collection is named before its budget's batch is sought
        budget = _budget_request(home, collection, batch, target_width) if target_width is not None else None
        report = calibrate(home, config, CalibrationRequest(labels, collection, pairwise, max_items, seed, budget))
        report = report.model_copy(
            update={
                "mlflow_run_id": log_calibration_report(
                    home, report, "pairwise" if pairwise is not None else "support"
                ),
                "experiment": tracking.experiment_name([collection])
                if isinstance(report, CollectionCalibration)
                else tracking.CALIBRATION_EXPERIMENT,
            }
        )
    except RagassayError as error:
        fail(error)

    emit(
        as_json,
        report.model_dump(mode="json"),
        (lambda: _render_support(report)) if pairwise is None else (lambda: _render_pairwise(report)),
    )
    raise typer.Exit(EXIT_OK)


def _check_calibrate_options(
    labels: Path | None, collection: str | None, pairwise: Path | None, target_width: float | None, batch: str | None
) -> None:
    """ConfigError unless the options name one calibration: --labels, --collection (with its
    budget's --target-width and --batch), --pairwise, or --labels with --collection."""
    if (target_width is not None or batch is not None) and (collection is None or labels is not None):
        raise ConfigError("--target-width and --batch go with --collection NAME alone")
    if batch is not None and target_width is None:
        raise ConfigError("--batch names the batch of --target-width's budget: give --target-width too")
    if sum(option is not None for option in (labels, pairwise, collection)) != 1 and not (
        labels is not None and collection is not None and pairwise is None
    ):
        raise ConfigError(
            "give one of --labels FILE (support verdicts), --collection NAME (its people's labels) or "
            "--pairwise GOLDEN_FILE (position bias); --labels FILE --collection NAME reports the judge as "
            "that collection's evaluations use it beside the plain judge"
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
            summary = _review_in_terminal(labelling.LabelReview(home, items, person, _now))
        else:
            summary = _label_in_terminal(labelling.LabellingSession(home, items, person, _now))
        budgets = _stored_budgets(home, batch, runs, labelling.collections_of(items), target_width)
        if budgets:
            summary["budgets"] = dumped(budgets)
    except RagassayError as error:
        fail(error)
    emit(as_json, summary, lambda: [_render_budget(budget) for budget in budgets])
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
            _render_budget(budget)

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


LABEL_KEYS = {"s": "supported", "u": "unsupported", "k": "skipped"}
PAGE_KEYS = {" ": 1, "b": -1}


def _show(screen) -> None:
    """One screen of cli/label_screen, from the top of a cleared terminal."""
    from rich.text import Text

    out.clear()
    for line in screen.lines:
        out.print(Text(line.text, style=line.style), highlight=False)


def _paged(screen, key: str) -> tuple[int, str | None]:
    """(page, note) after a paging key: the page moved to, or a note that there is none."""
    page = screen.page + PAGE_KEYS[key]
    if 0 <= page < screen.pages:
        return page, None
    return screen.page, ("the context's last page" if PAGE_KEYS[key] > 0 else "the context's first page")


def _cut_statement(text: str, most: int = 60) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= most else flat[: most - 1] + "…"


def _shown_key(screen) -> tuple[str, int | None, str | None]:
    """Show one screen and read one key: a paging key comes back with the page it moves to and
    its note (the loop shows the same item again), any other key with no page and no note."""
    import click

    _show(screen)
    key = click.getchar().lower()
    if key in PAGE_KEYS:
        page, note = _paged(screen, key)
        return key, page, note
    return key, None, None


def _label_in_terminal(session) -> dict:
    """The labelling loop: one statement a screen (cli/label_screen), one key each."""

    from ragassay.cli.label_screen import item_screen

    already = session.done
    note = (
        f"{already} of {session.total} statements already labelled; {len(session.pending)} to go" if already else None
    )
    page = 0
    while session.current is not None:
        item = session.current
        screen = item_screen(item, session.done + 1, session.total, tuple(out.size), page, note)
        key, paged, note = _shown_key(screen)
        if paged is not None:
            page = paged
            continue
        page = 0
        if key in LABEL_KEYS:
            session.label(LABEL_KEYS[key])
            note = f"{LABEL_KEYS[key]}: {_cut_statement(item.statement)}"
        elif key == "z":
            undone = session.undo()
            note = (
                "nothing to undo in this session (earlier sessions' labels: --review)"
                if undone is None
                else f"undone: {_cut_statement(undone.statement)}"
            )
        elif key == "q":
            break
        else:
            note = "keys: s supported, u unsupported, k skip, z undo, q quit, space/b page the context"
    counts = {label: sum(1 for _, given in session.given if given == label) for label in LABEL_KEYS.values()}
    labelled = len(session.given)
    collections = sorted({item.query_collection for item, _ in session.given})
    remaining = len(session.pending)
    if note:
        out.print(note, style="yellow", highlight=False)
    out.print(
        f"{labelled} labelled this session ({counts['supported']} supported, {counts['unsupported']} unsupported, "
        f"{counts['skipped']} skipped); {remaining} of {session.total} left"
        + (" (run the same command to resume)" if remaining else ""),
        highlight=False,
    )
    if collections:
        out.print(
            f"labels stored in collection {', '.join(collections)}; "
            f"see the judge against them: ragassay judge calibrate --collection {collections[0]}",
            highlight=False,
        )
    return {"labelled": counts, "remaining": remaining, "total": session.total, "collections": collections}


def _review_in_terminal(review) -> dict:
    """The review loop: the person's labels of the sample listed, then one a screen, each
    changeable (s, u, k), n and p to move, q to stop."""
    import click

    from ragassay.cli.label_screen import REVIEW_KEYS_LINE, item_screen

    entries = review.entries
    table = Table(title=f"your {len(entries)} labels of this sample ({review.who})")
    for column in ("#", "label", "metric", "statement"):
        table.add_column(column, overflow="ellipsis", no_wrap=True)
    for number, (item, label) in enumerate(entries, start=1):
        table.add_row(str(number), label, item.metric.replace("_", " "), " ".join(item.statement.split()))
    out.print(table)
    index, page, note = 0, 0, None
    if entries:
        out.print("any key goes through them one by one (s/u/k relabel, n next, p previous, q quit)", highlight=False)
        if click.getchar().lower() == "q":
            index = len(entries)
    while 0 <= index < len(entries):
        item, label = entries[index]
        screen = item_screen(
            item, index + 1, len(entries), tuple(out.size), page, note, REVIEW_KEYS_LINE, current_label=label
        )
        key, paged, note = _shown_key(screen)
        if paged is not None:
            page = paged
            continue
        page = 0
        if key in LABEL_KEYS:
            before = review.relabel(index, LABEL_KEYS[key])
            note = f"#{index + 1}: {before} -> {LABEL_KEYS[key]}" if before != LABEL_KEYS[key] else f"#{index + 1} kept"
            index += 1
        elif key == "n":
            index += 1
        elif key == "p":
            index, note = (index - 1, None) if index else (index, "the first label")
        elif key == "q":
            break
        else:
            note = f"keys: {REVIEW_KEYS_LINE}, space/b page the context"
    if note:
        out.print(note, style="yellow", highlight=False)
    collections = sorted({item.query_collection for item, _ in entries})
    out.print(f"{len(entries)} labels reviewed, {review.changed} changed", highlight=False)
    return {"reviewed": len(entries), "changed": review.changed, "collections": collections}


def _budget_request(home: Path, collection: str, batch: str | None, target_width: float):
    """The batch's per-question faithfulness of each configuration, read before the judge loads."""
    from ragassay.judge.calibration.label_budget import BudgetRequest, latest_labelled_batch
    from ragassay.judge.calibration.labelled_batches import judged_runs
    from ragassay.metrics.declared import LABEL_BUDGET_METRIC

    batch = batch or latest_labelled_batch(home, collection)
    values = {run.label: run.answers[LABEL_BUDGET_METRIC].to_list() for run in judged_runs(home, batch)}
    return BudgetRequest(batch, values, target_width)


def _render_budget(budget: LabelBudgetReport) -> None:
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


def _figure(value, digits: int = 3) -> str:
    return "undefined" if value is None else f"{value:.{digits}f}"


def _label_origin(report) -> str:
    """Where a collection's labels come from: batches they were sampled from, files imported."""
    parts = []
    if report.batches:
        parts.append(f"sampled from {len(report.batches)} batch{'es' if len(report.batches) != 1 else ''}")
    if report.imported_files:
        parts.append(f"imported from {report.imported_files} file{'s' if report.imported_files != 1 else ''}")
    return " and ".join(parts)


def _render_support(report: SupportCalibration) -> None:
    from ragassay.judge.calibration.reports import CollectionCalibration

    source = (
        f"collection {report.collection} (labelled by {', '.join(report.people)}, {_label_origin(report)})"
        if isinstance(report, CollectionCalibration)
        else report.labels_file
    )
    verdict = "its learned verdict's P" if report.judge_own is not None else "P"
    out.print(
        f"judge {report.judge_model} ({report.prompt_version}, supported when {verdict} >= {report.support_threshold}) "
        f"on {report.labelled} labelled statements from {source}",
        highlight=False,
    )
    if report.too_long:
        out.print(
            f"{report.too_long} more did not fit the judge's context and were left out (never cut)",
            style="yellow",
            highlight=False,
        )
    # Each balanced accuracy printed names the statements it is over: the sample as drawn (half of
    # each verdict) and the batches' statements it stands for differ, and unnamed they read as a
    # contradiction.
    population = "on these labelled statements"
    if isinstance(report, CollectionCalibration) and report.batches:
        population = "on the labelled statements as drawn (about half of each judge verdict)" + (
            " and imported" if report.imported_files else ""
        )
    out.print(
        f"{population}: accuracy {_figure(report.accuracy)}   balanced accuracy "
        f"{_figure(report.balanced_accuracy)}   Cohen's kappa {_figure(report.kappa)} "
        f"(95% CI {_figure(report.kappa_ci_low)} to {_figure(report.kappa_ci_high)})",
        highlight=False,
    )
    reused = report.reused_verdicts
    cost = (
        f"{_figure(report.seconds_per_verdict, 1)} s per verdict asked"
        if report.seconds_per_verdict is not None
        else "no verdict asked"
    )
    out.print(
        f"unreadable {report.unreadable_rate:.1%} ({report.labelled - report.readable} of {report.labelled})   "
        f"{cost}" + (f" ({reused} verdicts of this judge stored with their labels, not asked again)" if reused else ""),
        highlight=False,
    )
    _render_confusion(report)
    if report.judge_own is not None:
        own = report.judge_own
        out.print(
            f"beside it, the judge's own rule (its P(supported) >= {report.judge_threshold}) on the same statements: "
            f"accuracy {_figure(own.accuracy)}   balanced accuracy {_figure(own.balanced_accuracy)}   Cohen's kappa "
            f"{_figure(own.kappa)} (95% CI {_figure(own.kappa_ci_low)} to {_figure(own.kappa_ci_high)})",
            highlight=False,
        )
    if report.as_used is not None:
        used = report.as_used
        how = "its aligned judge" if used.aligned else "the plain judge"
        out.print(
            f"on these labelled statements, as collection {used.collection}'s evaluations use it ({how}; "
            f"{used.why}): accuracy "
            f"{_figure(used.accuracy)}   balanced accuracy {_figure(used.balanced_accuracy)}   Cohen's kappa "
            f"{_figure(used.kappa)} (95% CI {_figure(used.kappa_ci_low)} to {_figure(used.kappa_ci_high)})",
            highlight=False,
        )
    if isinstance(report, CollectionCalibration):
        _render_collection_figures(report)
    out.print(f"MLflow run {report.mlflow_run_id} (experiment {report.experiment})", style="dim", highlight=False)


def _render_confusion(report: SupportCalibration) -> None:
    """The confusion matrix of the readable verdicts, with each class's recall and precision."""
    confusion = report.confusion
    table = Table(title="confusion matrix (readable verdicts)")
    for column in ("label \\ judge", "supported", "unsupported", "recall"):
        table.add_column(column, justify="right")
    table.add_row(
        "supported",
        str(confusion["supported_judged_supported"]),
        str(confusion["supported_judged_unsupported"]),
        _figure(report.recall_supported),
    )
    table.add_row(
        "unsupported",
        str(confusion["unsupported_judged_supported"]),
        str(confusion["unsupported_judged_unsupported"]),
        _figure(report.recall_unsupported),
    )
    table.add_row("precision", _figure(report.precision_supported), _figure(report.precision_unsupported), "")
    out.print(table)
    out.print(
        "kappa 1 is perfect agreement and 0 no better than chance; below about 0.6, read this judge's scores with caution.",
        style="dim",
    )


def _render_collection_figures(report: CollectionCalibration) -> None:
    """What only a collection's labels give: the judge's error rates weighted to the batches the
    labels stand for, the aligned judge, the label budget, and labels people gave differently."""
    weighted = report.weighted
    population = (
        "on the batches' statements the labels stand for (each stratum weighted by its size: what the "
        "judge-corrected estimates use)"
        if report.batches
        else "weighted as the judge-corrected estimates weigh them (imported labels stand for themselves)"
    )
    out.print(
        f"{population}: sensitivity {_interval(weighted, 'sensitivity')}, specificity "
        f"{_interval(weighted, 'specificity')}, balanced accuracy {_interval(weighted, 'balanced_accuracy')}",
        highlight=False,
    )
    out.print(weighted.summary, style="green" if weighted.separable else "yellow", highlight=False)
    _render_alignment(report.aligned_judge, "as drawn" if report.batches else "")
    if report.budget is not None:
        _render_budget(report.budget)
    if report.disagreements:
        out.print(
            f"{report.disagreements} statements were labelled differently by different people: the latest label counts",
            style="yellow",
            highlight=False,
        )


def _render_alignment(aligned: AlignmentSummary, how: str) -> None:
    """The aligned judge against the plain threshold on the collection's labels, and whether
    evaluations of the collection use it."""
    from ragassay.judge.calibration.alignment import USE_RULE

    comparison = aligned.comparison
    if comparison is not None:
        table = Table(
            title=(
                f"aligned judge: cross-validated on the {comparison.labelled} labelled statements{' ' + how if how else ''}, "
                f"from {comparison.groups} questions ({comparison.folds} folds, questions held out whole)"
            )
        )
        for column in ("verdicts", "balanced accuracy [95% CI]", "AUC [95% CI]"):
            table.add_column(column, justify="right")
        for name, label in (("plain", f"plain (P >= {aligned.support_threshold})"), ("aligned", "aligned")):
            table.add_row(
                label, _interval(comparison, f"{name}_balanced_accuracy"), _interval(comparison, f"{name}_auc")
            )
        out.print(table)
    style = "green" if aligned.used else "yellow"
    out.print(
        f"{'used' if aligned.used else 'not used'} by this collection's evaluations: {aligned.reason}",
        style=style,
        highlight=False,
    )
    if aligned.used and aligned.weighted is not None:
        weighted = aligned.weighted
        out.print(
            f"its cross-fitted verdicts, weighted as above: sensitivity {_interval(weighted, 'sensitivity')}, "
            f"specificity {_interval(weighted, 'specificity')}, balanced accuracy "
            f"{_interval(weighted, 'balanced_accuracy')} (what corrected estimates now use)",
            highlight=False,
        )
    out.print(f"rule: {USE_RULE}", style="dim", highlight=False)


def _interval(values, name: str) -> str:
    """A figure and its interval (the fields NAME, NAME_low, NAME_high of a report's part)."""
    value, low, high = (getattr(values, f"{name}{part}") for part in ("", "_low", "_high"))
    return f"{_figure(value, 2)} [{low:.2f}, {high:.2f}]"


def _render_pairwise(report: PairwiseCalibration) -> None:
    out.print(
        f"judge {report.judge_model} ({report.prompt_version}) on {report.pairs} answer pairs from {report.golden_file}, each asked in both orders",
        highlight=False,
    )
    out.print(
        f"flip rate {_figure(report.flip_rate)} (the verdict changed when the answers swapped places)   "
        f"accuracy {_figure(report.accuracy)} (named the better answer in both orders)   ties {report.ties}   "
        f"unreadable {report.unreadable_rate:.1%}   {_figure(report.seconds_per_verdict, 1)} s per verdict",
        highlight=False,
    )
    out.print(
        f"MLflow run {report.mlflow_run_id} (experiment ragassay/judge-calibration)", style="dim", highlight=False
    )
