"""The `ragassay` command. Batch work runs Prefect flows; look-ups call the same code directly.

Exit codes: 0 success, 1 partial failure (some inputs rejected), 2 usage or configuration error.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import typer

from ragassay.answer.settings import AnswerSettings
from ragassay.cli.cases import cases_app
from ragassay.cli.collections import collections_app
from ragassay.cli.common import EXIT_OK, EXIT_PARTIAL, emit, fail, out, prefect_defaults, run_flow, styled
from ragassay.cli.documents import documents_app
from ragassay.cli.eval import eval_app
from ragassay.cli.gate import gate
from ragassay.cli.golden import golden_app
from ragassay.cli.judge import judge_app
from ragassay.cli.models import models_app
from ragassay.cli.options import (
    COLLECTION_OPTION,
    DASK_ADDRESS_OPTION,
    JSON_OPTION,
    MODEL_API_KEY_ENV_OPTION,
    MODEL_BACKEND_OPTION,
    MODEL_NAME_OPTION,
    MODEL_OPTION,
    MODEL_PATH_OPTION,
    MODEL_URL_OPTION,
    TASK_RUNNER_OPTION,
    WORKERS_OPTION,
    field_option,
    model_settings,
    override_option,
    with_task_runner,
)
from ragassay.cli.run import run as run_pipeline
from ragassay.cli.runs import runs_app
from ragassay.config import ChunkingConfig, IndexSettings, IngestConfig, workspace_home
from ragassay.errors import ConfigError, RagassayError
from ragassay.llm.settings import ChatModelConfig
from ragassay.search.settings import SEARCH_RESULTS, SEARCH_TYPES, FusionSettings, SearchSettings

app = typer.Typer(
    help="Measure how well a retrieval-augmented generation setup works on your own documents.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(documents_app, name="documents")
app.add_typer(collections_app, name="collections")
app.add_typer(golden_app, name="golden")
app.add_typer(eval_app, name="eval")
app.add_typer(runs_app, name="runs")
app.add_typer(cases_app, name="cases")
app.add_typer(judge_app, name="judge")
app.add_typer(models_app, name="models")
app.command("run")(run_pipeline)
app.command("gate")(gate)


@app.command()
def ingest(
    paths: list[Path] = typer.Argument(
        ..., help="Files or folders (searched recursively); for --format beir, the dataset folder."
    ),
    collection: str = COLLECTION_OPTION,
    format: str = field_option(IngestConfig, "format", "--format"),
    chunk_size: int = field_option(ChunkingConfig, "chunk_size"),
    chunk_overlap: int = field_option(ChunkingConfig, "chunk_overlap"),
    doc_id: str | None = field_option(IngestConfig, "doc_id"),
    task_runner: str | None = TASK_RUNNER_OPTION,
    dask_address: str | None = DASK_ADDRESS_OPTION,
    workers: int | None = WORKERS_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Ingest documents (txt md csv json html docx pdf, or a BEIR dataset) into a collection.

    Parts of the files are extracted as tasks on the task runner (threads by default)."""
    from ragassay.config import IngestConfig
    from ragassay.config_errors import parse_config

    try:
        settings = dict(
            collection=collection,
            paths=tuple(paths),
            format=format,
            chunking=dict(chunk_size=chunk_size, chunk_overlap=chunk_overlap),
            doc_id=doc_id,
        )
        config = parse_config(IngestConfig, **with_task_runner(settings, task_runner, dask_address, workers))
        prefect_defaults()
        from flows.ingest import ingest_flow

        report = run_flow(ingest_flow, config)
    except RagassayError as error:
        fail(error)

    def render() -> None:
        counts = report.counts
        out.print(
            styled("collection ", (report.collection, "bold"), ": " + ", ".join(f"{v} {k}" for k, v in counts.items()))
        )
        if report.queries:
            out.print(f"BEIR: {report.queries} test queries and {report.qrels} judgements stored")
        for doc_id_truncated in report.truncated:
            out.print(styled(("truncated", "yellow"), f" {doc_id_truncated} (text capped)"))
        for rejection in report.rejected:
            out.print(
                styled(("rejected", "red"), f" {rejection.path}: {rejection.reason} ({rejection.detail})"),
                highlight=False,
            )
        if counts["ingested"] or counts["replaced"]:
            out.print(f"next: ragassay index --collection {report.collection}")

    emit(as_json, report.model_dump(), render)
    raise typer.Exit(EXIT_PARTIAL if report.rejected else EXIT_OK)


