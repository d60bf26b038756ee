"""`ragassay golden`: add, import, list and delete golden-set entries of a collection."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from ragassay.cli.common import EXIT_OK, EXIT_PARTIAL, emit, fail, out, run_flow, styled
from ragassay.cli.options import (
    COLLECTION_OPTION,
    JSON_OPTION,
    JUDGE_API_KEY_ENV_OPTION,
    JUDGE_BACKEND_OPTION,
    JUDGE_MODEL_OPTION,
    JUDGE_NAME_OPTION,
    JUDGE_PATH_OPTION,
    JUDGE_URL_OPTION,
    MODEL_API_KEY_ENV_OPTION,
    MODEL_BACKEND_OPTION,
    MODEL_NAME_OPTION,
    MODEL_OPTION,
    MODEL_PATH_OPTION,
    MODEL_URL_OPTION,
    field_option,
    judge_override,
    model_settings,
    override_option,
)
from ragassay.config import GenerateSettings, workspace_home
from ragassay.errors import ConfigError, RagassayError

golden_app = typer.Typer(help="Golden sets: questions with the documents that answer them.", no_args_is_help=True)


def _report_change(change, as_json: bool) -> None:
    def render() -> None:
        dialogues = (
            f"; dialogues: {len(change.dialogues_added)} added, {change.dialogues} in all"
            if change.dialogues or change.dialogues_added
            else ""
        )
        out.print(
            styled(
                "golden set of ",
                (change.collection, "bold"),
                f": {len(change.added)} added, {len(change.problems)} refused, {change.size} entries in all{dialogues}",
            )
        )
        for problem in change.problems:
            out.print(
                styled(("refused", "red"), f" {problem['source']}: {problem['reason']} ({problem['detail']})"),
                highlight=False,
            )
        if not change.ids_checked:
            out.print(
                styled(
                    ("note", "yellow"),
                    f" {change.collection} holds only a golden set: expected document ids were not "
                    "checked (ingest the corpus for that check, and for built-in search and generation)",
                ),
                highlight=False,
            )

    emit(as_json, change.model_dump(), render)
    raise typer.Exit(EXIT_PARTIAL if change.problems else EXIT_OK)


@golden_app.command("add")
def golden_add(
    collection: str = COLLECTION_OPTION,
    file: Path | None = typer.Option(
        None,
        "--file",
        "-f",
        help="JSONL or CSV of entries (question, expected_document_ids, reference_answer, id); a JSONL row with "
        "`turns` is a dialogue (each turn: question, expected_document_ids, reference_answer, answerable).",
    ),
    question: str | None = typer.Option(None, help="The question of one entry."),
    expected_doc: list[str] = typer.Option([], "--expected-doc", help="A document id that answers it; repeatable."),
    reference_answer: str | None = typer.Option(None, help="The expected answer."),
    entry_id: str | None = typer.Option(None, "--id", help="Entry id (default: derived from the question)."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Add entries from flags or from a file; bad rows are refused and listed, good ones stored."""
    from ragassay.golden.entries import GoldenCandidate
    from ragassay.golden.store import add_candidates, add_from_file

    try:
        if (file is None) == (question is None):
            raise ConfigError("give either --file or --question (with --expected-doc)")
        if file is not None:
            change = add_from_file(workspace_home(), collection, file)
        else:
            candidate = GoldenCandidate(
                question, tuple(expected_doc), "--question", reference_answer=reference_answer, entry_id=entry_id
            )
            change = add_candidates(workspace_home(), collection, [candidate], [])
    except RagassayError as error:
        fail(error)
    _report_change(change, as_json)


@golden_app.command("import")
def golden_import(
    collection: str = COLLECTION_OPTION,
    format: str = typer.Option(
        "beir", "--format", help="beir: the test queries and graded qrels of an ingested BEIR dataset."
    ),
    as_json: bool = JSON_OPTION,
) -> None:
    """Import golden entries from data that came with the collection."""
    from ragassay.golden.store import import_beir

    try:
        if format != "beir":
            raise ConfigError(f"--format {format!r} is not one of: beir")
        change = import_beir(workspace_home(), collection)
    except RagassayError as error:
        fail(error)
    _report_change(change, as_json)


