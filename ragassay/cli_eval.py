"""`ragassay eval retrieval` and `ragassay runs`: evaluate configurations, then find and compare runs."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from ragassay.cli_common import EXIT_OK, EXIT_PARTIAL, JSON_OPTION, emit, err, fail, out, prefect_defaults
from ragassay.config import SEARCH_MODES, workspace_home
from ragassay.errors import ConfigError, RagassayError

eval_app = typer.Typer(help="Evaluate retrieval (and, later, answers) on golden sets.", no_args_is_help=True)
runs_app = typer.Typer(help="Find, show and compare evaluation runs stored in MLflow.", no_args_is_help=True)


def load_config_file(path: Path) -> dict:
    """A YAML or JSON file holding a list of configurations, or a mapping of evaluation settings."""
    import yaml

    if not path.is_file():
        raise ConfigError(f"configuration file {path} does not exist")
    try:
        loaded = json.loads(path.read_text()) if path.suffix == ".json" else yaml.safe_load(path.read_text())
    except (json.JSONDecodeError, yaml.YAMLError) as error:
        raise ConfigError(f"{path} is not valid {'JSON' if path.suffix == '.json' else 'YAML'}: {error}") from error
    if isinstance(loaded, list):
        return {"configurations": loaded}
    if not isinstance(loaded, dict):
        raise ConfigError(f"{path} must hold a list of configurations or a mapping with 'configurations'")
    return loaded


def headline_metrics(ks: list[int]) -> list[str]:
    return [f"recall@{k}" for k in ks] + [f"ndcg@{max(ks)}", "mrr"]


def render_means(title: str, means: dict[str, dict[str, float]], columns: list[str]) -> None:
    table = Table(title=title)
    table.add_column("configuration", no_wrap=True)
    for column in columns:
        table.add_column(column, justify="right")
    for label, values in means.items():
        table.add_row(label, *(f"{values[c]:.4f}" if c in values else "-" for c in columns))
    out.print(table)


def render_comparisons(comparisons: list[dict], metrics: list[str]) -> None:
    shown = [c for c in comparisons if c["metric"] in metrics]
    if not shown:
        return
    table = Table(title="paired differences (b - a): mean, bootstrap 95% CI, randomization p")
    for column in ("a", "b", "metric", "difference", "95% CI", "p"):
        table.add_column(column, justify="right" if column in ("difference", "p") else "left")
    for c in shown:
        table.add_row(
            c["configuration_a"], c["configuration_b"], c["metric"], f"{c['mean_difference']:+.4f}",
            f"[{c['ci_low']:+.4f}, {c['ci_high']:+.4f}]", f"{c['p_value']:.4f}",
        )
    out.print(table)


@eval_app.command("retrieval")
def eval_retrieval(
    collection: list[str] = typer.Option([], "--collection", "-c", help="Collection whose golden set is evaluated; repeatable."),
    configs: Optional[Path] = typer.Option(None, "--configs", help="YAML/JSON: a list of configurations, or a mapping of these settings."),
    mode: list[str] = typer.Option([], "--mode", help=f"Add a configuration of this search type ({', '.join(SEARCH_MODES)}); repeatable."),
    ks: Optional[str] = typer.Option(None, "--ks", help="Cut-offs, comma-separated (default 1,3,5,10)."),
    max_questions: Optional[int] = typer.Option(None, help="Evaluate a seeded sample of at most this many questions."),
    seed: Optional[int] = typer.Option(None, help="Seed of the question sample and the significance tests (default 0)."),
    assertion: list[str] = typer.Option([], "--assert", help="Quality gate such as 'hybrid:recall@5>=0.8'; repeatable."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Run every golden question through search under each configuration; log one MLflow batch.

    Without --configs or --mode, three configurations run: fulltext, semantic and hybrid.
    Exit code 1 when an --assert bound fails.
    """
    from ragassay.config import RetrievalEvalConfig, parse_config

    try:
        settings = load_config_file(configs) if configs else {}
        if collection:
            settings["collections"] = collection
        if mode:
            settings["configurations"] = [{"label": m, "search_type": m} for m in mode]
        settings.setdefault("configurations", [{"label": m, "search_type": m} for m in SEARCH_MODES])
        if ks:
            try:
                settings["ks"] = [int(k) for k in ks.split(",")]
            except ValueError:
                raise ConfigError(f"--ks {ks!r} must be comma-separated integers") from None
        if max_questions is not None:
            settings["max_questions"] = max_questions
        if seed is not None:
            settings["seed"] = seed
        settings["assertions"] = [*settings.get("assertions", []), *assertion]
        if not settings.get("collections"):
            raise ConfigError("give at least one --collection (or 'collections' in --configs)")
        config = parse_config(RetrievalEvalConfig, **settings)
        prefect_defaults()
        from flows.eval_retrieval import eval_retrieval_flow

        report = eval_retrieval_flow(config)
    except RagassayError as error:
        fail(error)

    def render() -> None:
        render_means(f"batch {report.batch_id}: {report.questions} questions", report.means, headline_metrics(list(config.ks)))
        render_comparisons(report.comparisons, [f"ndcg@{max(config.ks)}", "mrr"])
        for warning in report.warnings:
            out.print(f"[yellow]warning[/yellow] {warning}", highlight=False)
        for result in report.assertions:
            status = "[green]passed[/green]" if result["passed"] else "[red]FAILED[/red]"
            out.print(f"assert {result['assertion']}: {status} (measured {result['value']:.4f})", highlight=False)
        out.print(f"MLflow experiment {report.experiment!r}; open it with:\n  {report.ui_command}", highlight=False)

    emit(as_json, report.model_dump(), render)
    failed = [r for r in report.assertions if not r["passed"]]
    if failed:
        err.print("quality gate failed: " + "; ".join(f"{r['assertion']} (measured {r['value']:.4f})" for r in failed), highlight=False)
        raise typer.Exit(EXIT_PARTIAL)
    raise typer.Exit(EXIT_OK)


