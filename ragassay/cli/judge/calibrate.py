"""`ragassay judge calibrate`: how far to trust a judge model, measured on human labels."""

from __future__ import annotations

from pathlib import Path

import typer

from ragassay.cli.common import EXIT_OK, emit, fail
from ragassay.cli.judge.app import judge_app
from ragassay.cli.judge.budget import budget_request
from ragassay.cli.judge.calibration_tables import render_pairwise, render_support
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


@judge_app.command("calibrate")
def judge_calibrate(
    labels: Path | None = typer.Option(
        None,
        "--labels",
        help="JSONL of {context, statement, label: supported|unsupported} written by people; with --collection, "
        "also the judge as that collection's evaluations use it (its aligned judge), on labels not among its own.",
    ),
    collection: str | None = typer.Option(
        None,
        "--collection",
        "-c",
        help="Instead: the labels people gave this collection's verdicts (`ragassay judge label`).",
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
    target_width: float | None = typer.Option(
        None,
        "--target-width",
        min=0.001,
        max=1.0,
        help="With --collection: how many more labels would narrow a batch's corrected faithfulness interval "
        "to this width.",
    ),
    batch: str | None = typer.Option(
        None, "--batch", help="With --target-width: the batch (default: the one the latest label came from)."
    ),
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
    ragassay/judge-calibration experiment; with --collection, in the collection's experiment
    beside its batches, with the sensitivity and specificity the judge-corrected estimates use."""
    from ragassay import tracking
    from ragassay.config import workspace_home
    from ragassay.config_errors import parse_config
    from ragassay.judge.calibration.calibrate import CalibrationRequest, calibrate
    from ragassay.judge.calibration.log import log_calibration_report
    from ragassay.judge.calibration.reports import CollectionCalibration
    from ragassay.llm.settings import DEFAULT_JUDGE_BACKEND, ChatModelConfig
    from ragassay.store.workspace import collection_paths

    try:
        _check_calibrate_options(labels, collection, pairwise, target_width, batch)
        settings = judge_override(judge_model, judge_backend, judge_path, judge_url, judge_name, judge_api_key_env) or {
            "backend": DEFAULT_JUDGE_BACKEND
        }
        config = parse_config(ChatModelConfig, **settings)
        home = workspace_home()
        if collection is not None:
            collection_paths(home, collection)  # a missing collection is named before its budget's batch is sought
        budget = budget_request(home, collection, batch, target_width) if target_width is not None else None
        report = calibrate(home, config, CalibrationRequest(labels, collection, pairwise, max_items, seed, budget))
        report = report.model_copy(
            update={
                "mlflow_run_id": log_calibration_report(
                    home, report, "pairwise" if pairwise is not None else "support"
                ),
                "experiment": tracking.experiment_name([collection])
                if isinstance(report, CollectionCalibration)
                else tracking.CALIBRATION_EXPERIMENT,
            }
        )
    except RagassayError as error:
        fail(error)

    emit(
        as_json,
        report.model_dump(mode="json"),
        (lambda: render_support(report)) if pairwise is None else (lambda: render_pairwise(report)),
    )
    raise typer.Exit(EXIT_OK)


def _check_calibrate_options(
    labels: Path | None, collection: str | None, pairwise: Path | None, target_width: float | None, batch: str | None
) -> None:
    """ConfigError unless the options name one calibration: --labels, --collection (with its
    budget's --target-width and --batch), --pairwise, or --labels with --collection."""
    if (target_width is not None or batch is not None) and (collection is None or labels is not None):
        raise ConfigError("--target-width and --batch go with --collection NAME alone")
    if batch is not None and target_width is None:
        raise ConfigError("--batch names the batch of --target-width's budget: give --target-width too")
    if sum(option is not None for option in (labels, pairwise, collection)) != 1 and not (
        labels is not None and collection is not None and pairwise is None
    ):
        raise ConfigError(
            "give one of --labels FILE (support verdicts), --collection NAME (its people's labels) or "
            "--pairwise GOLDEN_FILE (position bias); --labels FILE --collection NAME reports the judge as "
            "that collection's evaluations use it beside the plain judge"
        )