@golden_app.command("generate")
def golden_generate(
    collection: str = COLLECTION_OPTION,
    count: int | None = override_option(GenerateSettings, "count", shows_default=False),
    dialogues: int | None = typer.Option(
        None, "--dialogues", help="Dialogues wanted instead of questions: a first question and follow-ups that need it."
    ),
    turns: int = field_option(GenerateSettings, "turns"),
    seed: int | None = field_option(GenerateSettings, "seed"),
    model: str | None = MODEL_OPTION,
    model_backend: str | None = MODEL_BACKEND_OPTION,
    model_path: Path | None = MODEL_PATH_OPTION,
    model_url: str | None = MODEL_URL_OPTION,
    model_name: str | None = MODEL_NAME_OPTION,
    model_api_key_env: str | None = MODEL_API_KEY_ENV_OPTION,
    judge_model: str | None = JUDGE_MODEL_OPTION,
    judge_backend: str | None = JUDGE_BACKEND_OPTION,
    judge_path: Path | None = JUDGE_PATH_OPTION,
    judge_url: str | None = JUDGE_URL_OPTION,
    judge_name: str | None = JUDGE_NAME_OPTION,
    judge_api_key_env: str | None = JUDGE_API_KEY_ENV_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Write golden questions (or dialogues) from the collection's own pages, through a quality
    gate: rules, then the judge's verdict that the page supports the answer."""
    from ragassay.cli.common import prefect_defaults
    from ragassay.config import GenerateConfig
    from ragassay.config_errors import parse_config

    try:
        if (count is None) == (dialogues is None):
            raise ConfigError("give either --count (questions) or --dialogues (dialogues)")
        judge = judge_override(judge_model, judge_backend, judge_path, judge_url, judge_name, judge_api_key_env)
        writer = model_settings(model, model_backend, model_path, model_url, model_name, api_key_env=model_api_key_env)
        # Options not given keep the config's defaults (Qwen2.5 1.5B writes, and judges).
        config = parse_config(
            GenerateConfig,
            collection=collection,
            count=count if count is not None else dialogues,
            dialogues=dialogues is not None,
            turns=turns,
            seed=seed,
            **({"model": writer} if writer else {}),
            **({"judge": judge} if judge else {}),
        )
        config.check_stored()
        prefect_defaults()
        from flows.generate_golden import generate_golden_flow

        report = run_flow(generate_golden_flow, config)
    except RagassayError as error:
        fail(error)

    def render() -> None:
        out.print(
            styled(
                "generated for ",
                (report.collection, "bold"),
                f" with seed {report.seed} ({report.model_id}, {report.prompt_version}; "
                f"answers checked by {report.judge_model_id}): "
                f"requested {report.requested}, attempted {report.attempted}, accepted {len(report.accepted)} "
                f"(acceptance rate {report.acceptance_rate:.0%})",
            ),
            highlight=False,
        )
        reasons = ", ".join(f"{reason} {n}" for reason, n in report.discarded.items() if n)
        out.print(
            f"discarded: {reasons or 'none'}; pages skipped as already used: {report.skipped_pages}"
            + (
                f"; passed over as another generation's: {report.claimed_elsewhere}" if report.claimed_elsewhere else ""
            ),
            highlight=False,
        )
        if len(report.accepted) < report.requested:
            what = "dialogues" if dialogues is not None else "questions"
            out.print(
                styled(
                    (f"only {len(report.accepted)} of {report.requested} {what} passed the gate", "yellow"),
                    ": a fact about this corpus and model, see the discarded candidates in MLflow run "
                    + str(report.run_id),
                )
            )
        out.print(f"model time {report.seconds_in_model:.1f}s of {report.seconds:.1f}s", style="dim")

    emit(as_json, report.model_dump(), render)


@golden_app.command("list")
def golden_list(collection: str = COLLECTION_OPTION, as_json: bool = JSON_OPTION) -> None:
    """List the golden set of a collection: its entries, then its dialogues turn by turn (`g07#2`)."""
    from ragassay.golden.dialogues import with_turn_ids
    from ragassay.golden.store import load_dialogues, load_golden_with_staleness
    from ragassay.store.workspace import collection_paths

    try:
        paths = collection_paths(workspace_home(), collection)
        golden, dialogues = load_golden_with_staleness(paths), load_dialogues(paths)
    except RagassayError as error:
        fail(error)
    turns = with_turn_ids(dialogues)

    def expected_of(row: dict) -> str:
        return ", ".join(
            doc if grade == 1 else f"{doc} ({grade})"
            for doc, grade in zip(row["expected_document_ids"], row["relevance"])
        )

    def render() -> None:
        table = Table(title=f"{golden.height} golden entries in {collection}")
        for column in ("entry_id", "question", "expected documents", "origin", "stale"):
            table.add_column(column, overflow="fold")
        for row in golden.iter_rows(named=True):
            table.add_row(
                row["entry_id"], row["question"], expected_of(row), row["origin"], "stale" if row["stale"] else ""
            )
        out.print(table)
        if turns.height:
            count = turns["dialogue_id"].n_unique()
            table = Table(title=f"{count} golden dialogues in {collection} ({turns.height} turns)")
            for column in ("turn", "question", "expected documents", "origin"):
                table.add_column(column, overflow="fold")
            for row in turns.iter_rows(named=True):
                expected = expected_of(row) if row["answerable"] else "unanswerable"
                table.add_row(row["entry_id"], row["question"], expected, row["origin"])
            out.print(table)

    emit(as_json, golden.to_dicts() + turns.to_dicts(), render)


@golden_app.command("delete")
def golden_delete(
    entry_ids: list[str] = typer.Argument(..., help="Entry or dialogue ids to delete (a dialogue with all its turns)."),
    collection: str = COLLECTION_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Delete golden entries and dialogues (nothing is deleted when any id is unknown)."""
    from ragassay.golden.store import delete_entries

    try:
        deleted = delete_entries(workspace_home(), collection, entry_ids)
    except RagassayError as error:
        fail(error)
    emit(
        as_json,
        {"collection": collection, "deleted": deleted},
        lambda: out.print(f"deleted {len(deleted)} golden entries or dialogues"),
    )
