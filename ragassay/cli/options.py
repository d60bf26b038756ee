"""The options commands share, each declared once: made from a settings field where one exists
(field_option, override_option, model_field_option), and laid over a --configs or pipeline file's
settings (given_over) when given."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from pydantic import BaseModel

from ragassay.errors import ConfigError


def field_option(model: type[BaseModel], name: str, *declarations: str, required: bool = False, **options) -> Any:
    """A typer option whose default and help are the model field's, so a setting's default and
    meaning are declared once (in its config model) and the CLI shows them as declared."""
    field = model.model_fields[name]
    if field.description is None:
        raise TypeError(f"{model.__name__}.{name} has no description to show as --help")
    return typer.Option(... if required else field.get_default(), *declarations, help=field.description, **options)


def override_option(
    model: type[BaseModel], name: str, *declarations: str, lead: str = "", shows_default: bool = True, **options
) -> Any:
    """A typer option that sets the model field only when given (default None, so a value from a
    --configs file stands), its help the field's description (after `lead`, where the option's
    reach needs saying) and its declared default (unless shows_default is False: a command that
    needs the option given)."""
    field = model.model_fields[name]
    if field.description is None:
        raise TypeError(f"{model.__name__}.{name} has no description to show as --help")
    default = field.get_default(call_default_factory=True)
    shown = ",".join(map(str, default)) if isinstance(default, tuple) else default
    said = "" if default is None or not shows_default else f" Default {shown}."
    return typer.Option(None, *declarations, help=f"{lead}{field.description}{said}", **options)


JSON_OPTION = typer.Option(False, "--json", help="Print a machine-readable JSON result on stdout.")


COLLECTION_OPTION = typer.Option(..., "--collection", "-c", help="Collection name.")


# The chat model of a command (answers, generation) and the judge model, chosen the same way
# everywhere: by name (smollm2, qwen2.5-1.5b), a local GGUF file, or an OpenAI-compatible server.
MODEL_OPTION = typer.Option(
    None,
    "--model",
    help="Chat model: smollm2 (bundled: fast, weak), qwen2.5-1.5b (Qwen2.5-Coder-1.5B-Instruct, assembled at set-up) or a .gguf file. Default: the config's.",
)


def model_field_option(name: str, flag: str, lead: str = "") -> Any:
    """An option for one ChatModelConfig field (--model-url for `url`), its help the field's
    description after `lead`; it sets the field only when given (model_settings)."""
    from ragassay.llm.settings import ChatModelConfig

    said = ChatModelConfig.model_fields[name].description
    return typer.Option(None, flag, help=f"{lead}{said[0].lower()}{said[1:]}" if lead else said)


MODEL_BACKEND_OPTION = model_field_option("backend", "--model-backend")


MODEL_PATH_OPTION = model_field_option("path", "--model-path")


MODEL_URL_OPTION = model_field_option("url", "--model-url")


MODEL_NAME_OPTION = model_field_option("model", "--model-name")


MODEL_API_KEY_ENV_OPTION = model_field_option(
    "api_key_env", "--model-api-key-env", "Sent as a bearer token, never recorded (never put credentials in the URL): "
)


JUDGE_MODEL_OPTION = typer.Option(
    None,
    "--judge-model",
    help="Judge model: qwen2.5-1.5b (Qwen2.5-Coder-1.5B-Instruct, the default), smollm2 (fast smoke tests: its verdicts do not agree with people) or a .gguf file.",
)


JUDGE_BACKEND_OPTION = model_field_option("backend", "--judge-backend", "For the judge (default qwen2.5-1.5b): ")


JUDGE_PATH_OPTION = model_field_option("path", "--judge-path", "For the judge: ")


JUDGE_URL_OPTION = model_field_option("url", "--judge-url", "For the judge: ")


JUDGE_NAME_OPTION = model_field_option("model", "--judge-name", "For the judge: ")


JUDGE_API_KEY_ENV_OPTION = model_field_option(
    "api_key_env",
    "--judge-api-key-env",
    "For the judge, sent as a bearer token, never recorded (never put credentials in the URL): ",
)


TASK_RUNNER_OPTION = typer.Option(
    None,
    "--task-runner",
    help="Where the fanned-out tasks run (configurations, embedding groups, extraction parts): threads (default) or dask.",
)


DASK_ADDRESS_OPTION = typer.Option(
    None, "--dask-address", help="A running Dask scheduler (tcp://host:8786); implies --task-runner dask."
)


WORKERS_OPTION = typer.Option(
    None, "--workers", help="Threads, or the Dask LocalCluster's worker processes (default 1 and 2)."
)


def given_over(settings: dict, added: dict[str, list] | None = None, **options) -> dict:
    """One command's settings: a --configs (or pipeline) file's settings with each option that was
    given laid over them. An option not given (None, or an empty repeatable option) leaves the
    file's value, so the default stays the model's own; `added` lists (repeatable options such as
    --assert) add to the file's list."""
    given = {key: value for key, value in options.items() if value is not None and value != []}
    extended = {key: [*settings.get(key, []), *values] for key, values in (added or {}).items()}
    return settings | given | extended


def with_task_runner(settings: dict, kind: str | None, address: str | None, workers: int | None) -> dict:
    """settings with the task runner options laid over its `task_runner` mapping."""
    runner = dict(settings.get("task_runner") or {})
    if kind is not None:
        runner["kind"] = kind
    if address is not None:
        runner.update(kind="dask", address=address)
    if workers is not None:
        runner["workers"] = workers
    return {**settings, "task_runner": runner} if runner else settings


def model_settings(
    choice: str | None,
    backend: str | None,
    path,
    url: str | None,
    name: str | None,
    option: str = "--model",
    api_key_env: str | None = None,
) -> dict:
    """A ChatModelConfig's fields from the model options; {} when none was given (the config's
    default model). `choice` is the --model/--judge-model shorthand: a model name or a .gguf file."""
    from ragassay.llm.settings import NAMED_BACKENDS

    if choice is not None:
        if backend is not None:
            raise ConfigError(f"give {option} or a backend option, not both")
        if choice in NAMED_BACKENDS:
            backend = choice
        elif choice.endswith(".gguf") or Path(choice).expanduser().is_file():
            backend, path = "gguf", Path(choice).expanduser()
        else:
            raise ConfigError(
                f"{option} {choice!r} is neither a model name ({', '.join(NAMED_BACKENDS)}) nor a .gguf file"
            )
    if backend is None and url is not None:
        backend = "openai"
    if backend is None and path is not None:
        backend = "gguf"
    settings = {"backend": backend, "path": path, "url": url, "model": name, "api_key_env": api_key_env}
    return {key: value for key, value in settings.items() if value is not None}


def judge_override(
    choice: str | None, backend: str | None, path, url: str | None, name: str | None, api_key_env: str | None = None
) -> dict | None:
    """The judge model the --judge-* options choose, or None when none was given (keep the config's)."""
    return model_settings(choice, backend, path, url, name, option="--judge-model", api_key_env=api_key_env) or None
