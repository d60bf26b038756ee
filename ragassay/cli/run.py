"""`ragassay run`: the whole pipeline from one YAML file, and its one summary."""

from __future__ import annotations

from pathlib import Path

import typer

from ragassay.cli.common import (
    emit,
    exit_on_failed_assertions,
    exit_unless_logged,
    fail,
    load_config_file,
    out,
    prefect_defaults,
    run_flow,
    section_rule,
)
from ragassay.cli.options import JSON_OPTION
from ragassay.cli.render import (
    REPORTED_ANSWER_METRICS,
    headline_metrics,
    render_answer_costs,
    render_answer_metrics,
    render_answer_models,
    render_assertions,
    render_comparisons,
    render_followups,
    render_judge_calibration,
    render_means,
    render_pairwise,
    render_systems,
    render_warnings,
)
from ragassay.errors import RagassayError

# The Prefect UI asks its API at PREFECT_UI_API_URL (default: port 4200 of the page's host): a
# server on another port or host shows an empty UI unless it is told, so the hint says both.
PREFECT_SERVER_HINT = (
    "PREFECT_UI_API_URL=http://HOST:PORT/api prefect server start --host HOST --port PORT, "
    "then export PREFECT_API_URL=http://HOST:PORT/api before ragassay run"
)


def run(
    config_file: Path = typer.Option(..., "--config", help="The pipeline's YAML file (see data/sample/pipeline.yaml)."),
    assertion: list[str] = typer.Option(
        [],
        "--assert",
        help="Assertion on a configuration's mean, such as 'hybrid:recall@5>=0.8' or 'hybrid:faithfulness>=0.7'; repeatable.",
    ),
    no_cache: bool = typer.Option(
        False, "--no-cache", help="Ask the models again instead of re-using remembered answers and verdicts."
    ),
    as_json: bool = JSON_OPTION,
) -> None:
    """Run the pipeline: ingest → index → golden set → retrieval evaluation → answer evaluation,
    as one Prefect flow run and one MLflow batch. The file is checked before any work starts.
    Each stage's results are printed as the stage ends, then the whole summary; with --json, only
    the final JSON document is printed. Exit code 1 when an --assert bound fails."""
    from ragassay.config import PipelineConfig, route_assertions
    from ragassay.config_errors import parse_config

    try:
        settings = route_assertions(load_config_file(config_file, pipeline=True), assertion)
        if no_cache:
            settings["cache"] = False
        config = parse_config(PipelineConfig, **settings)
        prefect_defaults()
        from flows.finished import listening_to_stages
        from flows.pipeline import pipeline_flow

        # Each stage's results as it ends, while the next runs (the last one's are the summary's
        # end); --json prints one document at the end, nothing before it.
        last = config.enabled_stages()[-1]
        with listening_to_stages(lambda stage, done: None if as_json or stage == last else render_stage(stage, done)):
            report = run_flow(pipeline_flow, config)
    except RagassayError as error:
        fail(error)

    emit(as_json, report.model_dump(), lambda: render_pipeline(report))
    exit_unless_logged(report)
    exit_on_failed_assertions(report.assertions)


def render_stage(stage: str, report) -> None:
    """One stage's results as it ends: a rule naming it, then what the summary shows of it."""
    section_rule(f"{stage} finished")
    STAGE_RENDERERS[stage](report)


def render_pipeline(report) -> None:
    """Stage times and what came from cache, documents, the golden set, the retrieval and answer
    tables with significance and refusal both ways, gates, warnings, and where to look next."""
    from rich.table import Table

    section_rule("summary")
    table = Table(title=f"pipeline on {report.collection}: {report.seconds:.0f}s")
    for column in ("stage", "seconds", "from cache"):
        table.add_column(column, justify="right" if column == "seconds" else "left")
    for stage in report.stages:
        table.add_row(stage, f"{report.stage_seconds.get(stage, 0):.1f}", report.cache.get(stage, ""))
    out.print(table)
    for stage in ("ingest", "golden", "retrieval", "answers"):
        if getattr(report, stage) is not None:
            STAGE_RENDERERS[stage](getattr(report, stage))
    render_assertions(report.assertions)
    render_warnings(report.warnings)
    if report.kept_in:
        out.print(f"batch {report.batch_id} is not in MLflow: kept in {report.kept_in}", highlight=False)
    else:
        out.print(
            f"MLflow batch {report.batch_id}: " + (report.mlflow_url or f"open it with: {report.mlflow_ui_command}"),
            highlight=False,
        )
    if report.runs_view_url and not report.kept_in:
        out.print(f"its configurations side by side in MLflow's runs list: {report.runs_view_url}", highlight=False)
    out.print(
        "Prefect: "
        + (
            report.prefect_flow_run_url
            or f"flow run {report.prefect_flow_run_id} (to keep runs and see them in the Prefect UI: "
            f"{PREFECT_SERVER_HINT})"
        ),
        highlight=False,
    )


def _render_ingest(ingest) -> None:
    out.print(
        "documents: " + ", ".join(f"{count} {outcome}" for outcome, count in ingest.counts.items()), highlight=False
    )


def _render_index(index) -> None:
    out.print(
        f"index: {index.chunks} chunks, {index.embedded} embedded, {index.reused_embeddings} embeddings reused "
        f"({index.embedding_model_id})",
        highlight=False,
    )


def _render_retrieval(retrieval) -> None:
    ks = sorted({int(m.split("@")[1]) for m in retrieval.metrics if m.startswith("recall@")})
    render_means(f"retrieval: {retrieval.questions} questions", retrieval.means, headline_metrics(ks))
    render_systems(retrieval.model_costs)
    render_comparisons(retrieval.comparisons, [f"ndcg@{max(ks)}", "mrr"])
    render_followups(retrieval.followup_gaps, [f"recall@{min(5, max(ks))}", "mrr"], "retrieval: ")


def _render_answers(answers) -> None:
    render_answer_metrics(
        f"answers: {answers.questions} answerable + {answers.unanswerable} unanswerable", answers.metrics
    )
    render_answer_models(answers.answered_by, answers.judge_model)
    render_judge_calibration(answers.judge_calibration)
    render_answer_costs(answers.metrics)
    render_comparisons(answers.comparisons, REPORTED_ANSWER_METRICS, "answers: ")
    from ragassay.metrics.names import HEADLINE_ANSWER_METRICS

    render_followups(answers.followup_gaps, (*HEADLINE_ANSWER_METRICS, "false_refusal_rate"), "answers: ")
    render_pairwise(answers.pairwise)


def _render_golden(golden) -> None:
    """The golden set's size, what its files added, and the generation's accepted and discarded."""
    from ragassay.pipeline_stages import generation_text

    totals, file_outcome = golden.totals, golden.file
    size = f"golden set: {totals.golden_size} entries"
    if totals.dialogues:
        size += f" and {totals.dialogues} dialogues of {totals.dialogue_turns} turns"
    added = ""
    if file_outcome:
        added = f"golden files: {file_outcome.added} entries added, {file_outcome.already_stored} already stored; "
        if file_outcome.dialogues:
            added += (
                f"{file_outcome.dialogues_added} dialogues added, {file_outcome.dialogues_already_stored} "
                "already stored; "
            )
    out.print(f"{size}. {added}{generation_text(golden)}", highlight=False)


STAGE_RENDERERS = {
    "ingest": _render_ingest,
    "index": _render_index,
    "golden": _render_golden,
    "retrieval": _render_retrieval,
    "answers": _render_answers,
}
