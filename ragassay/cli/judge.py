"""`ragassay judge calibrate`: how far to trust a judge model, measured on human labels."""

from __future__ import annotations

from pathlib import Path

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
    emit,
    fail,
    judge_override,
    out,
)
from ragassay.errors import ConfigError, RagassayError

judge_app = typer.Typer(help="Measure how far to trust a judge model.", no_args_is_help=True)


@judge_app.command("calibrate")
def judge_calibrate(
    labels: Path | None = typer.Option(
        None, "--labels", help="JSONL of {context, statement, label: supported|unsupported} written by people."
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
    ragassay/judge-calibration experiment."""
    from ragassay import tracking
    from ragassay.config import parse_config, workspace_home
    from ragassay.judge.calibration import calibrate_judge, calibrate_pairwise
    from ragassay.llm.registry import ChatModels
    from ragassay.llm.settings import DEFAULT_JUDGE_BACKEND, ChatModelConfig

    try:
        if (labels is None) == (pairwise is None):
            raise ConfigError(
                "give --labels FILE (support verdicts) or --pairwise GOLDEN_FILE (position bias), one of them"
            )
        settings = judge_override(judge_model, judge_backend, judge_path, judge_url, judge_name, judge_api_key_env) or {
            "backend": DEFAULT_JUDGE_BACKEND
        }
        config = parse_config(ChatModelConfig, **settings)
        models = ChatModels()
        if labels is not None:
            report = calibrate_judge(models, config, labels, max_items, seed)
        else:
            report = calibrate_pairwise(models, config, pairwise, max_items, seed)
        models.close()
        report["mlflow_run_id"] = _log(
            tracking, workspace_home(), report, "support" if labels is not None else "pairwise"
        )
    except RagassayError as error:
        fail(error)

    emit(
        as_json, report, (lambda: _render_support(report)) if labels is not None else (lambda: _render_pairwise(report))
    )
    raise typer.Exit(EXIT_OK)


def _figure(value, digits: int = 3) -> str:
    return "undefined" if value is None else f"{value:.{digits}f}"


def _log(tracking, home: Path, report: dict, kind: str) -> str:
    import polars as pl

    scalar = {
        key: value for key, value in report.items() if isinstance(value, (int, float)) and not isinstance(value, bool)
    }
    params = {
        key: str(report[key])
        for key in (
            "judge_model",
            "prompt_version",
            "labels_file",
            "golden_file",
            "support_threshold",
            "max_items",
            "seed",
        )
        if key in report
    }
    metrics = {
        **{key: value for key, value in scalar.items() if key not in ("max_items", "seed", "support_threshold")},
        **report["usage"],
    }
    rows = pl.DataFrame(report["rows"], infer_schema_length=None)
    return tracking.log_calibration(home, f"judge-calibration-{kind}", params, metrics, rows, report.get("confusion"))


def _render_support(report: dict) -> None:
    out.print(
        f"judge {report['judge_model']} ({report['prompt_version']}, supported when P >= {report['support_threshold']}) "
        f"on {report['labelled']} labelled statements from {report['labels_file']}",
        highlight=False,
    )
    if report["too_long"]:
        out.print(
            f"{report['too_long']} more did not fit the judge's context and were left out (never cut)",
            style="yellow",
            highlight=False,
        )
    out.print(
        f"accuracy {_figure(report['accuracy'])}   balanced accuracy {_figure(report['balanced_accuracy'])}   "
        f"Cohen's kappa {_figure(report['kappa'])} (95% CI {_figure(report['kappa_ci_low'])} to {_figure(report['kappa_ci_high'])})",
        highlight=False,
    )
    out.print(
        f"unreadable {report['unreadable_rate']:.1%} ({report['labelled'] - report['readable']} of {report['labelled']})   "
        f"{_figure(report['seconds_per_verdict'], 1)} s per verdict",
        highlight=False,
    )
    confusion = report["confusion"]
    table = Table(title="confusion matrix (readable verdicts)")
    for column in ("label \\ judge", "supported", "unsupported", "recall"):
        table.add_column(column, justify="right")
    table.add_row(
        "supported",
        str(confusion["supported_judged_supported"]),
        str(confusion["supported_judged_unsupported"]),
        _figure(report["recall_supported"]),
    )
    table.add_row(
        "unsupported",
        str(confusion["unsupported_judged_supported"]),
        str(confusion["unsupported_judged_unsupported"]),
        _figure(report["recall_unsupported"]),
    )
    table.add_row("precision", _figure(report["precision_supported"]), _figure(report["precision_unsupported"]), "")
    out.print(table)
    out.print(
        "kappa 1 is perfect agreement and 0 no better than chance; below about 0.6, read this judge's scores with caution.",
        style="dim",
    )
    out.print(
        f"MLflow run {report['mlflow_run_id']} (experiment ragassay/judge-calibration)", style="dim", highlight=False
    )


def _render_pairwise(report: dict) -> None:
    out.print(
        f"judge {report['judge_model']} ({report['prompt_version']}) on {report['pairs']} answer pairs from {report['golden_file']}, each asked in both orders",
        highlight=False,
    )
    out.print(
        f"flip rate {_figure(report['flip_rate'])} (the verdict changed when the answers swapped places)   "
        f"accuracy {_figure(report['accuracy'])} (named the better answer in both orders)   ties {report['ties']}   "
        f"unreadable {report['unreadable_rate']:.1%}   {_figure(report['seconds_per_verdict'], 1)} s per verdict",
        highlight=False,
    )
    out.print(
        f"MLflow run {report['mlflow_run_id']} (experiment ragassay/judge-calibration)", style="dim", highlight=False
    )
