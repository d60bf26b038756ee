"""`ragassay gate`: fail a change whose metrics dropped significantly beyond their bounds."""

from __future__ import annotations

import typer
from rich.table import Table

from ragassay.cli.common import EXIT_OK, EXIT_PARTIAL, JSON_OPTION, emit, err, fail, out
from ragassay.errors import ConfigError, RagassayError
from ragassay.metrics.significance import ALPHA


def gate(
    baseline: str = typer.Option(
        ..., "--baseline", help="Batch id of the accepted state (from `ragassay run`, `eval` or `runs list`)."
    ),
    candidate: str | None = typer.Option(
        None, "--candidate", help="Batch id of the change (default: the newest other batch over the same collections)."
    ),
    max_drop: list[str] = typer.Option(
        ...,
        "--max-drop",
        help="[LABEL:]METRIC=NUMBER, e.g. recall@5=0.02, hybrid:faithfulness=0.05, or faithfulness.corrected=0.05 "
        "(the judge-corrected drop), prod:coverage=0.02 (the share of questions a system answered); repeatable.",
    ),
    alpha: float = typer.Option(ALPHA, help="A drop counts only when its randomization p-value is below this."),
    seed: int = typer.Option(0, help="Seed of the paired tests."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Compare a candidate batch with a baseline batch question by question (paired bootstrap and
    randomization tests). Exit 1 naming each metric that dropped by more than its bound with
    p < alpha; exit 2 when the batches cannot be compared (unknown batch, metric or configuration)."""
    from ragassay import tracking
    from ragassay.config import workspace_home
    from ragassay.gates.regression import (
        CORRECTED,
        COVERAGE,
        bounds_of_kind,
        calibration_strata,
        compare_batches,
        coverage_drops,
        parse_drop_bound,
        per_question_scores,
    )

    home = workspace_home()
    try:
        bounds = [parse_drop_bound(text) for text in max_drop]
        collections = tracking.batch_collections(home, baseline)
        if collections is None:
            raise ConfigError(f"no batch {baseline!r}; `ragassay runs list` shows the batches")
        candidate = candidate or tracking.latest_batch(home, collections, excluding=baseline)
        if candidate is None or tracking.batch_collections(home, candidate) is None:
            raise ConfigError(
                f"no candidate batch {candidate!r}"
                if candidate
                else f"no other batch over {collections} to compare with {baseline}"
            )
        before, after = tracking.batch_tables(home, baseline), tracking.batch_tables(home, candidate)
        results, warnings = [], []
        for kind in ("retrieval", "answers"):
            kind_bounds = bounds_of_kind(bounds, kind)
            both = kind in before and kind in after
            if both:
                scores = [
                    {label: per_question_scores(kind, table) for label, table in tables[kind].items()}
                    for tables in (before, after)
                ]
                warnings += [f"{kind}: {line}" for line in coverage_drops(*scores)]
            if not kind_bounds or (not both and all(b.metric == COVERAGE for b in kind_bounds)):
                continue
            if not both:
                raise ConfigError(
                    f"--max-drop {next(b for b in kind_bounds if b.metric != COVERAGE).metric}: both batches need {kind} results "
                    f"(baseline has {', '.join(before) or 'none'}, candidate {', '.join(after) or 'none'})"
                )
            calibration = None
            if any(b.metric.endswith(CORRECTED) for b in kind_bounds):
                table = tracking.batch_parent_table(home, candidate, "judge_calibration")
                calibration = calibration_strata(table) if table is not None else None
            results += compare_batches(*scores, kind_bounds, alpha, seed, calibration).to_dicts()
        if bounds and not results:
            raise ConfigError("no bound could be compared: neither batch kind holds what --max-drop names")
    except RagassayError as error:
        fail(error)

    def render() -> None:
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
                r["configuration"],
                r["metric"],
                f"{r['questions']}/{r['asked']}",
                f"{r['baseline']:.4f}",
                f"{r['candidate']:.4f}",
                f"{r['drop']:+.4f}",
                f"[{r['ci_low']:+.4f}, {r['ci_high']:+.4f}]",
                f"{r['p_value']:.4f}",
                f"{r['max_drop']:g}",
                "[red]FAILED[/red]" if r["failed"] else "[green]ok[/green]",
            )
        table.caption = "questions: compared (both batches scored) / asked in both"
        out.print(table)
        for line in warnings:
            out.print(f"[yellow]warning[/yellow] {line}", highlight=False)

    emit(
        as_json,
        {"baseline": baseline, "candidate": candidate, "alpha": alpha, "results": results, "warnings": warnings},
        render,
    )
    failed = [r for r in results if r["failed"]]
    if failed:
        err.print(
            "regression gate failed: "
            + "; ".join(
                f"{r['configuration']}:{r['metric']} dropped {r['drop']:.4f} > {r['max_drop']:g} (p {r['p_value']:.4f})"
                for r in failed
            ),
            highlight=False,
        )
        raise typer.Exit(EXIT_PARTIAL)
    raise typer.Exit(EXIT_OK)
