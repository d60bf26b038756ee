"""What `judge calibrate` prints: the judge's agreement with people, its confusion matrix, a
collection's figures with its aligned judge, and the pairwise position bias."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.table import Table

from ragassay.cli.common import (
    out,
)
from ragassay.cli.judge.budget import render_budget

if TYPE_CHECKING:  # the reports' module loads numpy: imported where a command runs, not at start
    from ragassay.judge.calibration.reports import (
        AlignmentSummary,
        CollectionCalibration,
        PairwiseCalibration,
        SupportCalibration,
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


def render_support(report: SupportCalibration) -> None:
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
    _render_beside(report)
    if isinstance(report, CollectionCalibration):
        render_collection_figures(report)
    out.print(f"MLflow run {report.mlflow_run_id} (experiment {report.experiment})", style="dim", highlight=False)


def _render_beside(report: SupportCalibration) -> None:
    """The same statements read by the judge's own rule (beside a learned verdict), and as the
    collection's evaluations use the judge (its aligned judge or the plain one)."""
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


def render_collection_figures(report: CollectionCalibration) -> None:
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
        render_budget(report.budget)
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


def render_pairwise(report: PairwiseCalibration) -> None:
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
