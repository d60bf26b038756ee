"""`ragassay eval retrieval` and `ragassay eval answers`: evaluate configurations on golden sets."""

from __future__ import annotations

from pathlib import Path

import typer

from ragassay.answer.settings import AnswerSettings
from ragassay.cli.common import (
    EXIT_OK,
    emit,
    exit_on_failed_assertions,
    exit_unless_logged,
    fail,
    load_config_file,
    out,
    prefect_defaults,
    run_flow,
    styled,
)
from ragassay.cli.options import (
    DASK_ADDRESS_OPTION,
    JSON_OPTION,
    JUDGE_API_KEY_ENV_OPTION,
    JUDGE_BACKEND_OPTION,
    JUDGE_MODEL_OPTION,
    JUDGE_NAME_OPTION,
    JUDGE_PATH_OPTION,
    JUDGE_URL_OPTION,
    TASK_RUNNER_OPTION,
    WORKERS_OPTION,
    field_option,
    given_over,
    judge_override,
    override_option,
    with_task_runner,
)
from ragassay.cli.render import (
    REPORTED_ANSWER_METRICS,
    headline_metrics,
    render_answer_costs,
    render_answer_metrics,
    render_answer_models,
    render_assertions,
    render_comparisons,
    render_estimate,
    render_followups,
    render_judge_calibration,
    render_means,
    render_mlflow_location,
    render_pairwise,
    render_systems,
    render_warnings,
)
from ragassay.config import AnswerEvalSettings, RetrievalSettings
from ragassay.errors import ConfigError, RagassayError
from ragassay.search.settings import SEARCH_TYPES

eval_app = typer.Typer(help="Evaluate retrieval and answers on golden sets.", no_args_is_help=True)


