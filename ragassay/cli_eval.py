"""`ragassay eval retrieval` and `ragassay runs`: evaluate configurations, then find and compare runs."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from ragassay.cli_common import (
    EXIT_OK,
    EXIT_PARTIAL,
    JSON_OPTION,
    JUDGE_BACKEND_OPTION,
    JUDGE_NAME_OPTION,
    JUDGE_PATH_OPTION,
    JUDGE_URL_OPTION,
    emit,
    err,
    fail,
    judge_override,
    out,
    prefect_defaults,
)
from ragassay.config import SEARCH_MODES, workspace_home
from ragassay.errors import ConfigError, RagassayError

eval_app = typer.Typer(help="Evaluate retrieval and answers on golden sets.", no_args_is_help=True)
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


ANSWER_COLUMNS = {
    "faithfulness": ("faithfulness", "faithfulness_scored"),
    "context recall": ("context_recall", "context_recall_scored"),
    "answer relevancy": ("answer_relevancy", "answer_relevancy_scored"),
    "citation precision": ("citation_precision", "citation_precision_scored"),
    "refusal recall": ("refusal_recall", "unanswerable_questions"),
    "false refusals": ("false_refusal_rate", "answerable_questions"),
}


def render_answer_metrics(title: str, metrics: dict[str, dict[str, float]]) -> None:
    """Each answer metric with the number of questions behind it; '-' where none could be scored.
    Metrics are rows and configurations columns, so long metric names fit a narrow terminal."""
    table = Table(title=title, caption="value (questions scored)")
    table.add_column("metric", no_wrap=True)
    for label in metrics:
        table.add_column(label, justify="right", no_wrap=True)
    for title_, (name, count) in ANSWER_COLUMNS.items():
        cells = []
        for values in metrics.values():
            scored = int(values.get(count, 0))
            cells.append(f"{values[name]:.3f} ({scored})" if name in values else f"- ({scored})")
        table.add_row(title_, *cells)
    out.print(table)


COST_ROWS = {
    "answer model calls": lambda v: f"{v['answer_model_calls']:.0f}",
    "answer model tokens": lambda v: f"{v['answer_model_prompt_tokens'] + v['answer_model_completion_tokens']:,.0f}",
    "answer model seconds": lambda v: f"{v['answer_model_seconds']:.1f}",
    "judge calls": lambda v: f"{v['judge_calls']:.0f}",
    "judge tokens": lambda v: f"{v['judge_prompt_tokens'] + v['judge_completion_tokens']:,.0f}",
    "judge seconds": lambda v: f"{v['judge_seconds']:.1f}",
    "verdicts reused": lambda v: f"{v.get('judge_reused_verdicts', 0):.0f}",
}


def render_answer_costs(metrics: dict[str, dict[str, float]]) -> None:
    table = Table(title="model calls and time")
    table.add_column("cost", no_wrap=True)
    for label in metrics:
        table.add_column(label, justify="right", no_wrap=True)
    for name, cell in COST_ROWS.items():
        table.add_row(name, *(cell(values) for values in metrics.values()))
    out.print(table)


def render_pairwise(pairwise: list[dict]) -> None:
    """One line per pair: the judge's preference, asked in both orders."""
    for p in pairwise:
        a, b = p["configuration_a"], p["configuration_b"]
        out.print(
            f"pairwise {a} vs {b} on {p['questions']} questions: {a} wins {p['wins_a']}, ties {p['ties']}, {b} wins {p['wins_b']}, "
            f"inconsistent {p['inconsistent']} (share {p['inconsistent_share']:.2f}), unreadable {p['unreadable']}",
            highlight=False,
        )


def render_answer_warnings(warnings: list[dict]) -> None:
    out.print(f"{len(warnings)} warnings" + (":" if warnings else ""), highlight=False)
    for w in warnings:
        where = " ".join(part for part in (w["configuration"], w["metric"], w["question"]) if part)
        out.print(f"[yellow]warning[/yellow] {where}: {w['reason']}", highlight=False)