def _run_row(run) -> dict:
    from tasks import tracking

    tags = run.data.tags
    return {
        "run_id": run.info.run_id,
        "started": datetime.fromtimestamp(run.info.start_time / 1000, timezone.utc).isoformat(timespec="seconds"),
        "kind": tags.get(tracking.TAG_KIND),
        "batch_id": tags.get(tracking.TAG_BATCH),
        "role": tags.get(tracking.TAG_ROLE),
        "configuration": tags.get(tracking.TAG_LABEL),
        "collections": tags.get(tracking.TAG_COLLECTIONS),
        "status": run.info.status,
        "metrics": {tracking.display_name(k): v for k, v in run.data.metrics.items()},
    }


@runs_app.command("list")
def runs_list(
    batch: Optional[str] = typer.Option(None, help="Only runs of this batch id."),
    collection: Optional[str] = typer.Option(None, "--collection", "-c", help="Only runs over this collection."),
    as_json: bool = JSON_OPTION,
) -> None:
    """List evaluation runs, newest first (batches and their configurations)."""
    from tasks import tracking

    rows = [_run_row(run) for run in tracking.find_runs(workspace_home(), batch_id=batch, collection=collection)]

    def render() -> None:
        out.print(f"{len(rows)} runs, newest first")
        for row in rows:
            headline = "  ".join(f"{k} {v:.3f}" for k, v in row["metrics"].items() if k in ("recall@5", "ndcg@10", "mrr"))
            out.print(
                f"{row['started'][:16].replace('T', ' ')}  {row['kind']:<9} batch {row['batch_id']}  "
                f"{row['configuration'] or '(batch)':<12} {row['run_id']}  ({row['collections']})  {headline}",
                highlight=False,
            )

    emit(as_json, rows, render)


@runs_app.command("show")
def runs_show(run_id: str = typer.Argument(..., help="MLflow run id."), as_json: bool = JSON_OPTION) -> None:
    """Show one run: tags, params and metrics."""
    from mlflow.exceptions import MlflowException

    from tasks import tracking

    try:
        run = tracking.client(workspace_home()).get_run(run_id)
    except MlflowException:
        fail(RagassayError(f"no run {run_id!r} in {tracking.tracking_uri(workspace_home())}"))
    payload = {**_run_row(run), "params": dict(run.data.params), "tags": dict(run.data.tags)}

    def render() -> None:
        out.print(f"run {run_id} ({payload['kind']}, batch {payload['batch_id']}, {payload['configuration'] or 'batch parent'})")
        for name, value in sorted(payload["params"].items()):
            out.print(f"  param {name} = {value}", highlight=False)
        for name, value in payload["metrics"].items():
            out.print(f"  metric {name} = {value:.6f}", highlight=False)

    emit(as_json, payload, render)


@runs_app.command("compare")
def runs_compare(batch_id: str = typer.Argument(..., help="Batch id printed by `eval`."), as_json: bool = JSON_OPTION) -> None:
    """Configurations × metrics of one batch, with the pairwise differences logged beside them."""
    from tasks import tracking

    home = workspace_home()
    runs = tracking.find_runs(home, batch_id=batch_id)
    children = [r for r in runs if r.data.tags.get(tracking.TAG_ROLE) == "configuration"]
    parents = [r for r in runs if r.data.tags.get(tracking.TAG_ROLE) == "batch"]
    if not children:
        fail(RagassayError(f"no runs of batch {batch_id!r}; `ragassay runs list` shows the batches"))
    means = {r.data.tags[tracking.TAG_LABEL]: {tracking.display_name(k): v for k, v in r.data.metrics.items()} for r in reversed(children)}
    comparisons_table = tracking.download_table(home, parents[0].info.run_id, "comparisons") if parents else None
    comparisons = comparisons_table.to_dicts() if comparisons_table is not None else []
    metric_names = [m for m in next(iter(means.values())) if m != "questions_scored"]

    def render() -> None:
        render_means(f"batch {batch_id}", means, metric_names)
        ks = sorted({int(m.split("@")[1]) for m in metric_names if m.startswith("ndcg@")})
        render_comparisons(comparisons, [f"ndcg@{max(ks)}", "mrr"] if ks else ["mrr"])

    emit(as_json, {"batch_id": batch_id, "means": means, "comparisons": comparisons}, render)