@app.command()
def index(
    collection: str = COLLECTION_OPTION,
    embedding_model: str = field_option(IndexSettings, "embedding_model"),
    batch_size: int = field_option(IndexSettings, "batch_size"),
    task_runner: str | None = TASK_RUNNER_OPTION,
    dask_address: str | None = DASK_ADDRESS_OPTION,
    workers: int | None = WORKERS_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Build the lexical (BM25) and dense (embedding) index of a collection.

    Groups of chunk texts are embedded as tasks on the task runner (threads by default)."""
    from ragassay.config import IndexConfig
    from ragassay.config_errors import parse_config

    try:
        settings = with_task_runner(
            {"collection": collection, "embedding_model": embedding_model, "batch_size": batch_size},
            task_runner,
            dask_address,
            workers,
        )
        config = parse_config(IndexConfig, **settings)
        config.check_stored()
        prefect_defaults()
        from flows.index import index_flow

        report = run_flow(index_flow, config)
    except RagassayError as error:
        fail(error)

    def render() -> None:
        out.print(
            styled(
                "indexed ",
                (report.collection, "bold"),
                f": {report.chunks} chunks, {report.embedded} embedded, "
                f"{report.reused_embeddings} from cache ({report.embedding_model_id}); "
                f"embedding {report.seconds_embedding:.2f}s, bm25 {report.seconds_bm25:.2f}s; index {report.index_digest}",
            )
        )

    emit(as_json, report.model_dump(), render)


def check_search_type(mode: str) -> None:
    """--mode names the option the user typed (the setting itself is `search_type`)."""
    if mode not in SEARCH_TYPES:
        raise ConfigError(f"--mode {mode!r} is not one of {', '.join(SEARCH_TYPES)}")


@app.command()
def search(
    query: str = typer.Argument(..., help="The query text."),
    collection: list[str] = typer.Option(..., "--collection", "-c", help="Collection to search; repeat for several."),
    mode: str = field_option(SearchSettings, "search_type", "--mode"),
    k: int = typer.Option(SEARCH_RESULTS, "--k", help="Documents to return."),
    depth: int = field_option(SearchSettings, "depth"),
    rrf_k: int = field_option(FusionSettings, "k", "--rrf-k"),
    content_type: list[str] = typer.Option(
        [], "--content-type", help="Keep only this type (pdf, .md or text/markdown); repeatable."
    ),
    path_glob: str | None = field_option(SearchSettings, "path_glob"),
    lexical_unit: str = field_option(SearchSettings, "lexical_unit"),
    rerank: str = field_option(SearchSettings, "rerank"),
    as_json: bool = JSON_OPTION,
) -> None:
    """Search one or more collections; results are documents with their best chunk."""
    from ragassay.config_errors import parse_config
    from ragassay.resources import Resources
    from ragassay.search.run import run_search
    from ragassay.search.settings import SearchSettings

    try:
        check_search_type(mode)
        config = parse_config(
            SearchSettings,
            search_type=mode,
            depth=depth,
            fusion=dict(k=rrf_k),
            content_types=tuple(content_type),
            path_glob=path_glob,
            lexical_unit=lexical_unit,
            rerank=rerank,
        )
        started = time.perf_counter()
        result = run_search(Resources(), workspace_home(), collection, query, config, k)
        elapsed = time.perf_counter() - started
        hits, usage, rerank_stats = result.hits, result.usage, result.rerank
    except RagassayError as error:
        fail(error)

    def render() -> None:
        out.print(
            styled(
                (config.search_type, "bold"), f" search for {query!r}: {len(hits)} results in {elapsed * 1000:.0f} ms"
            )
        )
        for hit in hits:
            document = hit.doc_id if len(collection) == 1 else f"{hit.collection}/{hit.doc_id}"
            page = f", page {hit.page}" if hit.page else ""
            out.print(
                styled(
                    f"{hit.rank:>3}. {hit.score:.4f}  ",
                    (document, "bold"),
                    f"  ({hit.chunk_id}, chars {hit.char_start}-{hit.char_end}{page})",
                ),
                highlight=False,
            )
            out.print(f"     {hit.snippet}", style="dim", highlight=False)
        if config.rerank == "llm":
            state = "fell back to the fused order" if rerank_stats.fallbacks else "reordered by the model's 0-10 scores"
            out.print(
                f"rerank: {state}; {usage.calls} model calls, {usage.prompt_tokens}+{usage.completion_tokens} tokens",
                style="dim",
            )
        elif config.rerank != "off":
            if rerank_stats.fallbacks:
                out.print(f"rerank: fell back to the fused order: {rerank_stats.failure}", style="yellow")
            else:
                out.print(f"rerank: reordered by {config.rerank.model}'s scores", style="dim")

    payload = {"query": query, "config": {**config.model_dump(), "k": k}, "results": [h.__dict__ for h in hits]}
    if config.rerank != "off":
        payload["rerank"] = {**rerank_stats.as_metrics(), **usage.as_metrics()}
    emit(as_json, payload, render)


def _typed_lines(prompt: str):
    """Lines a person types at a prompt (until end of input), or a piped input's lines."""
    if not sys.stdin.isatty():
        yield from sys.stdin
        return
    while True:
        try:
            yield input(prompt)
        except EOFError:
            return


def _answer_settings(
    mode, k, lexical_unit, groundedness, model_options: dict, seed, followup_query: str | None = None
) -> AnswerSettings:
    """The answer settings of `answer` and `chat` from their options."""
    from ragassay.config_errors import parse_config

    check_search_type(mode)
    return parse_config(
        AnswerSettings,
        search_type=mode,
        k=k,
        lexical_unit=lexical_unit,
        model=model_options,
        groundedness=groundedness,
        seed=seed,
        **({"followup_query": followup_query} if followup_query else {}),
    )


def _render_answer(result, payload: dict) -> None:
    """An answer as the terminal shows it: its text, a refusal's reason, its citations, its cost."""
    out.print(result.text, highlight=False)
    if result.outcome == "refused":
        out.print(f"(declined: {result.reason})", style="dim", highlight=False)
    for statement in result.statements:
        for citation in statement.citations:
            out.print(
                f"  [{citation.number}] {citation.doc_id} chars {citation.char_start}-{citation.char_end}",
                style="dim",
                highlight=False,
            )
    dropped = f", {result.dropped_citations} invalid citations dropped" if result.dropped_citations else ""
    usage = result.usage
    cached = f", {usage.cached_calls} from cache" if usage.cached_calls else ""
    out.print(
        f"{payload['model_id']} ({payload['prompt_version']}): {usage.calls} calls{cached}, "
        f"{usage.prompt_tokens}+{usage.completion_tokens} tokens, {usage.seconds:.1f}s{dropped}",
        style="dim",
        highlight=False,
    )


@app.command()
def answer(
    question: str = typer.Argument(..., help="The question."),
    collection: list[str] = typer.Option(..., "--collection", "-c", help="Collection to answer from; repeatable."),
    mode: str = field_option(AnswerSettings, "search_type", "--mode"),
    k: int = field_option(AnswerSettings, "k", "--k"),
    lexical_unit: str = field_option(AnswerSettings, "lexical_unit"),
    groundedness: str = field_option(AnswerSettings, "groundedness"),
    model: str | None = MODEL_OPTION,
    model_backend: str | None = MODEL_BACKEND_OPTION,
    model_path: Path | None = MODEL_PATH_OPTION,
    model_url: str | None = MODEL_URL_OPTION,
    model_name: str | None = MODEL_NAME_OPTION,
    model_api_key_env: str | None = MODEL_API_KEY_ENV_OPTION,
    context_size: int = field_option(ChatModelConfig, "context_size"),
    threads: int | None = field_option(ChatModelConfig, "threads"),
    gpu_layers: int = field_option(ChatModelConfig, "gpu_layers"),
    seed: int = field_option(AnswerSettings, "seed"),
    as_json: bool = JSON_OPTION,
) -> None:
    """Answer a question from the documents, citing them, or decline when they do not support one."""
    from ragassay.answer.answering import answer_payload, answer_question
    from ragassay.resources import Resources

    try:
        chosen = model_settings(model, model_backend, model_path, model_url, model_name, api_key_env=model_api_key_env)
        model_options = dict(chosen, context_size=context_size, threads=threads, gpu_layers=gpu_layers)
        config = _answer_settings(mode, k, lexical_unit, groundedness, model_options, seed)
        result = answer_question(Resources(), workspace_home(), collection, question, config)
        payload = answer_payload(result, config)
    except RagassayError as error:
        fail(error)
    emit(as_json, payload, lambda: _render_answer(result, payload))


@app.command()
def chat(
    collection: list[str] = typer.Option(..., "--collection", "-c", help="Collection to answer from; repeatable."),
    mode: str = field_option(AnswerSettings, "search_type", "--mode"),
    k: int = field_option(AnswerSettings, "k", "--k"),
    lexical_unit: str = field_option(AnswerSettings, "lexical_unit"),
    groundedness: str = field_option(AnswerSettings, "groundedness"),
    followup_query: str | None = override_option(AnswerSettings, "followup_query"),
    model: str | None = MODEL_OPTION,
    model_backend: str | None = MODEL_BACKEND_OPTION,
    model_path: Path | None = MODEL_PATH_OPTION,
    model_url: str | None = MODEL_URL_OPTION,
    model_name: str | None = MODEL_NAME_OPTION,
    model_api_key_env: str | None = MODEL_API_KEY_ENV_OPTION,
    context_size: int = field_option(ChatModelConfig, "context_size"),
    threads: int | None = field_option(ChatModelConfig, "threads"),
    gpu_layers: int = field_option(ChatModelConfig, "gpu_layers"),
    seed: int = field_option(AnswerSettings, "seed"),
    as_json: bool = JSON_OPTION,
) -> None:
    """Talk with the documents: each question (a line) answered as `ragassay answer` answers it,
    cited or declined from its own sources, a follow-up retrieved and read with the conversation so
    far. `/clear` starts a new conversation; `/quit` or end of input ends. --json: each turn's
    answer as one JSON line."""
    from ragassay.answer.answering import answer_payload, answer_question
    from ragassay.redaction import redact
    from ragassay.resources import Resources
    from ragassay.search.followups import Exchange

    try:
        chosen = model_settings(model, model_backend, model_path, model_url, model_name, api_key_env=model_api_key_env)
        model_options = dict(chosen, context_size=context_size, threads=threads, gpu_layers=gpu_layers)
        config = _answer_settings(mode, k, lexical_unit, groundedness, model_options, seed, followup_query)
    except RagassayError as error:
        fail(error)
    resources, home = Resources(), workspace_home()
    conversation: list[Exchange] = []
    if not as_json:
        out.print("Ask a question; /clear starts a new conversation, /quit ends.", style="dim")
    for line in _typed_lines("you> "):
        question = line.strip()
        if question in ("/quit", "/exit"):
            break
        if question == "/clear":
            conversation.clear()
            if not as_json:
                out.print("(a new conversation)", style="dim")
            continue
        if not question:
            continue
        try:
            result = answer_question(resources, home, collection, question, config, tuple(conversation))
            payload = answer_payload(result, config)
        except RagassayError as error:
            fail(error)
        payload["turn"] = len(conversation) + 1
        if as_json:  # one JSON object a line (JSON Lines), a turn at a time
            sys.stdout.write(redact(json.dumps(payload, default=str)) + "\n")
            sys.stdout.flush()
        else:
            if result.search_query:
                out.print(f"(searched: {result.search_query})", style="dim", highlight=False)
            _render_answer(result, payload)
        conversation.append(Exchange(question, result.prose))


def main() -> None:
    """Run the command. An unexpected error is one line and exit code 3; `--debug` (anywhere on the
    command line) also prints its traceback and shows Prefect's log lines on a terminal."""
    import os
    import sys

    from ragassay.cli.common import widen_when_piped

    debug = "--debug" in sys.argv[1:]
    if debug:
        sys.argv.remove("--debug")
        os.environ["PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL"] = "INFO"
        os.environ["RAGASSAY_DEBUG"] = "1"
    widen_when_piped()
    from ragassay.cli import interrupts

    interrupts.install()
    interrupts.on_interrupt(_end_unfinished_runs)
    # The process ends through interrupts.finish, which skips the interpreter's teardown.
    try:
        _run_command(debug)
    except SystemExit as done:
        interrupts.finish(done.code)
    else:
        interrupts.finish(0)


def _run_command(debug: bool) -> None:
    """The command (typer ends it with SystemExit), its expected errors one line each."""
    import sys
    import traceback

    from ragassay.cli import interrupts
    from ragassay.cli.common import EXIT_CRASH, EXIT_USAGE, err

    try:
        app()
    except Exception as error:
        if interrupts.exit_code() is not None:
            interrupts.wait_for_cleanup()
            # What the interrupt left behind as it unwound (a closed connection, a failed task):
            # the interrupt is the news, not these.
            sys.exit(interrupts.exit_code())
        if debug:
            traceback.print_exc()

        from ragassay.errors import environment_problem
        from ragassay.redaction import redact

        problem = environment_problem(error)
        if problem is not None:
            # The machine is in the way (read-only, full, a permission): what to fix, exit 2.
            err.print(styled(("error:", "red"), " " + redact(problem)), highlight=False)
            sys.exit(EXIT_USAGE)

        err.print(
            styled(("unexpected error", "red"), f" {type(error).__name__}: " + redact(str(error))), highlight=False
        )
        err.print("this is a bug in ragassay or its environment; rerun with --debug for the traceback", style="dim")
        sys.exit(EXIT_CRASH)
    except BaseException:
        # KeyboardInterrupt, or Prefect's TerminationSignal for a SIGTERM during a flow.
        if interrupts.exit_code() is None:
            raise
        interrupts.wait_for_cleanup()
        sys.exit(interrupts.exit_code())


def _end_unfinished_runs(signal_name: str) -> None:
    """The MLflow runs an interrupted command leaves unfinished end KILLED (no runs when the command
    never imported tracking, and importing it now would only cost time)."""
    import sys

    tracking = sys.modules.get("ragassay.tracking")
    if tracking is not None:
        tracking.end_unfinished_runs(f"interrupted by {signal_name}")