@eval_app.command("retrieval")
def eval_retrieval(
    collection: list[str] = typer.Option(
        [], "--collection", "-c", help="Collection whose golden set is evaluated; repeatable."
    ),
    configs: Path | None = typer.Option(
        None, "--configs", help="YAML/JSON: a list of configurations, or a mapping of these settings."
    ),
    mode: list[str] = typer.Option(
        [], "--mode", help=f"Add a configuration of this search type ({', '.join(SEARCH_TYPES)}); repeatable."
    ),
    ks: str | None = override_option(RetrievalSettings, "ks", "--ks", metavar="K,K,..."),
    max_questions: int | None = override_option(RetrievalSettings, "max_questions"),
    max_dialogues: int | None = override_option(RetrievalSettings, "max_dialogues"),
    seed: int | None = override_option(RetrievalSettings, "seed"),
    assertion: list[str] = typer.Option(
        [], "--assert", help="Assertion on a configuration's mean, such as 'hybrid:recall@5>=0.8'; repeatable."
    ),
    save_records: Path | None = field_option(RetrievalSettings, "save_records", "--save-records"),
    max_rank: int | None = override_option(RetrievalSettings, "max_rank"),
    common_questions: bool = field_option(RetrievalSettings, "common_questions", "--common-questions"),
    task_runner: str | None = TASK_RUNNER_OPTION,
    dask_address: str | None = DASK_ADDRESS_OPTION,
    workers: int | None = WORKERS_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Run every golden question through search under each configuration; log one MLflow batch.

    Without --configs or --mode, three configurations run: fulltext, semantic and hybrid.
    Exit code 1 when an --assert bound fails, or a system under test answered no question.
    """
    from ragassay.config import RetrievalEvalConfig
    from ragassay.config_errors import parse_config

    try:
        settings = given_over(
            load_config_file(configs) if configs else {},
            added={"assertions": assertion},
            collections=collection,
            configurations=[{"label": m, "search_type": m} for m in mode],
            ks=ks,
            max_questions=max_questions,
            max_dialogues=max_dialogues,
            seed=seed,
            save_records=save_records,
            max_rank=max_rank,
            common_questions=common_questions or None,
        )
        settings = with_task_runner(settings, task_runner, dask_address, workers)
        if not settings.get("collections"):
            raise ConfigError("give at least one --collection (or 'collections' in --configs)")
        config = parse_config(RetrievalEvalConfig, **settings)
        config.check_stored()
        prefect_defaults()
        from flows.eval_retrieval import eval_retrieval_flow

        report = run_flow(eval_retrieval_flow, config)
    except RagassayError as error:
        fail(error)

    def render() -> None:
        render_means(
            f"batch {report.batch_id}: {report.questions} questions"
            + (", each configuration on those all answered" if config.common_questions else "")
            + f"; MRR to rank {config.depth}",
            report.means,
            headline_metrics(list(config.ks)),
        )
        render_systems(report.model_costs)
        render_comparisons(report.comparisons, [f"ndcg@{max(config.ks)}", "mrr"])
        render_followups(report.followup_gaps, [f"recall@{min(5, max(config.ks))}", "mrr"])
        for warning in report.warnings:
            out.print(styled(("warning", "yellow"), f" {warning.text()}"), highlight=False)
        render_assertions(report.assertions)
        render_mlflow_location(report)

    emit(as_json, report.model_dump(), render)
    exit_unless_logged(report)
    exit_on_failed_assertions(report.assertions)


def _mode_configurations(settings: dict, mode: list[str], groundedness: str | None) -> list[dict]:
    """The --mode configurations, each with --groundedness; --groundedness alone applies to the
    default configuration (as AnswerEvalSettings declares it) when the file names none."""
    built = [{"label": m, "search_type": m} for m in mode]
    if not built and groundedness is not None and "configurations" not in settings:
        declared = AnswerEvalSettings.model_fields["configurations"].get_default(call_default_factory=True)
        built = [c.model_dump(include={"label", "search_type"}) for c in declared]
    return [c | ({"groundedness": groundedness} if groundedness else {}) for c in built]


@eval_app.command("answers")
def eval_answers(
    collection: list[str] = typer.Option(
        [], "--collection", "-c", help="Collection whose golden set is answered; repeatable."
    ),
    configs: Path | None = typer.Option(
        None, "--configs", help="YAML/JSON: a list of answer configurations, or a mapping of these settings."
    ),
    mode: list[str] = typer.Option(
        [], "--mode", help=f"Add a configuration of this search type ({', '.join(SEARCH_TYPES)}); repeatable."
    ),
    groundedness: str | None = override_option(
        AnswerSettings, "groundedness", lead="Groundedness of the --mode configurations (or the default one): "
    ),
    unanswerable: Path | None = override_option(AnswerEvalSettings, "unanswerable"),
    max_questions: int | None = override_option(AnswerEvalSettings, "max_questions"),
    max_dialogues: int | None = override_option(AnswerEvalSettings, "max_dialogues"),
    max_unanswerable: int | None = override_option(AnswerEvalSettings, "max_unanswerable"),
    seed: int | None = override_option(AnswerEvalSettings, "seed"),
    no_pairwise: bool = typer.Option(False, "--no-pairwise", help="Skip the pairwise comparison of configurations."),
    judge_odds: bool = field_option(AnswerEvalSettings, "judge_odds", "--judge-odds"),
    no_traces: bool = typer.Option(
        False, "--no-traces", help="Log no MLflow trace per question (the tables and metrics are logged as ever)."
    ),
    estimate: bool = typer.Option(False, "--estimate", help="Print model calls, tokens and time, and run nothing."),
    assertion: list[str] = typer.Option(
        [],
        "--assert",
        help="Assertion on a configuration's mean, such as 'hybrid:faithfulness>=0.7' or 'hybrid:false_refusal_rate<=0.2'; repeatable.",
    ),
    judge_model: str | None = JUDGE_MODEL_OPTION,
    judge_backend: str | None = JUDGE_BACKEND_OPTION,
    judge_path: Path | None = JUDGE_PATH_OPTION,
    judge_url: str | None = JUDGE_URL_OPTION,
    judge_name: str | None = JUDGE_NAME_OPTION,
    judge_api_key_env: str | None = JUDGE_API_KEY_ENV_OPTION,
    save_records: Path | None = field_option(AnswerEvalSettings, "save_records", "--save-records"),
    metrics: list[str] | None = override_option(
        AnswerEvalSettings, "metrics", "--metrics", lead="One answer metric to score; repeatable. "
    ),
    task_runner: str | None = TASK_RUNNER_OPTION,
    dask_address: str | None = DASK_ADDRESS_OPTION,
    workers: int | None = WORKERS_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Answer golden (and unanswerable) questions under each configuration, judge the answers,
    compare configurations pairwise, and log one MLflow batch.

    Without --configs or --mode, one configuration runs: hybrid retrieval, strict groundedness.
    """
    from ragassay.config import AnswerEvalConfig
    from ragassay.config_errors import parse_config

    try:
        from_file = load_config_file(configs) if configs else {}
        settings = given_over(
            from_file,
            added={"assertions": assertion},
            collections=collection,
            configurations=_mode_configurations(from_file, mode, groundedness),
            unanswerable=unanswerable,
            max_questions=max_questions,
            max_dialogues=max_dialogues,
            max_unanswerable=max_unanswerable,
            seed=seed,
            save_records=save_records,
            metrics=metrics,
            pairwise=False if no_pairwise else None,
            judge_odds=True if judge_odds else None,
            traces=False if no_traces else None,
            judge=judge_override(judge_model, judge_backend, judge_path, judge_url, judge_name, judge_api_key_env),
        )
        settings = with_task_runner(settings, task_runner, dask_address, workers)
        if not settings.get("collections"):
            raise ConfigError("give at least one --collection (or 'collections' in --configs)")
        config = parse_config(AnswerEvalConfig, **settings)
        config.check_stored()
        if estimate:
            from ragassay.evaluation.estimate import estimate_answer_eval

            figures = estimate_answer_eval(config)
        else:
            prefect_defaults()
            from flows.eval_answers import eval_answers_flow

            report = run_flow(eval_answers_flow, config)
    except RagassayError as error:
        fail(error)
    if estimate:
        emit(as_json, figures.model_dump(), lambda: render_estimate(figures))
        raise typer.Exit(EXIT_OK)

    emit(as_json, report.model_dump(), lambda: _render_answers(report))
    exit_unless_logged(report)
    exit_on_failed_assertions(report.assertions)


def _render_answers(report) -> None:
    """An answer evaluation's tables: means, models, judge, costs, comparisons, follow-ups, warnings."""
    render_answer_metrics(
        f"batch {report.batch_id}: {report.questions} answerable + {report.unanswerable} unanswerable questions",
        report.metrics,
    )
    render_answer_models(report.answered_by, report.judge_model)
    render_judge_calibration(report.judge_calibration)
    render_answer_costs(report.metrics)
    render_comparisons(report.comparisons, REPORTED_ANSWER_METRICS)
    from ragassay.metrics.names import HEADLINE_ANSWER_METRICS

    render_followups(report.followup_gaps, (*HEADLINE_ANSWER_METRICS, "false_refusal_rate"))
    render_pairwise(report.pairwise)
    render_warnings(report.warnings)
    render_assertions(report.assertions)
    render_mlflow_location(report, f"{report.seconds:.0f}s. ")
