"""`ragassay runs`: find, show and compare evaluation runs stored in MLflow."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import typer

from ragassay.cli.common import dumped, emit, fail, out
from ragassay.cli.options import JSON_OPTION
from ragassay.cli.render import (
    render_answer_costs,
    render_answer_metrics,
    render_comparisons,
    render_means,
    render_pairwise,
)
from ragassay.config import workspace_home
from ragassay.errors import RagassayError
from ragassay.metrics.names import (
    HEADLINE_ANSWER_METRICS,
    QUESTIONS_SCORED,
    REPORTED_ANSWER_METRICS,
    display_name,
    parse_metric_or_none,
)

runs_app = typer.Typer(help="Find, show and compare evaluation runs stored in MLflow.", no_args_is_help=True)


def _run_row(run) -> dict:
    from ragassay import tracking

    tags = run.data.tags
    return {
        "run_id": run.info.run_id,
        "started": datetime.fromtimestamp(run.info.start_time / 1000, UTC).isoformat(timespec="seconds"),
        "kind": tags.get(tracking.TAG_KIND),
        "batch_id": tags.get(tracking.TAG_BATCH),
        "role": tags.get(tracking.TAG_ROLE),
        "configuration": tags.get(tracking.TAG_LABEL),
        "collections": tags.get(tracking.TAG_COLLECTIONS),
        "status": run.info.status,
        "verdict": tags.get(tracking.TAG_VERDICT),
        "metrics": {display_name(k): v for k, v in run.data.metrics.items()},
    }


@runs_app.command("list")
def runs_list(
    batch: str | None = typer.Option(None, help="Only runs of this batch id."),
    collection: str | None = typer.Option(None, "--collection", "-c", help="Only runs over this collection."),
    as_json: bool = JSON_OPTION,
) -> None:
    """List evaluation runs, newest first (batches and their configurations)."""
    from ragassay import tracking

    try:
        with tracking.store_failures_as_typed(workspace_home(), "list its runs"):
            found = tracking.find_runs(workspace_home(), batch_id=batch, collection=collection)
    except tracking.TrackingStoreFailed as error:
        fail(error)
    rows = [_run_row(run) for run in found]

    def render() -> None:
        out.print(f"{len(rows)} runs, newest first")
        for row in rows:
            headline = "  ".join(
                f"{k} {v:.3f}" if k not in COUNTS else f"{k} {v:.0f}"
                for k, v in row["metrics"].items()
                if k in HEADLINE_METRICS
            )
            # A batch's status (a RUNNING one was stopped while it logged) and its verdict.
            state = f"{row['status'].lower()}, {row['verdict'] or 'no verdict'}" if row["role"] == "batch" else ""
            out.print(
                f"{row['started'][:16].replace('T', ' ')}  {row['kind']:<9} batch {row['batch_id']}  "
                f"{row['configuration'] or '(batch)':<12} {row['run_id']}  ({row['collections']})  "
                + (f"[{state}]  " if state else "")
                + headline,
                highlight=False,
                markup=False,
            )

    emit(as_json, rows, render)


@runs_app.command("show")
def runs_show(
    run_id: str = typer.Argument(..., help="MLflow run id."),
    questions: bool = typer.Option(
        False,
        "--questions",
        help="Also each question's values: a retrieval configuration's per-question metrics, an answer "
        "configuration's answers and scores (the run's Parquet table, whose location is shown).",
    ),
    as_json: bool = JSON_OPTION,
) -> None:
    """Show one run: tags, params and metrics (and with --questions, each question's values)."""
    from ragassay import tracking

    run = tracking.get_run(workspace_home(), run_id)
    if run is None:
        fail(RagassayError(f"no run {run_id!r} in {tracking.tracking_uri(workspace_home())}"))
    payload = {**_run_row(run), "params": dict(run.data.params), "tags": dict(run.data.tags)}
    table = None
    if questions:
        name = tracking.PER_QUESTION_TABLES.get(payload["kind"] or "")
        table = (
            tracking.download_table(workspace_home(), run_id, name)
            if payload["role"] == "configuration" and name
            else None
        )
        if table is None:
            fail(RagassayError(f"run {run_id} keeps no per-question table: --questions needs a configuration's run"))
        payload["questions_table"] = f"{run.info.artifact_uri}/{tracking.MACHINE}/{name}.parquet"
        payload["questions"] = table.to_dicts()

    def render() -> None:
        out.print(
            f"run {run_id} ({payload['kind']}, batch {payload['batch_id']}, {payload['configuration'] or 'batch parent'})"
        )
        for name, value in sorted(payload["params"].items()):
            out.print(f"  param {name} = {value}", highlight=False)
        for name, value in payload["metrics"].items():
            out.print(f"  metric {name} = {value:.6f}", highlight=False)
        if table is not None:
            render_question_rows(table)
            out.print(f"each question's values (Parquet): {payload['questions_table']}", highlight=False)

    emit(as_json, payload, render)


def render_question_rows(table) -> None:
    """A per-question table as rows: the question's collection and id, then each number column."""
    from rich.table import Table

    numbers = [c for c, kind in table.schema.items() if kind.is_numeric()]
    shown = Table(title=f"{table.height} questions")
    for column in ("query_collection", "query_id", *numbers):
        shown.add_column(column, justify="right" if column in numbers else "left")
    for row in table.iter_rows(named=True):
        shown.add_row(
            row["query_collection"],
            row["query_id"],
            *(
                "-" if row[c] is None else f"{row[c]:.4f}" if isinstance(row[c], float) else str(row[c])
                for c in numbers
            ),
        )
    out.print(shown)


@runs_app.command("compare")
def runs_compare(
    batch_id: str = typer.Argument(..., help="Batch id printed by `eval`."), as_json: bool = JSON_OPTION
) -> None:
    """Metrics × configurations of one batch (a pipeline's: both evaluation stages), with the paired
    differences and pairwise tallies logged beside them."""
    from ragassay import tracking
    from ragassay.metrics.significance import comparison_rows

    home = workspace_home()
    runs = tracking.find_runs(home, batch_id=batch_id)
    children = [r for r in runs if r.data.tags.get(tracking.TAG_ROLE) == "configuration"]
    parents = [r for r in runs if r.data.tags.get(tracking.TAG_ROLE) == "batch"]
    if not children:
        fail(RagassayError(f"no runs of batch {batch_id!r}; `ragassay runs list` shows the batches"))
    parent_id = parents[0].info.run_id if parents else None
    # A pipeline's batch holds both kinds, and keeps each kind's tables under the kind's name.
    prefix = "" if not parents or parents[0].data.tags.get(tracking.TAG_KIND) != "pipeline" else "{kind}/"
    by_kind = _means_by_kind(children)
    if "answers" in by_kind and "retrieval" not in by_kind:
        _compare_answer_batch(home, batch_id, parent_id, by_kind["answers"], as_json, prefix.format(kind="answers"))
        return
    means = by_kind.get("retrieval", {})
    comparisons_table = (
        tracking.download_table(home, parent_id, prefix.format(kind="retrieval") + "comparisons") if parent_id else None
    )
    comparisons = comparison_rows(comparisons_table) if comparisons_table is not None else []
    # The retrieval metrics any configuration logged (a system's costs are `runs show`'s).
    metric_names = list(
        dict.fromkeys(m for values in means.values() for m in values if parse_metric_or_none(m) is not None)
    )
    for values in means.values():
        if values.get(QUESTIONS_SCORED) == 0:  # nothing scored: no metric was logged, and none is a value
            values.update({m: None for m in metric_names if m not in values})

    def render() -> None:
        render_means(f"batch {batch_id}", means, metric_names)
        ks = sorted(name.k for name in map(parse_metric_or_none, metric_names) if name and name.family == "ndcg")
        render_comparisons(comparisons, [f"ndcg@{max(ks)}", "mrr"] if ks else ["mrr"])

    if "answers" in by_kind:
        # A pipeline's batch: its answers' paired differences and pairwise tallies too, as the
        # answer batch alone shows them.
        answer_comparisons, pairwise = _answer_comparisons(home, parent_id, prefix.format(kind="answers"))
        emit(
            as_json,
            {
                "batch_id": batch_id,
                "means": means,
                "comparisons": dumped(comparisons),
                "answers": by_kind["answers"],
                "answer_comparisons": dumped(answer_comparisons),
                "pairwise": dumped(pairwise, exclude_none=True),
            },
            lambda: (
                render(),
                render_answer_metrics(f"batch {batch_id}: answers", by_kind["answers"]),
                render_answer_costs(by_kind["answers"]),
                render_comparisons(answer_comparisons, REPORTED_ANSWER_METRICS, "answers: "),
                render_pairwise(pairwise),
            ),
        )
        return
    emit(as_json, {"batch_id": batch_id, "means": means, "comparisons": dumped(comparisons)}, render)


def _means_by_kind(children) -> dict[str, dict[str, dict[str, float]]]:
    """Each kind's (retrieval, answers) configurations' metrics, by configuration label."""
    from ragassay import tracking

    by_kind: dict[str, dict[str, dict[str, float]]] = {}
    for run in reversed(children):
        kind = run.data.tags.get(tracking.TAG_KIND)
        if kind in tracking.PER_QUESTION_TABLES:
            by_kind.setdefault(kind, {})[run.data.tags[tracking.TAG_LABEL]] = {
                display_name(k): v for k, v in run.data.metrics.items()
            }
    return by_kind


def _compare_answer_batch(
    home: Path,
    batch_id: str,
    parent_run_id: str | None,
    metrics: dict[str, dict[str, float]],
    as_json: bool,
    prefix: str = "",
) -> None:
    """An answer batch: metrics with their scored counts, costs, paired differences, and the
    pairwise tallies."""
    comparisons, pairwise = _answer_comparisons(home, parent_run_id, prefix)

    def render() -> None:
        render_answer_metrics(f"batch {batch_id}", metrics)
        render_answer_costs(metrics)
        render_comparisons(comparisons, REPORTED_ANSWER_METRICS)
        render_pairwise(pairwise)

    emit(
        as_json,
        {
            "batch_id": batch_id,
            "kind": "answers",
            "metrics": metrics,
            "comparisons": dumped(comparisons),
            "pairwise": dumped(pairwise, exclude_none=True),
        },
        render,
    )


def _answer_comparisons(home: Path, parent_run_id: str | None, prefix: str) -> tuple[list, list]:
    """An answer batch's paired differences and pairwise tallies, from its parent run's tables
    (under `prefix` in a pipeline's batch); none where the batch logged none."""
    from ragassay import tracking
    from ragassay.evaluation.answer_judging import PairwiseTally
    from ragassay.metrics.answers import tally_pairs
    from ragassay.metrics.corrected_rows import answer_comparison_rows

    pairwise_table = tracking.download_table(home, parent_run_id, prefix + "pairwise") if parent_run_id else None
    pairwise = []
    if pairwise_table is not None:
        for (a, b), rows in pairwise_table.group_by(["configuration_a", "configuration_b"], maintain_order=True):
            pairwise.append(
                PairwiseTally(configuration_a=a, configuration_b=b, **tally_pairs(rows["outcome"].to_list()))
            )
    # Batches logged before answer metrics were compared have no comparisons table: none shown.
    comparisons_table = tracking.download_table(home, parent_run_id, prefix + "comparisons") if parent_run_id else None
    comparisons = answer_comparison_rows(comparisons_table) if comparisons_table is not None else []
    return comparisons, pairwise


# What `runs list` shows of each kind of run: retrieval, answers and cases share one list.
COUNTS = ("cases_passed", "cases_failed")
HEADLINE_METRICS = (
    "recall@5",
    "ndcg@10",
    "mrr",
    *HEADLINE_ANSWER_METRICS,
    "refusal_recall",
    "false_refusal_rate",
    *COUNTS,
)