def render_estimate(estimate: dict) -> None:
    out.print(
        f"{estimate['questions']} answerable and {estimate['unanswerable']} unanswerable questions "
        f"({estimate['reference_sentences']} reference-answer sentences)", highlight=False,
    )
    table = Table(title="estimate before running: expected model calls (at most), tokens, seconds")
    for column in ("configuration", "answer calls", "judge calls", "tokens", "seconds"):
        table.add_column(column, justify="left" if column == "configuration" else "right")

    def number(value) -> str:
        return "unknown" if value is None else f"{value:,}"

    for row in estimate["configurations"]:
        answer, judge = row["answer"], row["judge"]
        tokens = None if None in (answer["tokens"], judge["tokens"]) else answer["tokens"] + judge["tokens"]
        seconds = None if None in (answer["seconds"], judge["seconds"]) else round(answer["seconds"] + judge["seconds"], 1)
        table.add_row(row["configuration"], f"{answer['calls']} ({answer['at_most']})", f"{judge['calls']} ({judge['at_most']})", number(tokens), number(seconds))
    pairwise = estimate["pairwise"]
    if pairwise["calls"]:
        table.add_row("pairwise", "", f"{pairwise['calls']} ({pairwise['at_most']})", number(pairwise["tokens"]), number(pairwise["seconds"]))
    out.print(table)
    for row in estimate["configurations"]:
        out.print(f"answer model rates ({row['configuration']}): {row['answer_rate_basis']}", style="dim", highlight=False)
    out.print(f"judge rates: {estimate['judge_rate_basis']}", style="dim", highlight=False)
    total = estimate["total_seconds"]
    out.print(f"total: {estimate['total_calls']:,} model calls, about {'an unknown time' if total is None else f'{total / 60:.1f} minutes'}", highlight=False)


