"""`ragassay gate`: fail a change whose metrics dropped significantly beyond their bounds."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer
from rich.table import Table

from ragassay.cli.common import EXIT_OK, EXIT_PARTIAL, dumped, emit, err, fail, out, styled
from ragassay.cli.options import JSON_OPTION
from ragassay.errors import RagassayError
from ragassay.metrics.levels import ALPHA

if TYPE_CHECKING:
    from ragassay.gates.regression import DropRow


def gate(
    baseline: str = typer.Option(
        ..., "--baseline", help="Batch id of the accepted state (from `ragassay run`, `eval` or `runs list`)."
    ),
    candidate: str | None = typer.Option(
        None,
        "--candidate",
        help="Batch id of the change (default: the newest other finished batch over the same collections).",
    ),
    max_drop: list[str] = typer.Option(
        ...,
        "--max-drop",
        help="[LABEL:]METRIC=NUMBER, e.g. recall@5=0.02, hybrid:faithfulness=0.05, or faithfulness.corrected=0.05 "
        "(the judge-corrected drop), prod:coverage=0.02 (the share of questions a system answered), "
        "followup.recall@5=0.05 (over the golden dialogues' follow-ups only); repeatable.",
    ),
    alpha: float = typer.Option(ALPHA, help="A drop counts only when its randomization p-value is below this."),
    seed: int = typer.Option(0, help="Seed of the paired tests."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Compare a candidate batch with a baseline batch question by question (paired bootstrap and
    randomization tests). Exit 1 naming each metric that dropped by more than its bound with
    p < alpha; exit 2 when the batches cannot be compared (unknown batch, metric or configuration)."""
    from ragassay.config import workspace_home
    from ragassay.gates.batch_gate import gate_batches

    try:
        outcome = gate_batches(workspace_home(), baseline, candidate, max_drop, alpha, seed)
    except RagassayError as error:
        fail(error)
    candidate, results, warnings = outcome.candidate, outcome.results, outcome.warnings

    emit(
        as_json,
        {
            "baseline": baseline,
            "candidate": candidate,
            "alpha": alpha,
            "results": dumped(results),
            "warnings": warnings,
        },
        lambda: _render_gate(baseline, candidate, alpha, results, warnings),
    )
    failed = outcome.failed
    if failed:
        err.print(
            "regression gate failed: "
            + "; ".join(
                f"{r.configuration}:{r.metric} dropped {r.drop:.4f} > {r.max_drop:g} (p {r.p_value:.4f})"
                for r in failed
            ),
            highlight=False,
        )
        raise typer.Exit(EXIT_PARTIAL)
    raise typer.Exit(EXIT_OK)


def _render_gate(baseline: str, candidate: str, alpha: float, results: list[DropRow], warnings: list[str]) -> None:
    """Each bounded metric's drop from baseline to candidate, failed or ok, then the warnings."""
    from ragassay.evaluation.interval_text import signed, signed_interval

    table = Table(
        title=f"candidate {candidate} against baseline {baseline} (drop = how much worse; fails when > bound and p < {alpha})"
    )
    for column in (
        "configuration",
        "metric",
        "questions",
        "baseline",
        "candidate",
        "drop",
        "95% CI",
        "p",
        "bound",
        "",
    ):
        table.add_column(column, justify="left" if column in ("configuration", "metric", "") else "right")
    for r in results:
        table.add_row(
            r.configuration,
            r.metric,
            f"{r.questions}/{r.asked}",
            f"{r.baseline:.4f}",
            f"{r.candidate:.4f}",
            signed(r.drop, 4),
            signed_interval(r.ci_low, r.ci_high, 4),
            f"{r.p_value:.4f}",
            f"{r.max_drop:g}",
            styled(("FAILED", "red") if r.failed else ("ok", "green")),
        )
    table.caption = "questions: compared (both batches scored) / asked in both"
    out.print(table)
    for line in warnings:
        out.print(styled(("warning", "yellow"), f" {line}"), highlight=False)
