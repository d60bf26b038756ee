"""`ragassay cases run SUITE`: evaluation cases as a CI gate for answers."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from ragassay.cli.common import EXIT_OK, EXIT_PARTIAL, emit, err, fail, out, prefect_defaults, run_flow, styled
from ragassay.cli.options import (
    JSON_OPTION,
    JUDGE_API_KEY_ENV_OPTION,
    JUDGE_BACKEND_OPTION,
    JUDGE_MODEL_OPTION,
    JUDGE_NAME_OPTION,
    JUDGE_PATH_OPTION,
    JUDGE_URL_OPTION,
    judge_override,
)
from ragassay.errors import ConfigError, RagassayError

cases_app = typer.Typer(help="Run suites of evaluation cases (a CI gate for answers).", no_args_is_help=True)


@cases_app.command("run")
def cases_run(
    suite_file: Path = typer.Argument(
        ..., help="Suite file (YAML or JSON): collections, optional answer and judge settings, cases."
    ),
    judge_model: str | None = JUDGE_MODEL_OPTION,
    judge_backend: str | None = JUDGE_BACKEND_OPTION,
    judge_path: Path | None = JUDGE_PATH_OPTION,
    judge_url: str | None = JUDGE_URL_OPTION,
    judge_name: str | None = JUDGE_NAME_OPTION,
    judge_api_key_env: str | None = JUDGE_API_KEY_ENV_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Answer each case's input and run its checks (contains, excludes, judge, grounded).

    Exit code 1 when any case fails, so the command works as a CI gate. The suite is logged as
    one MLflow run.
    """
    from ragassay.cli.common import load_config_file
    from ragassay.config_errors import parse_config
    from ragassay.gates.suite import CaseSuite

    try:
        settings = load_config_file(suite_file)
        if "configurations" in settings:
            raise ConfigError(f"{suite_file} must be a mapping with 'collections' and 'cases', not a list")
        judge = judge_override(judge_model, judge_backend, judge_path, judge_url, judge_name, judge_api_key_env)
        if judge is not None:
            settings["judge"] = judge
        suite = parse_config(CaseSuite, **settings)
        prefect_defaults()
        from flows.run_cases import run_cases_flow

        report = run_flow(run_cases_flow, suite)
    except RagassayError as error:
        fail(error)

    def render() -> None:
        table = Table(
            title=f"suite {report.suite}: {report.passed} passed, {report.failed} failed (judge {report.judge_model})"
        )
        table.add_column("case", no_wrap=True)
        table.add_column("result", no_wrap=True)
        table.add_column("checks (judge score and reason; grounded claims and passages)", overflow="fold")
        for case in report.cases:
            result = styled(("pass", "green") if case["passed"] else ("FAIL", "red"))
            if case["judge_error"]:
                result.append("\njudge error", style="red")
            result.append(f"\n{case['outcome']}")
            table.add_row(case["case_id"], result, case["checks"])
        out.print(table)
        grounded = report.grounded
        if grounded is not None:
            from ragassay.evaluation.interval_text import corrected_text

            corrected = (
                corrected_text(grounded).replace("corrected", "judge-corrected", 1) or "no judge-corrected estimate"
            )
            out.print(
                f"grounded claims over {grounded.cases} cases: {grounded.supported:.3f} judged supported; {corrected}",
                highlight=False,
            )
            for note in grounded.notes:
                out.print(styled(("note", "yellow"), f" {note}"), highlight=False)
        out.print(f"MLflow run {report.run_id} ({report.tracking_uri})", style="dim", highlight=False)

    emit(as_json, report.model_dump(), render)
    if report.failed:
        err.print(
            f"{report.failed} of {report.failed + report.passed} cases failed"
            + (f" ({report.judge_errors} with judge errors)" if report.judge_errors else ""),
            highlight=False,
        )
        raise typer.Exit(EXIT_PARTIAL)
    raise typer.Exit(EXIT_OK)