@eval_app.command("answers")
def eval_answers(
    collection: list[str] = typer.Option([], "--collection", "-c", help="Collection whose golden set is answered; repeatable."),
    configs: Optional[Path] = typer.Option(None, "--configs", help="YAML/JSON: a list of answer configurations, or a mapping of these settings."),
    mode: list[str] = typer.Option([], "--mode", help=f"Add a configuration of this search type ({', '.join(SEARCH_MODES)}); repeatable."),
    groundedness: str = typer.Option("strict", help="Groundedness of the --mode configurations: strict or off."),
    unanswerable: Optional[Path] = typer.Option(None, help="JSONL/CSV of questions the corpus cannot answer (id, question)."),
    max_questions: Optional[int] = typer.Option(None, help="Answer a seeded sample of at most this many golden questions."),
    seed: Optional[int] = typer.Option(None, help="Seed of the question sample (default 0)."),
    no_pairwise: bool = typer.Option(False, "--no-pairwise", help="Skip the pairwise comparison of configurations."),
    estimate: bool = typer.Option(False, "--estimate", help="Print model calls, tokens and time, and run nothing."),
    judge_backend: Optional[str] = JUDGE_BACKEND_OPTION,
    judge_path: Optional[Path] = JUDGE_PATH_OPTION,
    judge_url: Optional[str] = JUDGE_URL_OPTION,
    judge_name: Optional[str] = JUDGE_NAME_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Answer golden (and unanswerable) questions under each configuration, judge the answers,
    compare configurations pairwise, and log one MLflow batch.

    Without --configs or --mode, one configuration runs: hybrid retrieval, strict groundedness.
    """
    from ragassay.config import AnswerEvalConfig, parse_config

    try:
        settings = load_config_file(configs) if configs else {}
        if collection:
            settings["collections"] = collection
        if mode:
            settings["configurations"] = [{"label": m, "search_type": m, "groundedness": groundedness} for m in mode]
        settings.setdefault("configurations", [{"label": "hybrid", "search_type": "hybrid", "groundedness": groundedness}])
        for key, value in (("unanswerable", unanswerable), ("max_questions", max_questions), ("seed", seed)):
            if value is not None:
                settings[key] = value
        if no_pairwise:
            settings["pairwise"] = False
        judge = judge_override(judge_backend, judge_path, judge_url, judge_name)
        if judge is not None:
            settings["judge"] = judge
        if not settings.get("collections"):
            raise ConfigError("give at least one --collection (or 'collections' in --configs)")
        config = parse_config(AnswerEvalConfig, **settings)
        if estimate:
            from ragassay.answer_estimate import estimate_answer_eval

            figures = estimate_answer_eval(config)
        else:
            prefect_defaults()
            from flows.eval_answers import eval_answers_flow

            report = eval_answers_flow(config)
    except RagassayError as error:
        fail(error)
    if estimate:
        emit(as_json, figures, lambda: render_estimate(figures))
        raise typer.Exit(EXIT_OK)

    def render() -> None:
        render_answer_metrics(
            f"batch {report.batch_id}: {report.questions} answerable + {report.unanswerable} unanswerable questions, judge {report.judge_model}",
            report.metrics,
        )
        render_answer_costs(report.metrics)
        render_pairwise(report.pairwise)
        render_answer_warnings(report.warnings)
        out.print(f"{report.seconds:.0f}s. MLflow experiment {report.experiment!r}; open it with:\n  {report.ui_command}", highlight=False)

    emit(as_json, report.model_dump(), render)
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


# What `runs list` shows of each kind of run: retrieval, answers and cases share one list.
COUNTS = ("cases_passed", "cases_failed")
HEADLINE_METRICS = ("recall@5", "ndcg@10", "mrr", "faithfulness", "context_recall", "refusal_recall", "false_refusal_rate", *COUNTS)


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
            headline = "  ".join(f"{k} {v:.3f}" if k not in COUNTS else f"{k} {v:.0f}" for k, v in row["metrics"].items() if k in HEADLINE_METRICS)
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
    if children[0].data.tags.get(tracking.TAG_KIND) == "answers":
        _compare_answer_batch(home, batch_id, parents[0].info.run_id if parents else None, means, as_json)
        return
    comparisons_table = tracking.download_table(home, parents[0].info.run_id, "comparisons") if parents else None
    comparisons = comparisons_table.to_dicts() if comparisons_table is not None else []
    metric_names = [m for m in next(iter(means.values())) if m != "questions_scored"]

    def render() -> None:
        render_means(f"batch {batch_id}", means, metric_names)
        ks = sorted({int(m.split("@")[1]) for m in metric_names if m.startswith("ndcg@")})
        render_comparisons(comparisons, [f"ndcg@{max(ks)}", "mrr"] if ks else ["mrr"])

    emit(as_json, {"batch_id": batch_id, "means": means, "comparisons": comparisons}, render)


def _compare_answer_batch(home: Path, batch_id: str, parent_run_id: str | None, metrics: dict[str, dict[str, float]], as_json: bool) -> None:
    """An answer batch: metrics with their scored counts, costs, and the pairwise tallies."""
    from tasks import tracking
    from tasks.answer_metrics import tally_pairs

    pairwise_table = tracking.download_table(home, parent_run_id, "pairwise") if parent_run_id else None
    pairwise = []
    if pairwise_table is not None:
        for (a, b), rows in pairwise_table.group_by(["configuration_a", "configuration_b"], maintain_order=True):
            pairwise.append({"configuration_a": a, "configuration_b": b, **tally_pairs(rows["outcome"].to_list())})

    def render() -> None:
        render_answer_metrics(f"batch {batch_id}", metrics)
        render_answer_costs(metrics)
        render_pairwise(pairwise)

    emit(as_json, {"batch_id": batch_id, "kind": "answers", "metrics": metrics, "pairwise": pairwise}, render)
