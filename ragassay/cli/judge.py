"""`ragassay judge calibrate`: how far to trust a judge model, measured on human labels."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from ragassay.cli.common import (
    EXIT_OK,
    JSON_OPTION,
    JUDGE_BACKEND_OPTION,
    JUDGE_NAME_OPTION,
    JUDGE_PATH_OPTION,
    JUDGE_URL_OPTION,
    emit,
    fail,
    judge_override,
    out,
)
from ragassay.errors import RagassayError

judge_app = typer.Typer(help="Measure how far to trust a judge model.", no_args_is_help=True)


@judge_app.command("calibrate")
def judge_calibrate(
    labels: Path = typer.Option(..., "--labels", help="JSONL of {context, statement, label: supported|unsupported} written by people."),
    judge_backend: Optional[str] = JUDGE_BACKEND_OPTION,
    judge_path: Optional[Path] = JUDGE_PATH_OPTION,
    judge_url: Optional[str] = JUDGE_URL_OPTION,
    judge_name: Optional[str] = JUDGE_NAME_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """The judge's support verdicts against human labels: accuracy, Cohen's kappa, confusion matrix
    and unreadable rate. Tells how far to trust the judge before trusting its scores."""
    from ragassay.config import parse_config
    from ragassay.judge.calibration import calibrate_judge
    from ragassay.llm.models import ChatModelConfig, ChatModels

    try:
        config = parse_config(ChatModelConfig, **(judge_override(judge_backend, judge_path, judge_url, judge_name) or {}))
        report = calibrate_judge(ChatModels(), config, labels)
    except RagassayError as error:
        fail(error)

    def render() -> None:
        def figure(value) -> str:
            return "undefined (no readable verdicts)" if value is None else f"{value:.3f}"

        out.print(f"judge {report['judge_model']} ({report['prompt_version']}) on {report['labelled']} labelled statements from {labels}", highlight=False)
        out.print(f"accuracy {figure(report['accuracy'])}   Cohen's kappa {figure(report['kappa'])}   "
                  f"unreadable {report['unreadable_rate']:.1%} ({report['labelled'] - report['readable']} of {report['labelled']})", highlight=False)
        confusion = report["confusion"]
        table = Table(title="confusion matrix (readable verdicts)")
        for column in ("label \\ judge", "supported", "unsupported"):
            table.add_column(column, justify="right")
        table.add_row("supported", str(confusion["supported_judged_supported"]), str(confusion["supported_judged_unsupported"]))
        table.add_row("unsupported", str(confusion["unsupported_judged_supported"]), str(confusion["unsupported_judged_unsupported"]))
        out.print(table)
        out.print("kappa 1 is perfect agreement and 0 no better than chance; below about 0.6, read this judge's scores with caution.", style="dim")

    emit(as_json, report, render)
    raise typer.Exit(EXIT_OK)
